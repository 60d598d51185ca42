"""DIVA-GRPO's advantage: local and global GRPO terms, batch z-scored, difficulty-weighted, summed.

Per response i with reward r_i, in local group l(i) (the rollouts of one prompt: an original or one
of its variants) and global group g(i) (every rollout of one original and its variants):

1. ``A_loc`` = GRPO advantage within l(i), ``A_glob`` = GRPO advantage within g(i)
   ((r - mean) / (std + eps), unbiased std, tied groups exactly 0, singletons 0: the same
   semantics as ``vade.train.algos.group_advantages`` / verl);
2. each term z-scored over the whole batch of responses (one value per response, never per
   token: the reference code's whitening also counted padded tokens, which we do not copy);
3. the global term weighted by ``exp(k * dd * sign(A_glob))`` with dd = the row's level minus the
   mean level of its global group (over responses): a correct answer on a harder-than-average
   variant counts more, a wrong one less; zeros stay zero;
4. low-reward rescaling: in a group (local or global) whose rewards all lie below ``low_reward``,
   that group's term is multiplied by ``low_reward_scale`` (nothing solved: a weak signal);
5. A = A_loc + A_glob.

The order (z-score, weight, rescale, sum) follows the reference run's mode. numpy only, so the
local trainer and the verl advantage estimator call the same function.
"""

from __future__ import annotations

import numpy as np

__all__ = ["diva_advantages", "grpo_advantages"]


def grpo_advantages(rewards: np.ndarray, group_ids: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """(r - group mean) / (unbiased group std + eps); tied groups and singletons get 0."""
    r = np.asarray(rewards, dtype=float)
    _, inv, counts = np.unique(np.asarray(group_ids), return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    mean = np.bincount(inv, weights=r) / counts
    centred = r - mean[inv]
    var = np.bincount(inv, weights=centred**2) / np.maximum(counts - 1, 1)
    adv = centred / (np.sqrt(var)[inv] + eps)
    lo = np.full(counts.size, np.inf)
    hi = np.full(counts.size, -np.inf)
    np.minimum.at(lo, inv, r)
    np.maximum.at(hi, inv, r)
    flat = (lo == hi)[inv] | (counts == 1)[inv]
    return np.where(flat, 0.0, adv)


def _batch_zscore(values: np.ndarray, eps: float) -> np.ndarray:
    if values.size < 2:
        return np.zeros_like(values)
    return (values - values.mean()) / (values.std(ddof=1) + eps)


def _all_below(rewards: np.ndarray, group_ids: np.ndarray, threshold: float) -> np.ndarray:
    """Per response: does every reward of its group lie below ``threshold``?"""
    _, inv = np.unique(group_ids, return_inverse=True)
    inv = inv.reshape(-1)
    hi = np.full(inv.max() + 1, -np.inf)
    np.maximum.at(hi, inv, rewards)
    return hi[inv] < threshold


def diva_advantages(
    rewards: np.ndarray,
    local_ids: np.ndarray,
    global_ids: np.ndarray,
    levels: np.ndarray,
    *,
    k: float = 0.1,
    low_reward: float = 0.15,
    low_reward_scale: float = 0.1,
    eps: float = 1e-6,
) -> np.ndarray:
    """One advantage per response (the module docstring's five steps), float64 of shape (N,)."""
    r = np.asarray(rewards, dtype=float)
    n = r.shape[0] if r.ndim == 1 else -1
    if n < 0:
        raise ValueError(f"rewards must be 1-D (one scalar per response), got shape {r.shape}")
    local = np.asarray(local_ids)
    glob = np.asarray(global_ids)
    lv = np.asarray(levels, dtype=float)
    for name, arr in (("local_ids", local), ("global_ids", glob), ("levels", lv)):
        if arr.shape != (n,):
            raise ValueError(f"{name} has shape {arr.shape}, expected ({n},)")
    if not np.isfinite(r).all():
        raise ValueError(f"rewards[{int(np.flatnonzero(~np.isfinite(r))[0])}] is not finite")
    if not (np.isfinite(k) and k >= 0):
        raise ValueError(f"k must be a finite number >= 0, got {k!r}")
    if not 0.0 <= low_reward_scale <= 1.0:
        raise ValueError(f"low_reward_scale must lie in [0, 1], got {low_reward_scale!r}")
    _check_nested(local, glob)
    if n == 0:
        return np.zeros(0)

    a_loc = _batch_zscore(grpo_advantages(r, local, eps), eps)
    a_glob = _batch_zscore(grpo_advantages(r, glob, eps), eps)

    _, ginv = np.unique(glob, return_inverse=True)
    ginv = ginv.reshape(-1)
    mean_level = np.bincount(ginv, weights=lv) / np.bincount(ginv)
    dd = lv - mean_level[ginv]
    a_glob = a_glob * np.exp(k * dd * np.sign(a_glob))

    a_loc = np.where(_all_below(r, local, low_reward), a_loc * low_reward_scale, a_loc)
    a_glob = np.where(_all_below(r, glob, low_reward), a_glob * low_reward_scale, a_glob)
    return a_loc + a_glob


def _check_nested(local: np.ndarray, glob: np.ndarray) -> None:
    """A prompt's rollouts belong to one original: each local group sits inside one global group."""
    if local.size == 0:
        return
    li = np.unique(local, return_inverse=True)[1].reshape(-1)
    gi = np.unique(glob, return_inverse=True)[1].reshape(-1)
    owner = np.empty(li.max() + 1, dtype=gi.dtype)
    owner[li] = gi  # any one owner per local group; a second owner shows as a mismatch
    bad = owner[li] != gi
    if bad.any():
        raise ValueError(f"local group {local[np.flatnonzero(bad)[0]]!r} spans several global groups")
