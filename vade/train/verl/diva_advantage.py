"""DIVA-GRPO's advantage on verl 0.7.1: ``algorithm.adv_estimator=diva``.

Why not a plain registered estimator: verl 0.7.1's ``compute_advantage``
(``verl/trainer/ppo/ray_trainer.py``) hands a registered estimator only ``token_level_rewards``,
``response_mask``, ``index`` (the per-prompt ``uid`` that ``fit`` draws at random) and the
``algorithm`` config; non-tensor data reaches GDPO only. DIVA's advantage needs each response's
global group (the original's sample id, ``extra_info.index``, shared by the original and its
variant) and its level (``extra_info.diva_level``), both non-tensor.

So the seam is the function itself: ``install()`` replaces ``ray_trainer.compute_advantage``
(the module global ``RayPPOTrainer.fit`` calls) with a wrapper that, for ``adv_estimator ==
"diva"``, computes the advantage from the whole batch (``diva_batch_advantages``) and hands
every other estimator to verl's function unchanged. ``vade.train.verl.ppo_entry.install`` calls
it in the task runner's process, where ``fit`` runs. ``diva`` is also registered with verl's
``register_adv_est`` so the name is known to verl's registry; reached without the wrapper it
raises instead of training on something else.

The numbers are ``vade.diva.diva_advantages`` (the numpy function the local trainer uses), on
the sequence reward (``token_level_rewards`` summed over the response, as verl's GRPO does),
local group = verl's ``uid`` (one prompt's rollouts), global group = ``extra_info.index``,
level = ``extra_info.diva_level``; the per-response value is broadcast over the response mask,
as verl does for GRPO, and ``returns`` = ``advantages``. ``k``, ``low_reward`` and
``low_reward_scale`` come from ``algorithm.diva`` (the project's ``diva`` section).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vade.diva import diva_advantages

__all__ = ["ESTIMATOR", "diva_batch_advantages", "diva_params", "install", "installed"]

ESTIMATOR = "diva"
_FLAG = "_vade_diva_wrapper"
_DEFAULTS = {"k": 0.1, "low_reward": 0.15, "low_reward_scale": 0.1}


def _register() -> None:
    from verl.trainer.ppo import core_algos  # lazy: verl: the train-verl env only

    if ESTIMATOR in core_algos.ADV_ESTIMATOR_REGISTRY:
        return

    @core_algos.register_adv_est(ESTIMATOR)
    def _diva_needs_the_batch(**_: Any) -> Any:
        raise RuntimeError(
            "algorithm.adv_estimator=diva needs the batch's non-tensor data (global group, "
            "level), which verl's registry does not pass: run through vade.train.verl.ppo_entry "
            "(or call vade.train.verl.diva_advantage.install() in the trainer's process)")


def diva_params(config: Any) -> dict[str, float]:
    """``algorithm.diva`` (k, low_reward, low_reward_scale), defaults where absent."""
    block = config.get("diva") if config is not None and hasattr(config, "get") else None
    out = dict(_DEFAULTS)
    if block is not None:
        for key in _DEFAULTS:
            value = block.get(key) if hasattr(block, "get") else None
            if value is not None:
                out[key] = float(value)
    return out


def _column(infos: np.ndarray, key: str) -> np.ndarray:
    values = []
    for row, info in enumerate(infos):
        value = info.get(key) if hasattr(info, "get") else None
        if value is None:
            raise ValueError(f"batch row {row}: extra_info has no {key!r} (DIVA rows come from "
                             "vade.train.verl.diva_dataset.DivaDataset: set data.custom_cls)")
        values.append(value)
    return np.asarray(values)


def diva_batch_advantages(data: Any, config: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), each (rows, response length): DIVA's per-response advantage on
    ``data`` (a verl ``DataProto`` after rewards), broadcast over ``response_mask``."""
    rewards = data.batch["token_level_rewards"]
    mask = data.batch["response_mask"]
    scores = rewards.sum(dim=-1).detach().cpu().double().numpy()
    infos = data.non_tensor_batch["extra_info"]
    adv = diva_advantages(scores, np.asarray(data.non_tensor_batch["uid"]),
                          _column(infos, "index").astype(np.int64),
                          _column(infos, "diva_level").astype(float), **diva_params(config))
    per_row = torch.as_tensor(adv, dtype=rewards.dtype, device=rewards.device)
    advantages = per_row.unsqueeze(-1) * mask
    return advantages, advantages


def _wrap(original: Any) -> Any:
    def compute_advantage(data: Any, adv_estimator: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(adv_estimator, "value", adv_estimator)
        if name != ESTIMATOR:
            return original(data, adv_estimator, *args, **kwargs)
        if "response_mask" not in data.batch.keys():  # noqa: SIM118 - a TensorDict, as in verl
            # lazy: verl: the train-verl env only
            from verl.trainer.ppo.ray_trainer import compute_response_mask

            data.batch["response_mask"] = compute_response_mask(data)
        config = kwargs.get("config", args[4] if len(args) > 4 else None)
        data.batch["advantages"], data.batch["returns"] = diva_batch_advantages(data, config)
        return data

    setattr(compute_advantage, _FLAG, original)
    compute_advantage.__doc__ = ("verl's compute_advantage, with adv_estimator=diva computed by "
                                 "vade.train.verl.diva_advantage")
    return compute_advantage


def installed() -> bool:
    """Is the wrapper in place in this process?"""
    from verl.trainer.ppo import ray_trainer  # lazy: verl: the train-verl env only

    return hasattr(ray_trainer.compute_advantage, _FLAG)


def install() -> None:
    """Register ``diva`` and wrap ``ray_trainer.compute_advantage`` once per process."""
    from verl.trainer.ppo import ray_trainer  # lazy: verl: the train-verl env only

    _register()
    if not installed():
        ray_trainer.compute_advantage = _wrap(ray_trainer.compute_advantage)
