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
from dataclasses import dataclass
from typing import Any

from vade.config_schema import build, check

__all__ = ["VerlConfig"]


@dataclass(frozen=True)
class VerlConfig:
    """``train.verl``. Defaults = Table 4 of the paper; types, ranges and choices: the schema's
    ``train.verl`` (``vade.config_schema``)."""

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
    # sdpa: PyTorch's own kernels, nothing to compile; flash_attention_2: needs the flash-attn
    # package (built from source by envs/train-verl.post-deploy.sh with VADE_FLASH_ATTN=1) and
    # turns on verl's padding removal, which imports flash_attn.bert_padding on CUDA.
    attention: str = "sdpa"

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> VerlConfig:
        """``train.verl``, its types and ranges checked against the schema."""
        if values is None:   # no train.verl block: the defaults
            return cls()
        check(values, "train.verl")
        return build(cls, values)

    def __post_init__(self) -> None:
        if self.n_gpus % self.tensor_model_parallel_size:
            raise ValueError(f"train.verl.tensor_model_parallel_size = "
                             f"{self.tensor_model_parallel_size} must divide the {self.n_gpus} "
                             "GPUs")

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
