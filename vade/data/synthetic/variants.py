"""DIVA-GRPO variants of a synthetic item: same scene, same answer, a different difficulty.

``vade.diva.plan_variant`` says what a variant should be (hint, rephrasing, image perturbation,
question drawn into the image); this module builds it for the synthetic tasks, where the answer
is known exactly, so every variant keeps the original's answer (the global group assumes one).

* Hint steps are exact and follow from the answer and the task's answer space: for a choice,
  the wrong options are ruled out one by one and the last step names the answer; for a count,
  the range narrows to the number. Options are ruled out in an order drawn from the variant's
  stream, so hints do not always name the same letters first.
* Rephrasings are templates per task; a variant never reuses the original's wording.
* Perturbations act on the original's pixels (gaussian noise, coloured salt-and-pepper, blur,
  lower resolution, and real rotations for the dot count, whose answer a rotation cannot
  change; bars and the balance are not rotated, since a tilt is their answer cue). Strength
  grows with the offset D (1..6).
* D = 7, 8 draws the question into the image and asks the model to read it from there.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from vade.data.items import Item
from vade.data.synthetic.render import LETTERS, encode_png
from vade.diva.offsets import ALL_STEPS, VariantPlan

__all__ = ["REPHRASINGS", "hint_steps", "make_variant"]

REPHRASINGS = {
    "synthetic/count": (
        "Count the dots in the image. How many are there?",
        "What is the number of dots shown?",
        "How many dots can you see?",
    ),
    "synthetic/chart": (
        "Bars are labelled A, B, C, D from left to right. Which one is the highest?",
        "Of the four bars A-D (left to right), which is tallest?",
        "Look at the chart: A, B, C, D go left to right. Which has the largest value?",
    ),
    "synthetic/balance": (
        "Which pan of the balance holds the heavier load?\nA. left\nB. right",
        "Look at the balance. Which side weighs more?\nA. left\nB. right",
        "The balance is tilted. Which side is heavier?\nA. left\nB. right",
    ),
}
READ_FROM_IMAGE = "Answer the question written in the image."


def hint_steps(item: Item, rng: np.random.Generator) -> list[str]:
    """Exact solution steps for ``item``; the last one states the answer."""
    if item.answer_type == "number":
        k = int(item.answer)
        return [f"There are at least {max(k - 1, 0)} dots.",
                f"There are at most {k + 1} dots.",
                f"There are not {k + 1} dots.",
                f"So there are exactly {k} dots."]
    options = LETTERS[:2] if item.task == "synthetic/balance" else LETTERS
    if item.answer not in options:
        raise ValueError(f"row {item.row_id}: answer {item.answer!r} is not one of {options}")
    wrong = [o for o in options if o != item.answer]
    rng.shuffle(wrong)
    return [f"{o} is not the answer." for o in wrong] + [f"So the answer is {item.answer}."]


def _pixels(item: Item) -> np.ndarray:
    from PIL import Image  # lazy: pillow, the cpu extra

    with Image.open(io.BytesIO(item.images[0])) as img:
        return np.asarray(img.convert("RGB"), dtype=np.float64)


def _perturb(item: Item, pixels: np.ndarray, ops: int, strength: float,
             rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageFilter  # lazy: pillow, the cpu extra

    kinds = ["noise", "salt_pepper", "blur", "low_res"]
    if item.task == "synthetic/count":
        kinds.append("rotate")
    chosen = rng.choice(kinds, size=min(ops, len(kinds)), replace=False)
    arr = pixels
    for op in sorted(chosen):  # a fixed order: the same plan gives the same image
        if op == "noise":
            arr = arr + rng.normal(0.0, 40.0 * strength, size=arr.shape)
        elif op == "salt_pepper":
            hit = rng.random(arr.shape[:2]) < 0.08 * strength
            arr = np.where(hit[..., None], rng.integers(0, 256, size=arr.shape), arr)
        else:
            img = Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), mode="RGB")
            size = img.size
            if op == "blur":
                img = img.filter(ImageFilter.GaussianBlur(radius=0.4 + 1.2 * strength))
            elif op == "low_res":
                small = max(4, round(size[0] / (1.0 + 2.0 * strength)))
                img = img.resize((small, small), Image.BILINEAR).resize(size, Image.NEAREST)
            else:  # rotate: a real angle, white corners
                angle = float(rng.uniform(15.0, 60.0) * strength) * (1 if rng.integers(2) else -1)
                img = img.rotate(angle, resample=Image.BILINEAR, fillcolor=(255, 255, 255))
            arr = np.asarray(img, dtype=np.float64)
    return arr


def _draw_question(pixels: np.ndarray, question: str) -> np.ndarray:
    from PIL import Image, ImageDraw  # lazy: pillow, the cpu extra

    h, w = pixels.shape[:2]
    width = max(4, w // 6)  # PIL's default bitmap font is about 6 px per character
    lines = [part for line in question.splitlines() for part in textwrap.wrap(line, width)]
    band = 11 * len(lines) + 2
    canvas = Image.new("RGB", (w, h + band), (255, 255, 255))
    canvas.paste(Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), mode="RGB"),
                 (0, band))
    draw = ImageDraw.Draw(canvas)
    for i, line in enumerate(lines):
        draw.text((1, 1 + 11 * i), line, fill=(0, 0, 0))
    return np.asarray(canvas.resize((w, h), Image.BILINEAR), dtype=np.float64)


def make_variant(item: Item, plan: VariantPlan, rng: np.random.Generator, *,
                 steps: Sequence[str] | None = None, rephrasing: str | None = None) -> Item:
    """The variant ``plan`` asks for; row id ``<original>~d<offset>``, answer unchanged.

    ``steps`` / ``rephrasing``: solution steps and a rephrasing written offline (``vade
    build-variants``, for items the renderer did not make); without them the synthetic task's
    exact hints and template rephrasings are used."""
    question, pixels = item.question, None
    if plan.kind == "hint":
        steps = list(steps) if steps is not None else hint_steps(item, rng)
        shown = steps if plan.hint_steps == ALL_STEPS else steps[:plan.hint_steps]
        question = f"{item.question}\nHint: " + " ".join(shown)
    elif plan.kind == "rephrase" and rephrasing is not None:
        question = rephrasing
    elif plan.kind == "rephrase":
        choices = [q for q in REPHRASINGS[item.task] if q != item.question]
        question = choices[int(rng.integers(len(choices)))]
    elif plan.kind == "perturb":
        pixels = _perturb(item, _pixels(item), plan.perturb_ops, plan.offset / 6.0, rng)
    elif plan.kind == "text_in_image":
        pixels = _draw_question(_pixels(item), item.question)
        question = READ_FROM_IMAGE
    else:
        raise ValueError(f"unknown variant kind {plan.kind!r}")
    images = item.images
    if pixels is not None:
        images = (encode_png(np.clip(np.rint(pixels), 0, 255).astype(np.uint8)),)
    sign = "m" if plan.offset < 0 else "p"
    return replace(item, row_id=f"{item.row_id}~d{sign}{abs(plan.offset)}", question=question,
                   images=images)
