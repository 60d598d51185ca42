"""Pure functions on training curves: the paper's headline efficiency number and its parts.

The headline (Section 4.3, Figure 4a): VADE reaches 99.5% of DAPO's peak validation score with
about a third of DAPO's rollouts. Validation is measured at discrete steps, so "reaches" means
the first validation point whose score is at or above the target; nothing is interpolated, and a
curve that never gets there is reported as never reached rather than extrapolated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RolloutRatio", "first_reaching", "rollout_ratio"]


def first_reaching(rollouts: np.ndarray, scores: np.ndarray, target: float) -> float | None:
    """Cumulative rollouts at the first point (in rollout order) with ``score >= target``.

    Points with a NaN score (validation not run at that step) are skipped. Returns None when no
    point reaches the target.
    """
    x = np.asarray(rollouts, dtype=np.float64)
    y = np.asarray(scores, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"rollouts and scores must be 1-D of equal length, got {x.shape}, "
                         f"{y.shape}")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    hit = np.flatnonzero(np.isfinite(y) & (y >= target))
    return float(x[hit[0]]) if hit.size else None


@dataclass(frozen=True)
class RolloutRatio:
    """How many rollouts VADE needs, relative to DAPO, to match (a fraction of) DAPO's peak."""

    fraction: float
    dapo_peak: float                 # max validation score of DAPO
    target: float                    # fraction * dapo_peak
    dapo_rollouts_to_peak: float     # DAPO's cumulative rollouts when it first hits its peak
    dapo_rollouts_to_target: float   # ... when it first reaches the target
    vade_rollouts_to_target: float | None  # None: VADE never reached the target
    vade_best: float                 # VADE's best score (to show how far short it fell)

    @property
    def reached(self) -> bool:
        return self.vade_rollouts_to_target is not None

    @property
    def ratio(self) -> float | None:
        """VADE's rollouts to the target over DAPO's rollouts to its peak (paper: about 1/3)."""
        if self.vade_rollouts_to_target is None:
            return None
        return self.vade_rollouts_to_target / self.dapo_rollouts_to_peak


def rollout_ratio(dapo_rollouts: np.ndarray, dapo_scores: np.ndarray,
                  vade_rollouts: np.ndarray, vade_scores: np.ndarray,
                  fraction: float = 0.995) -> RolloutRatio:
    """The headline comparison of two validation curves (x = cumulative rollouts, y = score)."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    d_scores = np.asarray(dapo_scores, dtype=np.float64)
    v_scores = np.asarray(vade_scores, dtype=np.float64)
    if not np.isfinite(d_scores).any():
        raise ValueError("the DAPO curve has no validation score")
    peak = float(np.nanmax(d_scores))
    target = fraction * peak
    to_peak = first_reaching(dapo_rollouts, d_scores, peak)
    to_target = first_reaching(dapo_rollouts, d_scores, target)
    assert to_peak is not None and to_target is not None  # the peak is on the curve
    if to_peak <= 0:
        raise ValueError("DAPO reaches its peak at 0 cumulative rollouts: no ratio exists")
    vade_best = float(np.nanmax(v_scores)) if np.isfinite(v_scores).any() else float("nan")
    return RolloutRatio(fraction=fraction, dapo_peak=peak, target=target,
                        dapo_rollouts_to_peak=to_peak, dapo_rollouts_to_target=to_target,
                        vade_rollouts_to_target=first_reaching(vade_rollouts, v_scores, target),
                        vade_best=vade_best)
