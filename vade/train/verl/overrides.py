"""From the project config to the exact verl Hydra overrides of one Table-1/Table-2 cell.

One cell = model x algorithm x method x seed. The overrides are the whole interface to verl: the
tests compose verl's real ``ppo_trainer`` config with every set this module emits (unknown keys
fail there), so a renamed key in a future verl shows up in CI, not on the cluster.

* GRPO: ``algorithm.adv_estimator=grpo``, PPO-clip loss (``policy_loss.loss_mode=vanilla``).
* GSPO: the same advantage, ``policy_loss.loss_mode=gspo`` with sequence-level clip ratios.
* The loss of either comes from ``train.grpo`` / ``train.gspo`` (``AlgoConfig``: clip ratios, dual
  clip, aggregation, KL loss, std normalisation), the block the local trainer optimises, so the
  cluster and the laptop run one objective. Table 4's KL loss (0.01) is the default of both: the
  paper states that all runs share one setting.
* vanilla / vade / ablations: ``VadeCurriculumSampler`` with the method name (vanilla = uniform
  epochs through the same plugin, so every method logs the same DuckDB history).
* dapo: verl-recipe's DAPO trainer through ``vade.train.verl.dapo_entry`` (dynamic sampling on
  ``acc``, the naive reward manager so only the dynamic-sampling part of DAPO differs, as in the
  paper), ``total_epochs`` = cap x epochs so the dataloader runs dry at the rollout cap; the
  entry sets ``total_training_steps`` to the non-filtering run's length.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vade.sampling import METHODS
from vade.train.config import DIVA_METHODS, AlgoConfig, DivaConfig
from vade.train.verl.config import ALGORITHMS, DapoSettings, VerlConfig

__all__ = ["ENTRY_DAPO", "ENTRY_PPO", "METHODS_VERL", "RunSpec", "build_overrides",
           "reward_entry_path"]

ENTRY_PPO = "vade.train.verl.ppo_entry"
ENTRY_DAPO = "vade.train.verl.dapo_entry"
METHODS_VERL = tuple(METHODS) + ("dapo", *DIVA_METHODS)
SAMPLER_CLASS_PATH = "pkg://vade.train.verl.sampler"
SAMPLER_CLASS_NAME = "VadeCurriculumSampler"
_PLAIN = re.compile(r"^[A-Za-z0-9_./:\-+@~]*$")


def reward_entry_path() -> Path:
    """verl loads the custom reward by file path: ``vade/rewards/verl_entry.py``."""
    import vade

    return Path(vade.__file__).resolve().parent / "rewards" / "verl_entry.py"


def _value(v: Any) -> str:
    """A Hydra override value: bools/None spelled Hydra's way, odd strings quoted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_value(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    text = str(v)
    if _PLAIN.match(text) and text not in ("true", "false", "null", ""):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class RunSpec:
    """One cell of the experiment grid, with its inputs and outputs (absolute paths)."""

    name: str             # experiment name (config ``name``)
    model: str            # model key (run id part), e.g. qwen2.5-vl-7b
    model_path: str       # HF id or local directory
    algorithm: str
    method: str
    seed: int
    data_dir: Path        # data/<name>/ (train.parquet, val.parquet)
    out_dir: Path         # results/<name>/runs/<run_id>/
    difficulty: Path | None = None  # results/<name>/difficulty/initial.parquet

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.method not in METHODS_VERL:
            raise ValueError(f"method must be one of {METHODS_VERL}, got {self.method!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")

    @property
    def run_id(self) -> str:
        return f"{self.model}-{self.algorithm}-{self.method}-s{self.seed}"

    @property
    def entry(self) -> str:
        return ENTRY_DAPO if self.method == "dapo" else ENTRY_PPO


