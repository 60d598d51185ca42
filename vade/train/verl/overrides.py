"""From one run's ``TrainConfig`` to the exact verl Hydra overrides of that run.

A pure mapping: every value comes from the typed, already validated ``TrainConfig`` (the run:
batch, rollouts, steps, loss, sampler, DAPO) and the ``RunSpec`` (where the model, data and
outputs are). verl's names appear only here. The overrides are the whole interface to verl: the
tests compose verl's real ``ppo_trainer`` config with every set this module emits (unknown keys
fail there), so a renamed key in a future verl shows up in CI, not on the cluster.

* Hydra's run folder is ``<out_dir>/hydra`` (Hydra's default, ``outputs/`` under the working
  directory, put every run's logs in the checkout).
* Length: ``trainer.total_training_steps`` = ``train.steps`` (verl's epoch loop is only an upper
  bound: ``total_epochs`` = steps, each epoch has at least one batch).
* GRPO: ``algorithm.adv_estimator=grpo``, PPO-clip loss (``policy_loss.loss_mode=vanilla``).
  GSPO: the same advantage, ``policy_loss.loss_mode=gspo`` with sequence-level clip ratios. The
  loss comes from ``train.grpo`` / ``train.gspo`` (``AlgoConfig``), the block the local trainer
  optimises, so the cluster and the laptop run one objective.
* Methods whose chooser is a sampler (``vade.methods``): ``VadeCurriculumSampler`` with the
  method name and the ``sampler`` section written back as ``+data.sampler.vade.*`` (the plugin
  reads it into the same ``SamplerConfig``).
* diva / vade-diva: the same plugin with DIVA's dataset, sampler and advantage
  (``vade.train.verl.diva_overrides``).
* dapo: verl-recipe's DAPO trainer through ``vade.train.verl.dapo_entry`` (dynamic sampling on
  ``acc``, the naive reward manager so only the dynamic-sampling part of DAPO differs, as in the
  paper), with the ``dapo`` section and the run's step count as ``+vade_dapo.*``; the entry
  bounds the whole run's generation by ``max_rollout_factor`` x steps x B x G.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import vade
from vade import methods
from vade.train.config import TrainConfig
from vade.train.verl.diva_overrides import apply_diva

__all__ = ["ENTRY_DAPO", "ENTRY_PPO", "METHODS_VERL", "RunSpec", "build_overrides",
           "reward_entry_path"]

ENTRY_PPO = "vade.train.verl.ppo_entry"
ENTRY_DAPO = "vade.train.verl.dapo_entry"
# every method has a verl path (DIVA's through vade.train.verl.diva_overrides) except a peer
# under DAPO's filter (GRESO): verl-recipe's DAPO trainer draws from its own dataloader, so
# GRESO's skip rule would silently not run; it runs on the local backend. Nor published MMR1:
# verl's curriculum sampler cannot generate its re-scoring rollouts, so it would silently be
# mmr1-stale (which verl runs, under its own name)
METHODS_VERL = tuple(m for m in methods.NAMES
                     if not (methods.get(m).filters and methods.get(m).chooser == "peer")
                     and m != "mmr1")
SAMPLER_CLASS_PATH = "pkg://vade.train.verl.sampler"
SAMPLER_CLASS_NAME = "VadeCurriculumSampler"
_PLAIN = re.compile(r"^[A-Za-z0-9_./:\-+@~]*$")


def reward_entry_path() -> Path:
    """verl loads the custom reward by file path: ``vade/rewards/verl_entry.py``."""
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
    """Where one run's inputs and outputs are; what it does is its ``TrainConfig``."""

    cfg: TrainConfig      # the run (name, seed, algorithm, method, ...), validated
    model: str            # model key (run id part), e.g. qwen2.5-vl-7b
    model_path: str       # HF id or local directory
    data_dir: Path        # data/<name>/ (train.parquet, val.parquet)
    out_dir: Path         # results/<name>/runs/<run_id>/
    difficulty: Path | None = None  # results/<name>/difficulty/<model>/initial.parquet

    def __post_init__(self) -> None:
        if self.cfg.method not in METHODS_VERL:
            raise ValueError(f"train.method = {self.cfg.method!r} has no verl path yet "
                             f"(verl runs: {', '.join(METHODS_VERL)})")

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def run_id(self) -> str:
        return f"{self.model}-{self.cfg.algorithm}-{self.cfg.method}-s{self.cfg.seed}"

    @property
    def entry(self) -> str:
        return ENTRY_DAPO if self.cfg.spec.shaping == "dapo" else ENTRY_PPO


def _every(k: int, steps: int) -> int:
    """verl's frequency for ``val_every`` / ``checkpoint_every``: 0 (the end only) -> steps."""
    return k if k > 0 else steps


