"""Variant offsets: how far from its original a variant's difficulty is pushed, and by what means.

For an original at level x the offset is D ~ N(mu_x, 1), rounded and clipped to [-8, 8], with
mu = +6, +5, +4, +3, +2, +1, -1, -3, -5 for x = 1..9: easy problems get harder variants, hard
problems get hints, and the nominal target x + mu is about level 7 for x <= 6. What D means:

* D <= -1: a hint variant, the question plus the first k solution steps (D <= -7: all; -6/-5: 3;
  -4/-3: 2; -2/-1: 1);
* D = 0: a rephrasing of the question;
* D = 1..6: 1, 1, 2, 2, 3, 4 image perturbations of growing strength;
* D = 7, 8: the question text drawn into the image.

The variant's level is x + D clamped to [1, 9] (it enters the advantage's difficulty weighting).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vade.diva.levels import LEVELS

__all__ = ["MAX_OFFSET", "OFFSET_MEANS", "VariantPlan", "draw_offsets", "plan_variant"]

MAX_OFFSET = 8
OFFSET_MEANS = np.array([6, 5, 4, 3, 2, 1, -1, -3, -5], dtype=float)  # index = level - 1
_PERTURB_OPS = {1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4}
ALL_STEPS = -1  # hint_steps value meaning "every solution step"


@dataclass(frozen=True)
class VariantPlan:
    """What to build for one variant: the kind, its strength, and the level it is scored at."""

    offset: int
    kind: str  # "hint" | "rephrase" | "perturb" | "text_in_image"
    hint_steps: int = 0  # solution steps shown (ALL_STEPS: all); hint variants only
    perturb_ops: int = 0  # number of image perturbations; perturb variants only
    level: int = 0


def draw_offsets(levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One offset per original, D = clip(round(N(mu_level, 1)), -8, 8) (int8)."""
    lv = np.asarray(levels)
    if lv.size and ((lv < 1) | (lv > LEVELS)).any():
        raise ValueError(f"levels must lie in [1, {LEVELS}], got {lv.min()}..{lv.max()}")
    d = np.rint(rng.normal(OFFSET_MEANS[lv.astype(int) - 1], 1.0))
    return np.clip(d, -MAX_OFFSET, MAX_OFFSET).astype(np.int8)


def plan_variant(level: int, offset: int) -> VariantPlan:
    """The variant an offset asks for (the table in the module docstring)."""
    x, d = int(level), int(offset)
    if not 1 <= x <= LEVELS:
        raise ValueError(f"level must lie in [1, {LEVELS}], got {level!r}")
    if not -MAX_OFFSET <= d <= MAX_OFFSET:
        raise ValueError(f"offset must lie in [-{MAX_OFFSET}, {MAX_OFFSET}], got {offset!r}")
    target = min(max(x + d, 1), LEVELS)
    if d <= -7:
        return VariantPlan(d, "hint", hint_steps=ALL_STEPS, level=target)
    if d <= -1:
        return VariantPlan(d, "hint", hint_steps=(-d + 1) // 2, level=target)
    if d == 0:
        return VariantPlan(d, "rephrase", level=target)
    if d <= 6:
        return VariantPlan(d, "perturb", perturb_ops=_PERTURB_OPS[d], level=target)
    return VariantPlan(d, "text_in_image", level=target)
