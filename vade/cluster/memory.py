"""GPU memory of a verl training layout, per GPU and per phase, before a job is queued.

Why: an out-of-memory error in verl surfaces at the first actor update, an hour into a job; the
arithmetic that predicts it takes milliseconds. The estimate is worst case (every sequence at
``max_prompt_length + max_new_tokens``, which is what the SDPA default pads to) and counts, per
GPU of an FSDP full shard over N GPUs of P parameters (verl 0.7.1's ``fsdp_workers``):

* update: fp32 weights, fp32 gradients and AdamW's two fp32 moments, 16 P / N bytes (offload
  moves them to CPU between phases, but verl loads them back for the update); activations of one
  micro-batch (b sequences of s tokens, hidden h, L layers): with gradient checkpointing each
  layer keeps its bf16 input (2 b s h) and one layer is recomputed at a time (34 b s h, the
  per-layer figure of Korthikanti et al. 2022 with memory-efficient attention), without it
  34 b s h every layer; the logits and their gradient in bf16, 4 b s V;
* log-probs (old policy and reference, no gradient): the resident states (12 P / N: no
  gradients), one layer's activations and the bf16 logits, 2 b s V;
* rollout: vLLM's share (``gpu_memory_utilization`` of the GPU) beside the states that stay on
  the GPU (12 P / N, less 4 P / N with ``param_offload``, less 8 P / N with
  ``optimizer_offload``); during the update vLLM sleeps (verl's ``free_cache_engine: true``).

Each phase also keeps ``RESERVE_GIB`` for the CUDA context, NCCL buffers and fragmentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vade.cluster.models import ModelShape, shape_of
from vade.train.config import TrainConfig
from vade.train.verl.config import VerlConfig

__all__ = ["DEFAULT_GPU_GIB", "RESERVE_GIB", "Layout", "Phase", "check_layout", "layout_of",
           "phases", "summary"]

GIB = 2.0**30
RESERVE_GIB = 2.0        # assumed: CUDA context (~0.5), NCCL buffers, allocator fragmentation
DEFAULT_GPU_GIB = 79.0   # an 80 GB A100/H100 as torch reports it (total_memory, ~79.1 GiB)


@dataclass(frozen=True)
class Layout:
    """What the estimate reads of a run: the model's shape and ``train.verl``'s knobs."""

    shape: ModelShape
    gpus: int
    micro_batch: int
    logprob_micro_batch: int
    seq_len: int
    rollout_share: float
    gradient_checkpointing: bool = True
    param_offload: bool = False
    optimizer_offload: bool = False


@dataclass(frozen=True)
class Phase:
    name: str
    parts: tuple[tuple[str, float], ...]   # (what, GiB)

    @property
    def gib(self) -> float:
        return sum(g for _, g in self.parts)


def _activations(x: Layout, b: int) -> float:
    bsh = b * x.seq_len * x.shape.hidden
    if x.gradient_checkpointing:
        return (2 * bsh * x.shape.layers + 34 * bsh) / GIB
    return 34 * bsh * x.shape.layers / GIB


def phases(x: Layout, gpu_gib: float) -> tuple[Phase, Phase, Phase]:
    """(update, log-probs, rollout) per GPU, in GiB."""
    p_n = x.shape.params / x.gpus
    resident = 12 * p_n - (4 * p_n if x.param_offload else 0) - (
        8 * p_n if x.optimizer_offload else 0)
    bsv = x.seq_len * x.shape.vocab
    update = Phase("update", (
        ("fp32 weights + gradients + Adam moments, 16 B/param sharded", 16 * p_n / GIB),
        (f"activations of {x.micro_batch} x {x.seq_len} tokens", _activations(x, x.micro_batch)),
        ("bf16 logits and their gradient", 4 * x.micro_batch * bsv / GIB),
        ("reserve", RESERVE_GIB)))
    logprob = Phase("log-probs", (
        ("fp32 weights + Adam moments, 12 B/param sharded", 12 * p_n / GIB),
        ("one layer's activations",
         34 * x.logprob_micro_batch * x.seq_len * x.shape.hidden / GIB),
        ("bf16 logits", 2 * x.logprob_micro_batch * bsv / GIB),
        ("reserve", RESERVE_GIB)))
    rollout = Phase("rollout", (
        (f"vLLM's share ({x.rollout_share:g} of {gpu_gib:g} GiB)", x.rollout_share * gpu_gib),
        ("training states left on the GPU", resident / GIB),
        ("reserve", RESERVE_GIB)))
    return update, logprob, rollout


def _largest(fits: Any, start: int) -> int:
    b = start
    while b > 0 and not fits(b):
        b -= 1
    return b


def check_layout(x: Layout, gpu_gib: float = DEFAULT_GPU_GIB) -> list[str]:
    """One line per phase that does not fit, naming the knob and a value that fits."""
    update, logprob, rollout = phases(x, gpu_gib)
    out = []
    if update.gib > gpu_gib:
        b = _largest(lambda b: phases(_with(x, micro_batch=b), gpu_gib)[0].gib <= gpu_gib,
                     x.micro_batch - 1)
        fix = (f"set train.verl.ppo_micro_batch_size_per_gpu <= {b}" if b else
               "no micro-batch fits: use more GPUs (train.verl.n_gpus_per_node) or lower "
               "train.verl.max_prompt_length / train.max_new_tokens")
        out.append(f"update needs {update.gib:.1f} GiB per GPU of {gpu_gib:g}: {fix}")
    if logprob.gib > gpu_gib:
        b = _largest(lambda b: phases(_with(x, logprob_micro_batch=b), gpu_gib)[1].gib
                     <= gpu_gib, x.logprob_micro_batch - 1)
        out.append(f"log-probs need {logprob.gib:.1f} GiB per GPU of {gpu_gib:g}: set "
                   f"train.verl.log_prob_micro_batch_size_per_gpu <= {max(b, 1)}")
    if rollout.gib > gpu_gib:
        out.append(f"rollout needs {rollout.gib:.1f} GiB per GPU of {gpu_gib:g}: lower "
                   "train.verl.gpu_memory_utilization or set train.verl.param_offload / "
                   "optimizer_offload: true")
    return out


def _with(x: Layout, **kw: Any) -> Layout:
    return replace(x, **kw)


def layout_of(config: Mapping[str, Any], model: str,
              cache_dir: str | None = None) -> Layout | None:
    """The layout of a config's verl training of ``models.<model>``; None when the backend is
    not verl or the model's shape is unknown (``vade.cluster.models``)."""
    train = config.get("train") or {}
    if train.get("backend") != "verl":
        return None
    shape = shape_of(str((config.get("models") or {}).get(model, {}).get("name_or_path", "")),
                     cache_dir)
    if shape is None:
        return None
    v = VerlConfig.from_dict(train.get("verl"))

    response = int(train.get("max_new_tokens", TrainConfig.max_new_tokens))
    return Layout(shape, v.n_gpus, v.ppo_micro_batch_size_per_gpu,
                  v.log_prob_micro_batch_size_per_gpu, v.max_prompt_length + response,
                  v.gpu_memory_utilization, v.gradient_checkpointing, v.param_offload,
                  v.optimizer_offload)


def summary(x: Layout, gpu_gib: float = DEFAULT_GPU_GIB) -> str:
    """One line: each phase's GiB per GPU against the GPU's."""
    parts = ", ".join(f"{p.name} {p.gib:.1f}" for p in phases(x, gpu_gib))
    return (f"{x.shape.name} on {x.gpus} GPUs, micro-batch {x.micro_batch} x {x.seq_len} "
            f"tokens: {parts} GiB per GPU of {gpu_gib:g}")

