"""``train.verl``: the knobs only verl has (GPUs, parallelism, micro-batches, offload, engine).

Everything a run *is* (batch size, rollouts per prompt, steps, learning rate, response length,
validation and checkpoint cadence, the loss) is backend-neutral and lives in
``vade.train.config.TrainConfig``; ``vade.train.verl.overrides`` maps it to verl's keys. What
is left here only says how verl spreads one run over the hardware. Defaults are the paper's
Table 4 (Qwen2.5-VL-3B/7B, 4 GPUs on one node). Checks that need the run's shape too (a
tensor-parallel size that does not divide the GPUs, a mini-batch verl cannot split across ranks)
are :meth:`VerlConfig.check_run`, called by ``TrainConfig`` when the backend is verl, so they fail
before a cluster job is queued, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from vade.checks import check_bool, check_number, reject_unknown

__all__ = ["ATTENTION", "ENGINES", "VerlConfig"]

ENGINES = ("vllm", "sglang")
# sdpa: PyTorch's own kernels, nothing to compile (the default); flash_attention_2: needs the
# flash-attn package (built from source by envs/train-verl.post-deploy.sh with VADE_FLASH_ATTN=1)
# and turns on verl's padding removal, which imports flash_attn.bert_padding on CUDA.
ATTENTION = ("sdpa", "flash_attention_2")


@dataclass(frozen=True)
class VerlConfig:
    """``train.verl``. Defaults = Table 4 of the paper."""

    ppo_micro_batch_size_per_gpu: int = 16
    log_prob_micro_batch_size_per_gpu: int = 16
    entropy_coeff: float = 0.0
    max_prompt_length: int = 8192
    filter_overlong_prompts: bool = True
    rollout_engine: str = "vllm"
    tensor_model_parallel_size: int = 2
    gpu_memory_utilization: float = 0.6
    n_gpus_per_node: int = 4
    nnodes: int = 1
    gradient_checkpointing: bool = True
    param_offload: bool = False
    optimizer_offload: bool = False
    attention: str = "sdpa"

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> VerlConfig:
        if values is not None and not isinstance(values, Mapping):
            raise ValueError(f"train.verl must be a mapping, got {type(values).__name__}")
        values = dict(values or {})
        reject_unknown(values, {f.name for f in fields(cls)}, "train.verl")
        return cls(**values)

    def __post_init__(self) -> None:
        w = "train.verl."
        ints = {"ppo_micro_batch_size_per_gpu": (1, 1 << 16),
                "log_prob_micro_batch_size_per_gpu": (1, 1 << 16),
                "max_prompt_length": (16, 1 << 20),
                "tensor_model_parallel_size": (1, 64), "n_gpus_per_node": (1, 64),
                "nnodes": (1, 4096)}
        for key, (lo, hi) in ints.items():
            check_number(w + key, getattr(self, key), lo, hi, integer=True)
        check_number(w + "entropy_coeff", self.entropy_coeff, 0.0, 10.0)
        check_number(w + "gpu_memory_utilization", self.gpu_memory_utilization, 0.05, 0.99)
        for key in ("filter_overlong_prompts", "gradient_checkpointing", "param_offload",
                    "optimizer_offload"):
            check_bool(w + key, getattr(self, key))
        if self.attention not in ATTENTION:
            raise ValueError(f"{w}attention must be one of {ATTENTION}, got {self.attention!r}")
        if self.rollout_engine not in ENGINES:
            raise ValueError(f"{w}rollout_engine must be one of {ENGINES}, "
                             f"got {self.rollout_engine!r}")
        if self.n_gpus % self.tensor_model_parallel_size:
            raise ValueError(f"{w}tensor_model_parallel_size = {self.tensor_model_parallel_size} "
                             f"must divide the {self.n_gpus} GPUs")

    @property
    def n_gpus(self) -> int:
        return self.n_gpus_per_node * self.nnodes

    def check_run(self, mini_batch_size: int, rollouts_per_prompt: int) -> None:
        """Refuse a run shape verl cannot split across this many GPUs."""
        if (mini_batch_size * rollouts_per_prompt) % self.n_gpus:
            raise ValueError(f"train.ppo_mini_batch_size x train.rollouts_per_prompt = "
                             f"{mini_batch_size * rollouts_per_prompt} must be divisible by "
                             f"the {self.n_gpus} GPUs of train.verl (verl splits each "
                             "mini-batch across ranks)")
