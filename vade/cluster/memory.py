"""GPU memory of a verl training layout, per GPU and per phase, before a job is queued.

Why: an out-of-memory error in verl surfaces at the first actor update, an hour into a job; the
arithmetic that predicts it takes milliseconds. The estimate is worst case (every sequence at
``max_prompt_length + max_new_tokens``, which is what the SDPA default pads to: verl 0.7.1
removes padding for Qwen2.5-VL only with flash-attn, ``vade.cluster.bill.padded``) and counts,
per GPU of an FSDP full shard over N GPUs of P parameters (verl 0.7.1's ``fsdp_workers``;
b sequences of s positions, r of them the response, hidden h, MLP size I, L layers, vocab V):

* update: fp32 weights, fp32 gradients and AdamW's two fp32 moments, 16 P / N bytes (offload
  moves them to CPU between phases, but verl loads them back for the update); the embedding and
  lm_head, which FSDP keeps whole beside the layer it gathers (bf16 weights and gradients,
  4 B V h each, one when tied); activations with gradient checkpointing: each layer's bf16 input
  (2 b s h) and one layer recomputed at a time, (16 h + 8 I) b s bytes (attention's inputs,
  q/k/v and output 12 h, the two norms' inputs 4 h, SwiGLU's input and its four I-wide
  tensors 8 I: about 58 b s h for the 7B, where Korthikanti et al. 2022's 34 b s h assumes a
  GeLU MLP of 4 h), without it that every layer; SDPA's b x s x s bf16 attention mask; the bf16
  logits and their gradient, 4 b s V; the response's log-softmax that autograd saves, 2 b r V;
* log-probs (old policy and reference, no gradient): the resident states (12 P / N: no
  gradients), the whole embedding and lm_head in bf16, one layer's activations, the mask and
  the bf16 logits, 2 b s V;
* rollout: vLLM's share (``gpu_memory_utilization`` of the GPU) beside the states that stay on
  the GPU (12 P / N, less 4 P / N with ``param_offload``, less 8 P / N with
  ``optimizer_offload``); during the update vLLM sleeps (verl's ``free_cache_engine: true``).

Each phase also keeps ``RESERVE_GIB`` for the CUDA context, NCCL buffers and fragmentation, and
must fit in ``1 - SAFETY`` of the GPU: the terms above are counted, not measured here (no GPU),
and what they leave out (the vision tower's activations, allocator rounding, temporaries of a
fused kernel) is what the margin is for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vade.cluster.models import ModelShape, shape_of
from vade.train.config import TrainConfig
from vade.train.verl.config import VerlConfig

__all__ = ["DEFAULT_GPU_GIB", "RESERVE_GIB", "SAFETY", "Layout", "Phase", "check_layout",
           "layout_of", "phases", "summary"]

GIB = 2.0**30
RESERVE_GIB = 2.0        # assumed: CUDA context (~0.5), NCCL buffers, allocator fragmentation
DEFAULT_GPU_GIB = 79.0   # an 80 GB A100/H100 as torch reports it (total_memory, ~79.1 GiB)
SAFETY = 0.05            # each phase must fit in 95% of the GPU (what the terms leave out)


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
    response: int = 0          # positions of the response (its log-softmax); 0: all of seq_len
    mini_batch_per_gpu: int = 0  # sequences per GPU per update: a micro-batch must divide it

    @property
    def response_len(self) -> int:
        return self.response or self.seq_len


@dataclass(frozen=True)
class Phase:
    name: str
    parts: tuple[tuple[str, float], ...]   # (what, GiB)

    @property
    def gib(self) -> float:
        return sum(g for _, g in self.parts)


def _layer_bytes(x: Layout, b: int) -> float:
    """One layer's activations while it is computed (recomputed, under checkpointing)."""
    return (16 * x.shape.hidden + 8 * x.shape.mlp) * b * x.seq_len


def _activations(x: Layout, b: int) -> float:
    if x.gradient_checkpointing:
        return (2 * b * x.seq_len * x.shape.hidden * x.shape.layers + _layer_bytes(x, b)) / GIB
    return _layer_bytes(x, b) * x.shape.layers / GIB


def _ends(x: Layout) -> float:
    """Parameters of the embedding and lm_head (one matrix when tied)."""
    return x.shape.vocab * x.shape.hidden * (1 if x.shape.tied else 2)


