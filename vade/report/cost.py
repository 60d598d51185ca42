"""One cost axis for every method: each rollout it consumed or needed, not only those its
training run generated.

A run's history counts the rollouts its trainer generated (DAPO's and GRESO's filtered groups
included). Two costs are not in it:

* the initial difficulty rollouts (G per training sample, Algorithm 1 lines 1-2), spent before
  step 1 by every method that starts from them (``vade.methods``: ``needs_difficulty``: VADE and
  its ablations, DIVA, MMR1, ``mopps-prior``, ``sec-passrate``); MoPPS, GRESO, SEC, DAPO and
  vanilla read none;
* MMR1's re-scoring: the published method re-scores the whole pool with 8 rollouts per prompt
  every 4 steps (LengSicong/MMR1 ``examples/mmr1.yaml:24, 26``); the trainers score from the
  latest training group instead and generate none, so the report charges what the published
  method needs: N x 8 before steps 5, 9, 13, ... (the initial rollouts are its first pass).

``report.cost_axis: all`` (the default) puts both on every rollout axis of the report;
``generated`` shows the histories' own counts.
"""

from __future__ import annotations

import numpy as np

from vade import methods

__all__ = ["COST_AXES", "overhead"]

COST_AXES = ("all", "generated")
_RESCORE_EVERY, _RESCORE_ROLLOUTS = 4, 8  # MMR1's published re-scoring (MMR1Sampler defaults)


def overhead(method: str, step: np.ndarray, *, initial: int | None,
             n_samples: int | None) -> np.ndarray:
    """Rollouts ``method`` consumed or needed through each of ``step`` that its history does not
    count (step 0: before training). ``initial``: the initial difficulty rollouts of its model
    (None: unknown, counted as 0 by the caller's note); ``n_samples``: its training rows."""
    s = np.asarray(step, dtype=np.float64)
    out = np.zeros(s.shape)
    if method == "base":
        return out
    if methods.get(method).needs_difficulty and initial:
        out += float(initial)
    if method == "mmr1" and n_samples:
        passes = np.floor(np.maximum(s - 1.0, 0.0) / _RESCORE_EVERY)
        out += passes * n_samples * _RESCORE_ROLLOUTS
    return out
