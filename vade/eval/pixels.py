"""Image pixel limits applied by our task hooks, so that every engine sees the same pixels.

lmms-eval's transformers model resizes images to ``min_pixels``/``max_pixels``; its vLLM model
passes them on unresized (its chat ``encode_image`` does not resize), so a checkpoint would be
evaluated at other limits than it was trained on. ``vade evaluate`` therefore sets the limits
of the evaluation (``runner.pixels_for``: the config, else the checkpoint's processor, else
Qwen2.5-VL's) in the environment (``PIXEL_ENV``), and every ``doc_to_visual`` of ours returns
images already inside them, for base models and checkpoints alike. The resize keeps the aspect
ratio and rounds both sides to multiples of 28 (Qwen2.5-VL's patch 14 x merge 2), as Qwen's own
``smart_resize`` does, so the model's processor leaves the image as it is.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

__all__ = ["FACTOR", "PIXEL_ENV", "fitted_size", "limited", "limits_env"]

FACTOR = 28
PIXEL_ENV = ("VADE_EVAL_MIN_PIXELS", "VADE_EVAL_MAX_PIXELS")


def fitted_size(width: int, height: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """(width, height) rounded to multiples of ``FACTOR`` with an area in [min, max] pixels."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image of size {width}x{height} has no pixels")
    w = max(FACTOR, round(width / FACTOR) * FACTOR)
    h = max(FACTOR, round(height / FACTOR) * FACTOR)
    if w * h > max_pixels:
        scale = math.sqrt(width * height / max_pixels)
        w = max(FACTOR, math.floor(width / scale / FACTOR) * FACTOR)
        h = max(FACTOR, math.floor(height / scale / FACTOR) * FACTOR)
    elif w * h < min_pixels:
        scale = math.sqrt(min_pixels / (width * height))
        w = math.ceil(width * scale / FACTOR) * FACTOR
        h = math.ceil(height * scale / FACTOR) * FACTOR
    return w, h


def limits_env(pixels: Mapping[str, int]) -> dict[str, str]:
    """The environment that carries ``{"min_pixels", "max_pixels"}`` to the task hooks."""
    return {PIXEL_ENV[0]: str(int(pixels["min_pixels"])),
            PIXEL_ENV[1]: str(int(pixels["max_pixels"]))}


def limited(images: list, environ: Mapping[str, str] | None = None) -> list:
    """``images`` resized into the limits in the environment (unchanged when none are set)."""
    env = os.environ if environ is None else environ
    if not all(k in env for k in PIXEL_ENV):
        return images
    lo, hi = (int(env[k]) for k in PIXEL_ENV)
    out = []
    for image in images:
        size = fitted_size(*image.size, lo, hi)
        out.append(image if size == tuple(image.size) else image.resize(size, resample=3))
    return out
