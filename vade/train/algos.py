"""Group advantages, policy losses and the KL loss: the objective both backends optimise.

Why our own torch code instead of calling ``verl.trainer.ppo.core_algos``: verl is an optional
extra (the CPU demo's environment need not have it), importing it costs ~8 s and pulls Ray, and
its functions take verl config objects whose fields move between releases. So this module states
the math once, vectorised, with verl 0.7.1's exact semantics, and
``tests/test_train_algos.py`` proves the identity: the same random inputs through these functions
and through verl's (``compute_grpo_outcome_advantage``, ``compute_policy_loss_vanilla``,
``get_policy_loss_fn("gspo")``, ``kl_penalty``, ``agg_loss``) agree to float tolerance, including
gradients. The cluster (verl) and the laptop (``vade.train.local``) therefore optimise the same
objective. verl semantics kept on purpose, quirks included:

* GRPO: ``(r - mean_g) / (std_g + eps)`` with the unbiased (Bessel) std; a singleton group gets
  mean 0 and std 1. A group whose rewards are all equal gets exactly 0 (verl gives 0 for binary
  rewards too; we also force it for non-binary ties, where verl leaves a rounding residue / eps).
* vanilla PPO loss: log-ratio clamped to [-20, 20], asymmetric clip (``clip_ratio_low/high``) and
  always the dual clip ``clip_ratio_c`` (> 1) on negative advantages.
* GSPO: sequence-level ratio ``exp(mean_t log(pi/pi_old))`` with the token-level straight-through
  gradient, log clamped at 10, and the policy loss always aggregated ``seq-mean-token-mean``
  (verl ignores ``loss_agg_mode`` for it; the KL term still uses the configured mode).
* KL loss ``low_var_kl`` (k3): ``exp(ref - logp) - (ref - logp) - 1`` with the difference clamped
  to [-20, 20] and the result to [-10, 10].
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vade.train.config import AGG_MODES, KL_TYPES, LOSS_MODES

__all__ = [
    "AGG_MODES",
    "KL_TYPES",
    "LOSS_MODES",
    "agg_loss",
    "group_advantages",
    "kl_penalty",
    "policy_loss",
    "total_loss",
]



def group_advantages(
    rewards: torch.Tensor,
    group_ids: np.ndarray | torch.Tensor,
    *,
    eps: float = 1e-6,
    norm_by_std: bool = True,
) -> torch.Tensor:
    """GRPO outcome advantage per response (N,): reward normalised within its prompt's group.

    ``group_ids`` says which prompt each response belongs to (any hashable ints; order free), the
    way verl groups by ``uid``, never by position.
    """
    scores = torch.as_tensor(rewards).detach()
    if scores.ndim != 1:
        raise ValueError(f"rewards must be 1-D (one scalar per response), got {tuple(scores.shape)}")
    ids = np.asarray(group_ids.cpu() if isinstance(group_ids, torch.Tensor) else group_ids)
    if ids.shape != (scores.shape[0],):
        raise ValueError(f"group_ids has shape {ids.shape}, expected ({scores.shape[0]},)")
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    inv = torch.as_tensor(inverse.reshape(-1), dtype=torch.long)
    n = torch.as_tensor(counts, dtype=scores.dtype)
    sums = torch.zeros(len(counts), dtype=scores.dtype).index_add_(0, inv, scores)
    mean = sums / n
    centred = scores - mean[inv]
    sq = torch.zeros_like(sums).index_add_(0, inv, centred * centred)
    std = torch.sqrt(sq / (n - 1).clamp(min=1))
    single = n == 1
    mean = torch.where(single, torch.zeros_like(mean), mean)  # verl: singleton -> mean 0, std 1
    std = torch.where(single, torch.ones_like(std), std)
    centred = scores - mean[inv]
    adv = centred / (std[inv] + eps) if norm_by_std else centred
    lo = torch.full_like(sums, float("inf")).scatter_reduce_(0, inv, scores, "amin")
    hi = torch.full_like(sums, float("-inf")).scatter_reduce_(0, inv, scores, "amax")
    tied = (lo == hi) & ~single
    return torch.where(tied[inv], torch.zeros_like(adv), adv)


def agg_loss(loss_mat: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """Reduce a (N, L) per-token loss to a scalar the way verl's ``agg_loss`` does (dp_size 1).

    ``token-mean``: every valid token weighs the same (long answers weigh more);
    ``seq-mean-token-mean``: every response weighs the same; ``seq-mean-token-sum``: responses
    weigh by their summed loss. Fully masked rows are excluded from the sequence means.
    """
    m = mask.to(loss_mat.dtype)
    masked = torch.where(m.bool(), loss_mat, torch.zeros_like(loss_mat))  # NaN outside mask -> 0
    if mode == "token-mean":
        return masked.sum() / m.sum()
    if mode == "seq-mean-token-sum":
        per_seq = masked.sum(-1)
    elif mode == "seq-mean-token-mean":
        per_seq = masked.sum(-1) / (m.sum(-1) + 1e-8)
    else:
        raise ValueError(f"loss_agg_mode must be one of {AGG_MODES}, got {mode!r}")
    has = (m.sum(-1) > 0).to(loss_mat.dtype)
    return (per_seq * has).sum() / has.sum()


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(values.dtype)
    return (values * m).sum() / m.sum().clamp(min=1e-8)


def policy_loss(
    old_logp: torch.Tensor,
    logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    loss_mode: str = "vanilla",
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.2,
    clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate loss over (N, L) token tensors; returns (loss, metrics).

    ``vanilla``: token-level ratio, PPO clip [1 - low, 1 + high], dual clip at ``clip_ratio_c``
    for negative advantages (GRPO). ``gspo``: sequence-level ratio (GSPO). Metrics use verl's
    names: ``actor/pg_clipfrac``, ``actor/ppo_kl``, ``actor/pg_clipfrac_lower``.
    """
    if loss_mode not in LOSS_MODES:
        raise ValueError(f"loss_mode must be one of {LOSS_MODES}, got {loss_mode!r}")
    neg_kl = logp - old_logp
    ppo_kl = _masked_mean(-neg_kl, mask)
    if loss_mode == "vanilla":
        if not clip_ratio_c > 1.0:
            raise ValueError(f"clip_ratio_c must be > 1 (dual-clip PPO), got {clip_ratio_c}")
        ratio = torch.exp(torch.clamp(neg_kl, -20.0, 20.0))
        unclipped = -advantages * ratio
        clipped = -advantages * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
        upper = torch.maximum(unclipped, clipped)
        dual = -advantages * clip_ratio_c
        negative = advantages < 0
        losses = torch.where(negative, torch.minimum(dual, upper), upper)
        clipfrac_lower = _masked_mean((upper > dual).to(logp.dtype) * negative.to(logp.dtype),
                                      mask)
        agg = loss_agg_mode
    else:
        m = mask.to(logp.dtype)
        seq_neg_kl = (neg_kl * m).sum(-1) / m.sum(-1).clamp(min=1)
        log_ratio = logp - logp.detach() + seq_neg_kl.detach().unsqueeze(-1)
        ratio = torch.exp(torch.clamp(log_ratio, max=10.0))
        unclipped = -advantages * ratio
        clipped = -advantages * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
        losses = torch.maximum(unclipped, clipped)
        clipfrac_lower = torch.zeros(())
        agg = "seq-mean-token-mean"
    loss = agg_loss(losses, mask, agg)
    metrics = {
        "actor/pg_clipfrac": float(_masked_mean((clipped > unclipped).to(logp.dtype), mask)),
        "actor/ppo_kl": float(ppo_kl.detach()),
        "actor/pg_clipfrac_lower": float(clipfrac_lower.detach()),
    }
    return loss, metrics


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str = "low_var_kl") -> torch.Tensor:
    """Per-token KL estimate between the policy and the frozen reference (Schulman's k1/k2/k3)."""
    if kind in ("kl", "k1"):
        return logp - ref_logp
    if kind == "abs":
        return (logp - ref_logp).abs()
    if kind in ("mse", "k2"):
        return 0.5 * (logp - ref_logp).square()
    if kind in ("low_var_kl", "k3"):
        diff = torch.clamp(ref_logp - logp, -20.0, 20.0)
        return torch.clamp(torch.exp(diff) - diff - 1, -10.0, 10.0)
    raise ValueError(f"kl_loss_type must be one of {KL_TYPES}, got {kind!r}")


def total_loss(
    old_logp: torch.Tensor,
    logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    ref_logp: torch.Tensor | None,
    kl_coef: float,
    kl_type: str,
    **loss_kwargs: Any,
) -> tuple[torch.Tensor, dict[str, float]]:
    """verl's actor objective: policy loss + ``kl_coef`` * KL loss (same aggregation mode).

    ``ref_logp=None`` or ``kl_coef == 0`` leaves the KL term out (verl's ``use_kl_loss=False``).
    """
    pg, metrics = policy_loss(old_logp, logp, advantages, mask, **loss_kwargs)
    metrics["actor/pg_loss"] = float(pg.detach())
    loss = pg
    if ref_logp is not None and kl_coef:
        kl = agg_loss(kl_penalty(logp, ref_logp, kl_type), mask,
                      loss_kwargs.get("loss_agg_mode", "token-mean"))
        loss = pg + kl_coef * kl
        metrics["actor/kl_loss"] = float(kl.detach())
    return loss, metrics
