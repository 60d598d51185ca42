"""The verl-specific configuration (``train.verl``, ``dapo``), typed and validated once.

Defaults are the paper's Table 4 (Qwen2.5-VL-3B/7B, 4 GPUs on one node): a config that says only
``train: {backend: verl}`` reproduces the paper. Every value is checked here, at the edge, so a
typo or an impossible combination (a mini-batch that does not divide the batch, a tensor-parallel
size that does not divide the GPUs) fails before a cluster job is queued, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from vade.config_io import check_bool, reject_unknown
from vade.sampling.checks import check_number
from vade.train.config import ALGORITHMS

__all__ = ["ALGORITHMS", "DapoSettings", "VerlConfig"]


@dataclass(frozen=True)
class VerlConfig:
    """``train.verl``: the verl run shape. Defaults = Table 4 of the paper. The loss (clipping,
    aggregation, KL) is not here: it is ``train.grpo`` / ``train.gspo``, shared with the local
    trainer (``vade.train.config.AlgoConfig``), so both backends optimise one objective."""

    train_batch_size: int = 512
    rollout_n: int = 8
    total_epochs: int = 15
    lr: float = 1e-6
    ppo_mini_batch_size: int = 128
    ppo_micro_batch_size_per_gpu: int = 16
    log_prob_micro_batch_size_per_gpu: int = 16
    entropy_coeff: float = 0.0
    max_prompt_length: int = 8192
    max_response_length: int = 2048
    filter_overlong_prompts: bool = True
    rollout_engine: str = "vllm"
    tensor_model_parallel_size: int = 2
    gpu_memory_utilization: float = 0.6
    temperature: float = 1.0
    n_gpus_per_node: int = 4
    nnodes: int = 1
    save_freq: int = 20
    test_freq: int = 10
    max_ckpt_to_keep: int | None = 2
    val_before_train: bool = True
    gradient_checkpointing: bool = True
    param_offload: bool = False
    optimizer_offload: bool = False

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> VerlConfig:
        values = dict(values or {})
        names = {f.name for f in fields(cls)}
        reject_unknown(values, names, "train.verl")
        out = cls(**values)
        out._validate()
        return out

    def _validate(self) -> None:
        w = "train.verl."
        ints = {"train_batch_size": (1, 1 << 20), "rollout_n": (2, 1024),
                "total_epochs": (1, 10_000), "ppo_mini_batch_size": (1, 1 << 20),
                "ppo_micro_batch_size_per_gpu": (1, 1 << 16),
                "log_prob_micro_batch_size_per_gpu": (1, 1 << 16),
                "max_prompt_length": (16, 1 << 20), "max_response_length": (1, 1 << 20),
                "tensor_model_parallel_size": (1, 64), "n_gpus_per_node": (1, 64),
                "nnodes": (1, 4096), "save_freq": (-1, 1 << 20), "test_freq": (-1, 1 << 20)}
        for key, (lo, hi) in ints.items():
            check_number(w + key, getattr(self, key), lo, hi, integer=True)
        if self.max_ckpt_to_keep is not None:
            check_number(w + "max_ckpt_to_keep", self.max_ckpt_to_keep, 1, 1 << 20, integer=True)
        check_number(w + "lr", self.lr, 0.0, 1.0, lo_open=True)
        check_number(w + "entropy_coeff", self.entropy_coeff, 0.0, 10.0)
        check_number(w + "gpu_memory_utilization", self.gpu_memory_utilization, 0.05, 0.99)
        check_number(w + "temperature", self.temperature, 0.0, 10.0, lo_open=True)
        for key in ("filter_overlong_prompts", "val_before_train", "gradient_checkpointing",
                    "param_offload", "optimizer_offload"):
            check_bool(w + key, getattr(self, key))
        if self.rollout_engine not in ("vllm", "sglang"):
            raise ValueError(f"{w}rollout_engine must be 'vllm' or 'sglang', "
                             f"got {self.rollout_engine!r}")
        if self.train_batch_size % self.ppo_mini_batch_size:
            raise ValueError(f"{w}ppo_mini_batch_size = {self.ppo_mini_batch_size} must divide "
                             f"train_batch_size = {self.train_batch_size}")
        gpus = self.n_gpus_per_node * self.nnodes
        if gpus % self.tensor_model_parallel_size:
            raise ValueError(f"{w}tensor_model_parallel_size = {self.tensor_model_parallel_size} "
                             f"must divide the {gpus} GPUs")
        if (self.ppo_mini_batch_size * self.rollout_n) % gpus:
            raise ValueError(f"{w}ppo_mini_batch_size x rollout_n = "
                             f"{self.ppo_mini_batch_size * self.rollout_n} must be divisible by "
                             f"the {gpus} GPUs (verl splits each mini-batch across ranks)")

    @property
    def n_gpus(self) -> int:
        return self.n_gpus_per_node * self.nnodes


@dataclass(frozen=True)
class DapoSettings:
    """``dapo``: the paper's cap on DAPO's generation.

    ``max_rollout_factor``: DAPO may generate at most this many times the rollouts of a
    non-filtering run of the same length (the paper: 3). ``max_num_gen_batches``: verl-recipe's
    per-step limit (0 = none; the global cap is what the paper used).
    """

    max_rollout_factor: float = 3.0
    max_num_gen_batches: int = 0

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> DapoSettings:
        values = dict(values or {})
        reject_unknown(values, {f.name for f in fields(cls)}, "dapo")
        out = cls(**values)
        check_number("dapo.max_rollout_factor", out.max_rollout_factor, 1.0, 1000.0)
        check_number("dapo.max_num_gen_batches", out.max_num_gen_batches, 0, 1 << 20,
                     integer=True)
        return out
