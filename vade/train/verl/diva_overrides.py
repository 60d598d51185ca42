"""The Hydra overrides that turn a VADE/vanilla cell into a DIVA-GRPO cell (``diva``, ``vade-diva``).

``vade.train.verl.overrides.build_overrides`` writes a cell's overrides as for any sampler method;
for a DIVA method it then calls ``apply_diva`` on them, which changes only what DIVA changes:

* ``data.custom_cls`` -> ``vade.train.verl.diva_dataset.DivaDataset`` (variant rows from encoded
  indices) and ``data.sampler.class_*`` -> ``DivaCurriculumSampler``;
* ``data.train_batch_size`` = 2 x B rows (B = ``train.batch_size`` originals, each
  beside one variant) and ``ppo_mini_batch_size`` doubled with it, so a step takes as many
  optimizer steps as a non-DIVA step of the same B (each mini-batch holds originals and
  variants, as the reference run's did);
* ``data.sampler.vade.method`` = the sampler that chooses the originals (``vanilla`` for
  ``diva``, ``vade`` for ``vade-diva``), ``+data.sampler.diva.method`` = the DIVA method (what the
  run's history calls it);
* ``algorithm.adv_estimator=diva`` and ``+algorithm.diva.{k, low_reward, low_reward_scale}``
  from the project's ``diva`` section (``vade.train.config.DivaConfig``), read by
  ``vade.train.verl.diva_advantage``.
"""

from __future__ import annotations

from typing import Any

from vade.train.config import TrainConfig

__all__ = ["DATASET_CLASS_NAME", "DATASET_CLASS_PATH", "SAMPLER_CLASS_NAME",
           "SAMPLER_CLASS_PATH", "apply_diva"]

DATASET_CLASS_PATH = "pkg://vade.train.verl.diva_dataset"
DATASET_CLASS_NAME = "DivaDataset"
SAMPLER_CLASS_PATH = "pkg://vade.train.verl.diva_sampler"
SAMPLER_CLASS_NAME = "DivaCurriculumSampler"


def apply_diva(cfg: TrainConfig, overrides: dict[str, Any], appended: dict[str, Any]) -> None:
    """Turn one cell's ``overrides`` / ``appended`` (``key -> value``; ``appended`` keys are
    written with a leading ``+``) into the DIVA cell of ``cfg.method``, in place."""
    if cfg.spec.shaping != "diva":
        raise ValueError(f"train.method = {cfg.method!r} is not a DIVA method")
    overrides["data.custom_cls.path"] = DATASET_CLASS_PATH
    overrides["data.custom_cls.name"] = DATASET_CLASS_NAME
    overrides["data.sampler.class_path"] = SAMPLER_CLASS_PATH
    overrides["data.sampler.class_name"] = SAMPLER_CLASS_NAME
    overrides["data.train_batch_size"] = 2 * cfg.batch_size
    overrides["actor_rollout_ref.actor.ppo_mini_batch_size"] = 2 * cfg.mini_batch_size
    overrides["algorithm.adv_estimator"] = "diva"
    appended["data.sampler.vade.method"] = cfg.sampler_method
    appended["data.sampler.diva.method"] = cfg.method
    appended["algorithm.diva.k"] = float(cfg.diva.k)
    appended["algorithm.diva.low_reward"] = float(cfg.diva.low_reward)
    appended["algorithm.diva.low_reward_scale"] = float(cfg.diva.low_reward_scale)
