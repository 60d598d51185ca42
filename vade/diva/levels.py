"""Difficulty levels 1 (easy) .. 9 (hard): where they start and how one training step moves them.

The reference code reads the initial level from its data without saying how it was made. Here it
comes from the base model's pass rate in the initial difficulty rollouts (the same rollouts VADE's
prior uses), in nine equal-width bins of the failure rate: ``level = 1 + floor(9 (1 - p))``,
clipped to 9. With the paper's G = 8 each success count gets its own level (r = 8 -> 1, r = 7 -> 2,
..., r = 1 -> 8, r = 0 -> 9), so no information from the rollouts is thrown away.

The update is the later upstream version's interval table on the mean reward over all rollouts of
an original and its variants in one step (the first upload's thresholds are not used):

    mean in [0, .05] -> +2, (.05, .3] -> +1, (.3, .5] -> 0, (.5, .7] -> -1, (.7, 1] -> -2

clamped to [1, 9] (the first upload dropped problems that left the range; we keep them at the edge).
"""

from __future__ import annotations

import numpy as np

__all__ = ["LEVELS", "initial_levels", "update_levels"]

LEVELS = 9
# Upper edges (inclusive) of the mean-reward intervals and the level change each one makes.
_EDGES = np.array([0.05, 0.3, 0.5, 0.7, 1.0])
_MOVES = np.array([2, 1, 0, -1, -2])


def _as_rates(name: str, values: np.ndarray) -> np.ndarray:
    rates = np.asarray(values, dtype=float)
    bad = ~np.isfinite(rates) | (rates < 0.0) | (rates > 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] = {rates.flat[i]!r} is not a rate in [0, 1]")
    return rates


def initial_levels(successes: np.ndarray, rollouts: np.ndarray | int) -> np.ndarray:
    """Level per sample from r successes out of G initial rollouts (int8, 1..9)."""
    r = np.asarray(successes, dtype=float)
    g = np.broadcast_to(np.asarray(rollouts, dtype=float), r.shape)
    if (g <= 0).any():
        raise ValueError("every sample needs at least one initial rollout (G >= 1)")
    p = _as_rates("pass rate r/G", r / g)
    return np.minimum(1 + np.floor(LEVELS * (1.0 - p) + 1e-9), LEVELS).astype(np.int8)


def update_levels(levels: np.ndarray, mean_reward: np.ndarray) -> np.ndarray:
    """Move each level by the interval its step's mean reward falls in; clamp to [1, 9]."""
    lv = np.asarray(levels)
    if lv.shape != np.shape(mean_reward):
        raise ValueError(f"levels {lv.shape} and mean_reward {np.shape(mean_reward)} differ in shape")
    if ((lv < 1) | (lv > LEVELS)).any():
        raise ValueError(f"levels must lie in [1, {LEVELS}], got {lv.min()}..{lv.max()}")
    m = _as_rates("mean_reward", mean_reward)
    move = _MOVES[np.searchsorted(_EDGES, m, side="left")]
    return np.clip(lv + move, 1, LEVELS).astype(np.int8)
