"""What one training step told the sampler, validated once, in the shape the store logs.

Every sampler's ``observe`` goes through :func:`validate_observation`, so the checks (and their
messages, which name the offending row) are the same for VADE, its ablations and the uniform
baseline, whichever trainer calls them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Observation", "draws_for", "effective_gradient_ratio", "validate_observation"]


def effective_gradient_ratio(correct: np.ndarray, rollouts: np.ndarray | float) -> float:
    """Share of observed groups whose rewards are not all equal (0 < r < G).

    Groups with r = 0 or r = G get a zero group-normalised advantage, hence no policy gradient:
    this is the quantity the paper's Figure 1 tracks.
    """
    r = np.asarray(correct, dtype=np.float64)
    if r.size == 0:
        return float("nan")
    g = np.broadcast_to(np.asarray(rollouts, dtype=np.float64), r.shape)
    return float(np.count_nonzero((r > 0) & (r < g)) / r.size)


@dataclass(frozen=True)
class Observation:
    """One step's evidence and the posterior change it caused, per observed sample.

    ``alpha_*``/``beta_*`` are ``None`` for samplers without a posterior (uniform); ``p_drawn`` and
    ``gain`` are NaN for observed samples that the preceding ``select`` did not score.
    """

    step: int
    indices: np.ndarray
    correct: np.ndarray
    rollouts: np.ndarray
    p_drawn: np.ndarray
    gain: np.ndarray
    alpha_before: np.ndarray | None = None
    beta_before: np.ndarray | None = None
    alpha_after: np.ndarray | None = None
    beta_after: np.ndarray | None = None

    @property
    def effective_ratio(self) -> float:
        return effective_gradient_ratio(self.correct, self.rollouts)

    @property
    def n_rollouts(self) -> int:
        return int(round(float(self.rollouts.sum())))

    @property
    def mean_accuracy(self) -> float:
        return float(np.mean(self.correct / self.rollouts))


def draws_for(
    selected: np.ndarray, p: np.ndarray, gain: np.ndarray, indices: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(p, gain) that the last ``select`` gave each of ``indices``; NaN where it did not pick it.

    Trainers may observe a subset or a reordering of the selection (verl drops overlong prompts
    and reorders rows), so draws are matched by sample index, never by position.
    """
    out_p = np.full(indices.shape, np.nan)
    out_gain = np.full(indices.shape, np.nan)
    if selected.size:
        order = np.argsort(selected)
        pos = np.minimum(np.searchsorted(selected[order], indices), selected.size - 1)
        hit = selected[order][pos] == indices
        out_p[hit] = p[order][pos[hit]]
        out_gain[hit] = gain[order][pos[hit]]
    return out_p, out_gain


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def validate_observation(
    indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float, n_samples: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check one step's (indices, r, G) and return them as int64 / float64 / float64 arrays.

    Raises ``ValueError`` naming the first offending position and its sample index.
    """
    idx = np.asarray(indices)
    if idx.ndim != 1 or idx.size == 0:
        raise ValueError(f"indices must be a non-empty 1-D array, got shape {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        if not np.issubdtype(idx.dtype, np.floating) or not np.all(np.isfinite(idx)) or np.any(
            idx != np.round(idx)
        ):
            raise ValueError(f"indices must be integers, got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
    out_of_range = (idx < 0) | (idx >= n_samples)
    if out_of_range.any():
        k = _first_bad(out_of_range)
        raise ValueError(
            f"indices[{k}] = {idx[k]} is out of range for n_samples = {n_samples}"
        )
    order = np.argsort(idx, kind="stable")
    dup = idx[order][1:] == idx[order][:-1]
    if dup.any():
        value = idx[order][1:][_first_bad(dup)]
        where = np.flatnonzero(idx == value)
        raise ValueError(f"duplicate index {value} at positions {where.tolist()}")

    r = np.asarray(correct, dtype=np.float64)
    if r.shape != idx.shape:
        raise ValueError(f"correct has shape {r.shape}, expected {idx.shape} (one per index)")
    g_in = np.asarray(rollouts, dtype=np.float64)
    if g_in.ndim == 0:
        g = np.full(idx.shape, float(g_in))
    elif g_in.shape == idx.shape:
        g = g_in.copy()
    else:
        raise ValueError(
            f"rollouts must be a scalar or have shape {idx.shape}, got shape {g_in.shape}"
        )
    for name, arr in (("correct", r), ("rollouts", g)):
        bad = ~np.isfinite(arr)
        if bad.any():
            k = _first_bad(bad)
            raise ValueError(f"{name}[{k}] = {arr[k]} (sample {idx[k]}) is not a finite number")
    bad = g <= 0
    if bad.any():
        k = _first_bad(bad)
        raise ValueError(f"rollouts[{k}] = {g[k]:g} (sample {idx[k]}) must be positive")
    bad = r < 0
    if bad.any():
        k = _first_bad(bad)
        raise ValueError(f"correct[{k}] = {r[k]:g} (sample {idx[k]}) is negative")
    bad = r > g
    if bad.any():
        k = _first_bad(bad)
        raise ValueError(
            f"correct[{k}] = {r[k]:g} exceeds rollouts[{k}] = {g[k]:g} (sample {idx[k]})"
        )
    return idx, r.copy(), g
