"""The actor update of one step, as verl's ``DataParallelPPOActor.update_policy`` does it.

Group advantages -> (old log-probs if the batch is reused) -> for each PPO epoch, for each
mini-batch of ``ppo_mini_batch_size * G`` rows in order: log-probs with grad, policy loss + KL
loss (``vade.train.algos``), backward, clip the gradient norm, step (a non-finite norm skips the
step, as verl does). With one mini-batch and one epoch the old policy is the current one, so, as
in verl, ``old_log_prob = log_prob.detach()`` and no separate forward pass is spent on it.

Differences from verl, on purpose: no micro-batching (a mini-batch is one forward pass; verl
with ``ppo_micro_batch_size_per_gpu = ppo_mini_batch_size`` is the same), no entropy bonus
(verl's default ``entropy_coeff = 0``), metrics averaged over mini-batches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vade.train.algos import group_advantages, total_loss
from vade.train.config import TrainConfig
from vade.train.local.batch import StepBatch
from vade.train.local.timing import Phases

__all__ = ["actor_update"]


def actor_update(policy: Any, batch: StepBatch, cfg: TrainConfig,
                 advantages: np.ndarray | None = None, phases: Any = None) -> dict[str, float]:
    """Run the PPO epochs over ``batch``; return mean metrics (verl names).

    ``policy`` has ``model``, ``optimizer``, ``ref_model`` (or None) and ``token_logprobs``.
    ``advantages`` (one per batch row) replaces the GRPO group advantage (DIVA's, for example).
    ``phases`` (``vade.train.local.timing.Phases``) gets the no-grad passes as ``ref_logprob``
    and the rest as ``actor``.
    """
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    phases = phases if phases is not None else Phases()

    model, optimizer, ref_model = policy.model, policy.optimizer, policy.ref_model

    def logprobs(m: Any, rows: np.ndarray) -> Any:
        return batch.logprobs(policy.token_logprobs, m, rows)

    algo = cfg.algo
    n = len(batch)
    rows_all = np.arange(n)
    if advantages is None:
        adv_rows = group_advantages(torch.as_tensor(batch.rewards, dtype=torch.float32),
                                    batch.sample_ids, eps=algo.epsilon,
                                    norm_by_std=algo.norm_adv_by_std_in_grpo)
    else:
        if np.shape(advantages) != (n,):
            raise ValueError(f"advantages has shape {np.shape(advantages)}, expected ({n},)")
        adv_rows = torch.as_tensor(np.asarray(advantages), dtype=torch.float32)
    mask_all = batch.response_mask(rows_all)
    adv_all = adv_rows[:, None] * mask_all
    mb_rows = cfg.mini_batch_size * cfg.rollouts_per_prompt
    mini = [rows_all[s:s + mb_rows] for s in range(0, n, mb_rows)]
    on_policy = len(mini) == 1 and cfg.ppo_epochs == 1
    use_kl = ref_model is not None and algo.kl_loss_coef > 0
    with torch.no_grad(), phases.time("ref_logprob"):
        old_all = None if on_policy else logprobs(model, rows_all)
        ref_all = logprobs(ref_model, rows_all) if use_kl else None

    with phases.time("actor"):
        params = [p for p in model.parameters() if p.requires_grad]
        sums: dict[str, list[float]] = {}
        model.train()
        for _ in range(cfg.ppo_epochs):
            for rows in mini:
                optimizer.zero_grad(set_to_none=True)
                logp = logprobs(model, rows)
                old = logp.detach() if on_policy else old_all[rows]
                loss, metrics = total_loss(
                    old, logp, adv_all[rows], mask_all[rows],
                    ref_logp=None if ref_all is None else ref_all[rows],
                    kl_coef=algo.kl_loss_coef, kl_type=algo.kl_loss_type, loss_mode=cfg.loss_mode,
                    clip_ratio_low=algo.clip_ratio_low, clip_ratio_high=algo.clip_ratio_high,
                    clip_ratio_c=algo.clip_ratio_c, loss_agg_mode=algo.loss_agg_mode)
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(params, max_norm=cfg.grad_clip)
                finite = bool(torch.isfinite(norm))
                if finite:  # verl skips a step whose gradient overflowed
                    optimizer.step()
                metrics["actor/skipped_updates"] = 0.0 if finite else 1.0
                optimizer.zero_grad(set_to_none=True)
                metrics["actor/grad_norm"] = float(norm)
                metrics["actor/loss"] = float(loss.detach())
                for key, value in metrics.items():
                    sums.setdefault(key, []).append(value)
        model.eval()
    out = {key: float(np.mean(values)) for key, values in sums.items()}
    out["actor/updates"] = float(len(sums.get("actor/loss", [])))
    out["critic/advantages/max"] = float(adv_rows.max()) if n else 0.0
    return out