def build_overrides(spec: RunSpec, verl: VerlConfig, algo: AlgoConfig, *,
                    sampler: dict[str, Any] | None = None, dapo: DapoSettings | None = None,
                    tracking_uri: str | None = None, experiment: str | None = None,
                    diva: DivaConfig | None = None) -> list[str]:
    """The ``key=value`` list for ``python -m <spec.entry>``; paths absolute. ``algo`` is the
    run's algorithm block (``vade.train.config.algo_config(train, spec.algorithm)``)."""
    sampler = dict(sampler or {})
    dapo = dapo or DapoSettings()
    out_dir = Path(spec.out_dir).resolve()
    data_dir = Path(spec.data_dir).resolve()
    experiment = experiment or spec.name
    o: dict[str, Any] = {
        # data
        "data.train_files": str(data_dir / "train.parquet"),
        "data.val_files": str(data_dir / "val.parquet"),
        "data.prompt_key": "prompt",
        "data.image_key": "images",
        "data.train_batch_size": verl.train_batch_size,
        "data.max_prompt_length": verl.max_prompt_length,
        "data.max_response_length": verl.max_response_length,
        "data.filter_overlong_prompts": verl.filter_overlong_prompts,
        "data.truncation": "error",
        "data.seed": spec.seed,
        "data.dataloader_num_workers": 0,
        # algorithm
        "algorithm.adv_estimator": "grpo",
        "algorithm.use_kl_in_reward": False,
        "algorithm.norm_adv_by_std_in_grpo": algo.norm_adv_by_std_in_grpo,
        # model
        "actor_rollout_ref.model.path": spec.model_path,
        "actor_rollout_ref.model.use_remove_padding": True,
        "actor_rollout_ref.model.enable_gradient_checkpointing": verl.gradient_checkpointing,
        # actor
        "actor_rollout_ref.actor.optim.lr": verl.lr,
        "actor_rollout_ref.actor.ppo_mini_batch_size": verl.ppo_mini_batch_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": verl.ppo_micro_batch_size_per_gpu,
        "actor_rollout_ref.actor.use_kl_loss": algo.kl_loss_coef > 0,
        "actor_rollout_ref.actor.kl_loss_coef": algo.kl_loss_coef,
        "actor_rollout_ref.actor.kl_loss_type": algo.kl_loss_type,
        "actor_rollout_ref.actor.policy_loss.loss_mode":
            "gspo" if spec.algorithm == "gspo" else "vanilla",
        "actor_rollout_ref.actor.loss_agg_mode": algo.loss_agg_mode,
        "actor_rollout_ref.actor.clip_ratio_low": algo.clip_ratio_low,
        "actor_rollout_ref.actor.clip_ratio_high": algo.clip_ratio_high,
        "actor_rollout_ref.actor.clip_ratio_c": algo.clip_ratio_c,
        "actor_rollout_ref.actor.entropy_coeff": verl.entropy_coeff,
        "actor_rollout_ref.actor.fsdp_config.param_offload": verl.param_offload,
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": verl.optimizer_offload,
        # hf_model: each checkpoint also holds a save_pretrained copy (final/ is copied from it)
        "actor_rollout_ref.actor.checkpoint.save_contents": ["model", "optimizer", "extra",
                                                             "hf_model"],
        "actor_rollout_ref.actor.checkpoint.load_contents": ["model", "optimizer", "extra"],
        # rollout
        "actor_rollout_ref.rollout.name": verl.rollout_engine,
        "actor_rollout_ref.rollout.n": verl.rollout_n,
        "actor_rollout_ref.rollout.temperature": verl.temperature,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": verl.tensor_model_parallel_size,
        "actor_rollout_ref.rollout.gpu_memory_utilization": verl.gpu_memory_utilization,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu":
            verl.log_prob_micro_batch_size_per_gpu,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu":
            verl.log_prob_micro_batch_size_per_gpu,
        "actor_rollout_ref.ref.fsdp_config.param_offload": True,
        # reward: vade.rewards, binary correctness in reward_extra_info["acc"]
        "reward.custom_reward_function.path": str(reward_entry_path()),
        "reward.custom_reward_function.name": "compute_score",
        # trainer
        "trainer.logger": ["console", "mlflow", "file"],
        "trainer.project_name": experiment,
        "trainer.experiment_name": spec.run_id,
        "trainer.n_gpus_per_node": verl.n_gpus_per_node,
        "trainer.nnodes": verl.nnodes,
        "trainer.total_epochs": verl.total_epochs,
        "trainer.save_freq": verl.save_freq,
        "trainer.test_freq": verl.test_freq,
        "trainer.val_before_train": verl.val_before_train,
        "trainer.critic_warmup": 0,
        "trainer.resume_mode": "auto",
        "trainer.default_local_dir": str(out_dir / "checkpoints"),
        "trainer.max_actor_ckpt_to_keep": verl.max_ckpt_to_keep,
    }
    appended: dict[str, Any] = {}
    if spec.method == "dapo":
        o["algorithm.filter_groups.enable"] = True
        o["algorithm.filter_groups.metric"] = "acc"
        o["algorithm.filter_groups.max_num_gen_batches"] = dapo.max_num_gen_batches
        o["data.gen_batch_size"] = verl.train_batch_size
        o["reward.reward_manager.name"] = "naive"
        o["trainer.total_epochs"] = math.ceil(dapo.max_rollout_factor * verl.total_epochs)
        o["hydra.searchpath"] = ["pkg://verl.trainer.config"]
        appended = {f"vade_dapo.{k}": v for k, v in {
            "run_id": spec.run_id,
            "store": str(out_dir / "history.duckdb"),
            "base_epochs": verl.total_epochs,
            "max_rollout_factor": float(dapo.max_rollout_factor),
            "stop_file": str(out_dir / "stop.json"),
            "tracking_uri": tracking_uri,
            "experiment": experiment,
        }.items()}
    else:
        o["data.sampler.class_path"] = SAMPLER_CLASS_PATH
        o["data.sampler.class_name"] = SAMPLER_CLASS_NAME
        vade_block = {
            "method": spec.method,
            "run_id": spec.run_id,
            "store": str(out_dir / "history.duckdb"),
            "state_dir": str(out_dir / "sampler_state"),
            "seed": spec.seed,
            "lambda1": float(sampler.get("lambda1", 0.2)),
            "lambda2": float(sampler.get("lambda2", 0.999)),
            "snapshot_every": int(sampler.get("snapshot_every", 0)),
            "keep_every": max(verl.save_freq, 0),
            "initial_difficulty": (str(Path(spec.difficulty).resolve())
                                   if spec.difficulty is not None and spec.method != "vanilla"
                                   else None),
            "tracking_uri": tracking_uri,
            "experiment": experiment,
        }
        appended = {f"data.sampler.vade.{k}": v for k, v in vade_block.items()}
        if spec.method in DIVA_METHODS:  # variant rows, 2B rows a step, DIVA's advantage
            from vade.train.verl.diva_overrides import apply_diva

            apply_diva(spec.method, o, appended, diva)
    return ([f"{k}={_value(v)}" for k, v in o.items()]
            + [f"+{k}={_value(v)}" for k, v in appended.items()])
