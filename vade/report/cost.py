"""One cost axis for every method: each rollout it consumed, not only those its training steps
trained on.

A run's history counts the rollouts its trainer generated: DAPO's and GRESO's filtered groups
and, since 2026-11-28, MMR1's re-scoring (the local trainer generates the published re-scoring,
8 fresh rollouts of every prompt every 4 steps, and counts them in the step's rollouts). One cost
is not in it: the initial difficulty rollouts (G per training sample, Algorithm 1 lines 1-2),
spent before step 1 by every method that starts from them (``vade.methods``:
``needs_difficulty``: VADE and its ablations, DIVA, MMR1 (its first scoring pass), ``mmr1-stale``,
``mopps-prior``, ``sec-passrate``); MoPPS, GRESO, SEC, DAPO and vanilla read none.

Until 2026-11-28 the trainers did not generate MMR1's re-scoring and this module charged it
anyway: the fair race compared VADE with a method charged for work it never did. A method is
charged for what it does; the estimate from stale training groups is ``mmr1-stale``, charged
nothing beyond its initial rollouts.

``report.cost_axis: all`` (the default) puts the initial rollouts on every rollout axis of the
report; ``generated`` shows the histories' own counts.
"""

from __future__ import annotations

import numpy as np

from vade import methods

__all__ = ["COST_AXES", "overhead"]

COST_AXES = ("all", "generated")


def overhead(method: str, step: np.ndarray, *, initial: int | None,
             n_samples: int | None) -> np.ndarray:
    """Rollouts ``method`` consumed through each of ``step`` that its history does not count
    (step 0: before training). ``initial``: the initial difficulty rollouts of its model
    (None: unknown, counted as 0 by the caller's note); ``n_samples``: its training rows (kept
    for callers; no method's overhead depends on it since MMR1's re-scoring is generated)."""
    s = np.asarray(step, dtype=np.float64)
    out = np.zeros(s.shape)
    if method == "base":
        return out
    if methods.get(method).needs_difficulty and initial:
        out += float(initial)
    return out