def phases(x: Layout, gpu_gib: float) -> tuple[Phase, Phase, Phase]:
    """(update, log-probs, rollout) per GPU, in GiB."""
    p_n = x.shape.params / x.gpus
    resident = 12 * p_n - (4 * p_n if x.param_offload else 0) - (
        8 * p_n if x.optimizer_offload else 0)
    bsv = x.seq_len * x.shape.vocab
    mask = 2 * x.seq_len * x.seq_len / GIB
    b, lb = x.micro_batch, x.logprob_micro_batch
    update = Phase("update", (
        ("fp32 weights + gradients + Adam moments, 16 B/param sharded", 16 * p_n / GIB),
        ("embedding and lm_head whole, bf16 weights + gradients", 4 * _ends(x) / GIB),
        (f"activations of {b} x {x.seq_len} positions", _activations(x, b)),
        ("SDPA attention mask, bf16", b * mask),
        ("bf16 logits and their gradient", 4 * b * bsv / GIB),
        ("saved log-softmax of the response, bf16",
         2 * b * x.response_len * x.shape.vocab / GIB),
        ("reserve", RESERVE_GIB)))
    logprob = Phase("log-probs", (
        ("fp32 weights + Adam moments, 12 B/param sharded", 12 * p_n / GIB),
        ("embedding and lm_head whole, bf16", 2 * _ends(x) / GIB),
        ("one layer's activations", _layer_bytes(x, lb) / GIB),
        ("SDPA attention mask, bf16", lb * mask),
        ("bf16 logits", 2 * lb * bsv / GIB),
        ("reserve", RESERVE_GIB)))
    rollout = Phase("rollout", (
        (f"vLLM's share ({x.rollout_share:g} of {gpu_gib:g} GiB)", x.rollout_share * gpu_gib),
        ("training states left on the GPU", resident / GIB),
        ("reserve", RESERVE_GIB)))
    return update, logprob, rollout


def _largest(fits: Any, start: int, divides: int = 0) -> int:
    """The largest micro-batch from ``start`` down that fits (and divides ``divides``: verl
    asserts that a mini-batch splits into whole micro-batches)."""
    b = start
    while b > 0 and (not fits(b) or (divides and divides % b)):
        b -= 1
    return b


def check_layout(x: Layout, gpu_gib: float = DEFAULT_GPU_GIB) -> list[str]:
    """One line per phase that does not fit ``1 - SAFETY`` of the GPU, naming the knob and a
    value that fits."""
    update, logprob, rollout = phases(x, gpu_gib)
    room = (1 - SAFETY) * gpu_gib
    out = []
    if update.gib > room:
        b = _largest(lambda b: phases(_with(x, micro_batch=b), gpu_gib)[0].gib <= room,
                     x.micro_batch - 1, x.mini_batch_per_gpu)
        fix = (f"set train.verl.ppo_micro_batch_size_per_gpu <= {b}" if b else
               "no micro-batch fits: use more GPUs (train.verl.n_gpus_per_node) or lower "
               "train.verl.max_prompt_length / train.max_new_tokens")
        out.append(f"update needs {update.gib:.1f} GiB per GPU of {room:.1f} (95% of "
                   f"{gpu_gib:g}): {fix}")
    if logprob.gib > room:
        b = _largest(lambda b: phases(_with(x, logprob_micro_batch=b), gpu_gib)[1].gib
                     <= room, x.logprob_micro_batch - 1)
        out.append(f"log-probs need {logprob.gib:.1f} GiB per GPU of {room:.1f} (95% of "
                   f"{gpu_gib:g}): set train.verl.log_prob_micro_batch_size_per_gpu <= "
                   f"{max(b, 1)}")
    if rollout.gib > room:
        out.append(f"rollout needs {rollout.gib:.1f} GiB per GPU of {room:.1f} (95% of "
                   f"{gpu_gib:g}): lower "
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
                  v.optimizer_offload, response,
                  _mini_batch_per_gpu(train, v.n_gpus_per_node * v.nnodes))


def _mini_batch_per_gpu(train: Mapping[str, Any], gpus: int) -> int:
    """Sequences per GPU in one update: ppo_mini_batch_size (else batch_size) prompts x G."""
    prompts = train.get("ppo_mini_batch_size") or train.get("batch_size", TrainConfig.batch_size)
    g = train.get("rollouts_per_prompt", TrainConfig.rollouts_per_prompt)
    return int(prompts) * int(g) // max(1, gpus)


def summary(x: Layout, gpu_gib: float = DEFAULT_GPU_GIB) -> str:
    """One line: each phase's GiB per GPU against the GPU's."""
    parts = ", ".join(f"{p.name} {p.gib:.1f}" for p in phases(x, gpu_gib))
    return (f"{x.shape.name} on {x.gpus} GPUs, micro-batch {x.micro_batch} x {x.seq_len} "
            f"tokens: {parts} GiB per GPU of {gpu_gib:g}")

