"""Supervised warm start: teach the random tiny model the answer format, and only partly the task.

Why: GRPO-style RL needs a starting policy that already answers in the verifiable format
(``\\boxed{X}``) and is right on some items but not all; a random model never earns a reward,
and a perfect one has nothing to learn. This is the CPU stand-in for starting from an Instruct
checkpoint. The learning rate decides whether the images are learned at all. On the three-domain
synthetic mix, lr 2e-3 (what tiny-rl.md used for a single bar task) learns the answer format, then
sits at chance for 600 steps (on the bar task alone too); 1e-3 learns only the balance task within
900 steps; 5e-4 leaves the plateau after ~300 steps. With batch 32 it reaches a held-out
gold-answer probability of 0.51 at step 600 (balance 0.91, chart 0.32, count 0.31; batch 64: 0.53
at step 500 for 1.7x the compute), and per-item pass@8 is spread across 0..8: the regime where
gradient vanishing (and so VADE) matters.

The loss is the mean token negative log-likelihood of ``\\boxed{answer}<|im_end|>`` after the
chat-templated prompt (prompt tokens are not trained). Batches are drawn epoch by epoch from a
seeded permutation, so a run is deterministic for (data, config, seed).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from vade.models.config import WarmStartConfig
from vade.models.data_parallel import DataParallel
from vade.models.policy import PromptInputs, encode_prompts, encode_responses, token_logprobs

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example

__all__ = ["gold_response_prob", "split_heldout", "target_text", "warm_start"]


def target_text(example: Example) -> str:
    """The supervised response for an example: its ground truth in ``\\boxed{}``."""
    if not str(example.ground_truth).strip():
        raise ValueError(f"row index={example.index}: empty ground truth, cannot warm-start on it")
    return f"\\boxed{{{example.ground_truth}}}"


def split_heldout(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train positions, held-out positions): a seeded split of range(n)."""
    perm = np.random.default_rng([seed, 7]).permutation(n)
    n_eval = round(n * fraction)
    if fraction > 0 and n_eval == 0 and n > 1:
        n_eval = 1
    return np.sort(perm[n_eval:]), np.sort(perm[:n_eval])


def _encode_all(processor: Any, examples: Sequence[Example], chunk: int = 256):
    pad = processor.tokenizer.pad_token_id
    prompts = PromptInputs.concat(
        [encode_prompts(processor, examples[i:i + chunk]) for i in range(0, len(examples), chunk)],
        pad)
    ids, mask = encode_responses(processor.tokenizer, [target_text(e) for e in examples])
    return prompts, ids, mask


def gold_response_prob(model: Any, processor: Any, examples: Sequence[Example],
                       batch_size: int = 128) -> np.ndarray:
    """P(model emits exactly ``\\boxed{answer}<|im_end|>``) per example at temperature 1."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    prompts, ids, mask = _encode_all(processor, examples)
    out = []
    with torch.no_grad():
        for s in range(0, len(examples), batch_size):
            rows = torch.arange(s, min(s + batch_size, len(examples)))
            lp = token_logprobs(model, prompts.select(rows), ids[rows], mask[rows],
                                share_prompts=False)
            out.append(lp.sum(-1).exp())
    return torch.cat(out).numpy()


def warm_start(model: Any, processor: Any, examples: Sequence[Example], cfg: WarmStartConfig,
               *, seed: int, progress: bool = True) -> dict[str, Any]:
    """Train ``model`` in place for ``cfg.steps`` steps; returns metrics (loss curve, timing)."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    if cfg.steps == 0:
        return {"steps": 0}
    if not examples:
        raise ValueError("warm start: the warmstart split is empty")
    prompts, ids, mask = _encode_all(processor, examples)
    n = len(examples)
    batch = min(cfg.batch_size, n)
    rng = np.random.default_rng([seed, 11])
    order, cursor = rng.permutation(n), 0
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)
    for p in params:  # summed across processes every step, so present from the start
        p.grad = torch.zeros_like(p)
    losses: list[float] = []
    model.train()
    t0 = time.perf_counter()
    # cfg.processes > 1: each process takes every k-th row of a batch and the gradients are
    # summed (vade.models.data_parallel); the loss is normalised by the whole batch's tokens, so
    # the summed gradient is the one-process gradient.
    processes = min(cfg.processes, batch)
    with torch.random.fork_rng(devices=[]), DataParallel(processes) as dp:
        torch.manual_seed(seed)
        bar = tqdm(range(cfg.steps), desc="warm start", unit="step",
                   disable=not progress or dp.rank > 0, mininterval=1.0)
        for _ in bar:
            if cursor + batch > n:
                order, cursor = rng.permutation(n), 0
            rows = torch.as_tensor(order[cursor:cursor + batch])
            cursor += batch
            mine = rows[dp.rank::dp.size]
            lp = token_logprobs(model, prompts.select(mine), ids[mine], mask[mine],
                                share_prompts=False)  # distinct prompts: nothing to share
            loss = -(lp * mask[mine].to(lp.dtype)).sum() / mask[rows].sum().to(lp.dtype)
            opt.zero_grad(set_to_none=False)
            loss.backward()
            total = loss.detach().reshape(1)
            dp.sum_([p.grad for p in params] + [total])
            opt.step()
            sched.step()
            losses.append(float(total))
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    model.eval()
    seconds = time.perf_counter() - t0
    return {"steps": cfg.steps, "seconds": seconds, "seconds_per_step": seconds / cfg.steps,
            "loss_first": losses[0], "loss_last": float(np.mean(losses[-10:])),
            "examples": n, "batch_size": batch, "processes": processes}
