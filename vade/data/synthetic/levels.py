"""Integer difficulty levels of synthetic items, from how each item was built: SEC's arms.

Published SEC bandits over a dataset's own integer levels (MATH's 1-5, assigned per problem);
its priority module refuses floats. The synthetic generator has no such labels, only the
continuous cue strength ``d`` (``render``), whose 5 equal-width bins barely predict the base
model's pass rate in the tiny study (chart 0.30-0.37 and math 0.31-0.44 in every bin). A level
here is a discrete property of the item's construction:

* ``synthetic/count``: the number of dots to count, 1..max_count (more objects, a longer count,
  as MATH's higher levels take more steps);
* ``synthetic/chart`` and ``synthetic/balance``: built with one knob only (the gap between the two
  tallest bars, the beam's tilt, both linear in ``d``), so their level is the knob's step,
  1 + floor(5 d) (d = 1 in level 5).

Other rows (the paper's sources) keep their ``extra_info.difficulty`` as it is. Whether a level
predicts how hard an item is for the model is a measurement, not an assumption:
``vade.report.levels`` gives the rank correlation with the base model's pass rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["N_LEVELS", "construction_level", "sec_labels"]

N_LEVELS = 5


def construction_level(task: str, ground_truth: str, difficulty: Any) -> int | None:
    """The item's integer level (None: not a synthetic task, or no difficulty recorded)."""
    if task == "synthetic/count":
        return int(str(ground_truth).strip())
    if task in ("synthetic/chart", "synthetic/balance"):
        if difficulty is None or not math.isfinite(float(difficulty)):
            return None
        return 1 + min(N_LEVELS - 1, math.floor(N_LEVELS * float(difficulty)))
    return None


def sec_labels(examples: Sequence[Any]) -> list[Any]:
    """SEC's arm label per training row: the construction level of a synthetic item, else the
    row's ``extra_info.difficulty`` (integer levels of a real dataset)."""
    out: list[Any] = []
    for e in examples:
        given = e.extra_info.get("difficulty")
        level = construction_level(e.task, e.ground_truth, given)
        out.append(given if level is None else level)
    return out