def build_overrides(spec: RunSpec, *, tracking_uri: str | None = None,
                    experiment: str | None = None) -> list[str]:
    """The ``key=value`` list for ``python -m <spec.entry>``; paths absolute."""
    cfg, verl, algo = spec.cfg, spec.cfg.verl, spec.cfg.algo
    out_dir = Path(spec.out_dir).resolve()
    data_dir = Path(spec.data_dir).resolve()
    experiment = experiment or spec.name
    save_freq = _every(cfg.checkpoint_every, cfg.steps)
    o: dict[str, Any] = {
        # data
        "data.train_files": str(data_dir / "train.parquet"),
        "data.val_files": str(data_dir / "val.parquet"),
        "data.prompt_key": "prompt",
        "data.image_key": "images",
        "data.train_batch_size": cfg.batch_size,
        "data.max_prompt_length": verl.max_prompt_length,
        "data.max_response_length": cfg.max_new_tokens,
        "data.filter_overlong_prompts": verl.filter_overlong_prompts,
        "data.truncation": "error",
        "data.seed": cfg.seed,
        "data.dataloader_num_workers": 0,
        "data.val_max_samples": cfg.val_max_samples or -1,
        # algorithm
        "algorithm.adv_estimator": "grpo",
        "algorithm.use_kl_in_reward": False,
        "algorithm.norm_adv_by_std_in_grpo": algo.norm_adv_by_std_in_grpo,
        # model
        "actor_rollout_ref.model.path": spec.model_path,
        # padding removal packs sequences for flash-attn's varlen kernels (flash_attn.bert_padding)
        "actor_rollout_ref.model.use_remove_padding": verl.attention == "flash_attention_2",
        "actor_rollout_ref.model.enable_gradient_checkpointing": verl.gradient_checkpointing,
        # actor
        "actor_rollout_ref.actor.optim.lr": cfg.lr,
        "actor_rollout_ref.actor.optim.weight_decay": cfg.weight_decay,
        "actor_rollout_ref.actor.grad_clip": cfg.grad_clip,
        "actor_rollout_ref.actor.ppo_epochs": cfg.ppo_epochs,
        "actor_rollout_ref.actor.ppo_mini_batch_size": cfg.mini_batch_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": verl.ppo_micro_batch_size_per_gpu,
        "actor_rollout_ref.actor.use_kl_loss": algo.kl_loss_coef > 0,
        "actor_rollout_ref.actor.kl_loss_coef": algo.kl_loss_coef,
        "actor_rollout_ref.actor.kl_loss_type": algo.kl_loss_type,
        "actor_rollout_ref.actor.policy_loss.loss_mode": cfg.loss_mode,
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
        "actor_rollout_ref.rollout.n": cfg.rollouts_per_prompt,
        "actor_rollout_ref.rollout.temperature": cfg.temperature,
        "actor_rollout_ref.rollout.val_kwargs.temperature": cfg.val_temperature,
        "actor_rollout_ref.rollout.val_kwargs.n": cfg.val_n,
        "actor_rollout_ref.rollout.val_kwargs.do_sample": cfg.val_temperature > 0,
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
        "trainer.total_training_steps": cfg.steps,
        "trainer.total_epochs": cfg.steps,
        "trainer.save_freq": save_freq,
        "trainer.test_freq": _every(cfg.val_every, cfg.steps),
        "trainer.val_before_train": cfg.val_before_train,
        "trainer.critic_warmup": 0,
        "trainer.resume_mode": "auto",
        "trainer.default_local_dir": str(out_dir / "checkpoints"),
        "trainer.max_actor_ckpt_to_keep": cfg.keep_checkpoints,
        # Hydra's run folder (its .hydra/ configs and the entry's log): the run's own, not
        # outputs/<date>/<time>/ under whatever folder the launcher was started in (the checkout,
        # under Snakemake)
        "hydra.run.dir": str(out_dir / "hydra"),
    }
    appended: dict[str, Any] = {
        "actor_rollout_ref.model.override_config.attn_implementation": verl.attention}
    if cfg.spec.shaping == "dapo":
        o["algorithm.filter_groups.enable"] = True
        o["algorithm.filter_groups.metric"] = "acc"
        o["algorithm.filter_groups.max_num_gen_batches"] = cfg.dapo.max_num_gen_batches
        o["data.gen_batch_size"] = cfg.batch_size
        o["reward.reward_manager.name"] = "naive"
        # an upper bound only: the entry's generation budget ends the run
        o["trainer.total_epochs"] = math.ceil(cfg.dapo.max_rollout_factor * cfg.steps)
        o["hydra.searchpath"] = ["pkg://verl.trainer.config"]
        appended.update({f"vade_dapo.{k}": v for k, v in {
            "run_id": spec.run_id,
            "store": str(out_dir / "history.duckdb"),
            "base_steps": cfg.steps,
            "max_rollout_factor": float(cfg.dapo.max_rollout_factor),
            "stop_file": str(out_dir / "stop.json"),
            "tracking_uri": tracking_uri,
            "experiment": experiment,
        }.items()})
    else:
        o["data.sampler.class_path"] = SAMPLER_CLASS_PATH
        o["data.sampler.class_name"] = SAMPLER_CLASS_NAME
        vade_block = {
            "method": cfg.method,
            "run_id": spec.run_id,
            "store": str(out_dir / "history.duckdb"),
            "state_dir": str(out_dir / "sampler_state"),
            "seed": cfg.seed,
            **asdict(cfg.sampler),
            "keep_every": save_freq,
            "initial_difficulty": (str(Path(spec.difficulty).resolve())
                                   if spec.difficulty is not None and cfg.needs_difficulty
                                   else None),
            "tracking_uri": tracking_uri,
            "experiment": experiment,
        }
        appended.update({f"data.sampler.vade.{k}": v for k, v in vade_block.items()})
        if cfg.spec.shaping == "diva":
            apply_diva(cfg, o, appended)
    return ([f"{k}={_value(v)}" for k, v in o.items()]
            + [f"+{k}={_value(v)}" for k, v in appended.items()])
