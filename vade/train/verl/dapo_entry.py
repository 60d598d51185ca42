"""The DAPO baseline: verl-recipe's DAPO trainer with the paper's rollout cap and our logging.

Run as ``python -m vade.train.verl.dapo_entry <overrides>`` (``vade.train.verl.launch`` does).
It is verl-recipe's own entry (``recipe.dapo.main_dapo``: its ``dapo_trainer`` config, its
``DAPOTaskRunner``, its ``RayDAPOTrainer``) with one trainer subclass swapped in. Nothing of the
recipe is copied; it must be importable as ``recipe`` (see ``vade.train.verl.recipe``).

The cap. The paper limits DAPO's generation to three times the rollouts of the other methods.
verl-recipe's only limit is per step (``max_num_gen_batches``), and it raises ``ValueError``.
Here the cap is global and enforced with verl's own mechanics: every generation batch consumes
one dataloader batch, so ``trainer.total_epochs = ceil(factor x epochs)`` makes the dataloader run
dry after factor x (steps of a normal run) generation batches, and ``total_training_steps`` (set
below to the normal run's step count, from the filtered dataset's length) ends a run that trains
all its steps first. Either way the recipe's loop ends normally; this wrapper then writes
``stop.json`` with the reason (``completed`` / ``rollout_cap``). If a per-step limit is also set
(``dapo.max_num_gen_batches`` > 0) and hit, the recipe's ``ValueError`` is caught, a checkpoint is
saved and the reason is ``max_gen_batches``: a logged stop, not a crash.

Logging. ``RayDAPOTrainer`` never calls a curriculum sampler, so the subclass records each step
in ``_update_actor`` (once per training step, on the kept batch): r and G per kept sample into the
run's DuckDB file, with ``rollouts_generated`` = generation batches of the step (the same count
as the recipe's ``train/num_gen_batches``) x gen batch size x n.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from vade.sampling.observation import Observation
from vade.train.verl.batch import group_by_sample
from vade.train.verl.rollouts import rollouts_for

__all__ = ["DapoRecorder", "capped_trainer_class", "main"]

log = logging.getLogger(__name__)
STOP_REASONS = ("completed", "rollout_cap", "max_gen_batches")


class DapoRecorder:
    """Per-step DuckDB (and MLflow) records of a DAPO run, and its stop reason."""

    def __init__(self, settings: dict[str, Any], *, sample_ids: np.ndarray, batch_size: int,
                 gen_batch_size: int, n: int) -> None:
        from vade.store import RunStore

        self.settings = settings
        self.gen_batch_size = int(gen_batch_size)
        self.n = int(n)
        self.last_gen_steps = 0
        self.last_step = 0
        self.total_gen_batches = 0
        self.store = RunStore(settings["store"], settings["run_id"])
        size = int(sample_ids.max()) + 1
        self.store.start_run(method="dapo", config={"vade_dapo": settings}, sampler_config={
            "kind": "dapo", "n_samples": size, "batch_size": int(batch_size), "seed": 0})
        self.store.log_initial_state(None, None, n_samples=size)
        self.tracker = None

    def record(self, step: int, batch: Any, gen_steps: int) -> Observation:
        """Step ``step`` trained on ``batch``; ``gen_steps`` is the trainer's running count of
        generation batches in this process (so the step's own count is the difference)."""
        gen_batches = int(gen_steps) - self.last_gen_steps
        if gen_batches < 1:
            raise ValueError(f"step {step}: generation batch counter did not advance "
                             f"({self.last_gen_steps} -> {gen_steps})")
        self.last_gen_steps = int(gen_steps)
        ev = group_by_sample(batch)
        nan = np.full(ev.ids.shape, np.nan)
        obs = Observation(step=int(step), indices=ev.ids, correct=ev.correct,
                          rollouts=ev.rollouts, p_drawn=nan, gain=nan.copy())
        generated = rollouts_for(gen_batches, self.gen_batch_size, self.n)
        self.store.log_step(obs, rollouts_generated=generated,
                            metrics={"train/num_gen_batches": float(gen_batches)})
        self.total_gen_batches += gen_batches
        self.last_step = int(step)
        self._track({"vade/effective_ratio": obs.effective_ratio,
                     "vade/rollouts_generated": float(generated)}, int(step))
        return obs

    def _track(self, metrics: dict[str, float], step: int) -> None:
        uri = self.settings.get("tracking_uri")
        if not uri:
            return
        try:
            if self.tracker is None:
                from vade.tracking import Tracker

                self.tracker = Tracker(uri, self.settings.get("experiment") or "vade",
                                       self.settings["run_id"])
            self.tracker.log_metrics(metrics, step)
        except Exception as exc:  # noqa: BLE001 - tracking must not stop training
            log.warning("MLflow logging disabled after error: %s", exc)
            self.settings = dict(self.settings, tracking_uri=None)

    def finish(self, reason: str, total_training_steps: int) -> dict[str, Any]:
        if reason not in STOP_REASONS:
            raise ValueError(f"unknown stop reason {reason!r}")
        info = {"reason": reason, "steps_trained": self.last_step,
                "total_training_steps": int(total_training_steps),
                "gen_batches_this_attempt": self.total_gen_batches}
        path = Path(self.settings["stop_file"])
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(info, indent=2))
        os.replace(tmp, path)
        if self.tracker is not None:
            try:
                self.tracker.set_tags({"vade.stop_reason": reason})
            except Exception as exc:  # noqa: BLE001 - a missing tag must not fail the run
                log.warning("could not tag the MLflow run: %s", exc)
        log.warning("DAPO run stopped: %s", info)
        self.store.close()
        return info


def capped_trainer_class(base: type) -> type:
    """``base`` (the recipe's ``RayDAPOTrainer``) with the global cap, recording and clean stop."""

    class CappedDAPOTrainer(base):  # type: ignore[misc, valid-type]
        def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
            from vade.train.verl.difficulty import dataset_sample_ids

            cap = config.vade_dapo
            dataset = kwargs["train_dataset"]
            gen_bsz = int(config.data.get("gen_batch_size") or config.data.train_batch_size)
            steps = (len(dataset) // int(config.data.train_batch_size)) * int(cap.base_epochs)
            expected = math.ceil(float(cap.max_rollout_factor) * int(cap.base_epochs))
            if int(config.trainer.total_epochs) != expected:
                raise ValueError(f"trainer.total_epochs = {config.trainer.total_epochs}, but the "
                                 f"rollout cap needs {expected} (= ceil(factor x epochs))")
            config.trainer.total_training_steps = steps
            super().__init__(config, *args, **kwargs)
            self._vade = DapoRecorder(dict(cap), sample_ids=dataset_sample_ids(dataset),
                                      batch_size=int(config.data.train_batch_size),
                                      gen_batch_size=gen_bsz,
                                      n=int(config.actor_rollout_ref.rollout.n))

        def _update_actor(self, batch: Any) -> Any:
            out = super()._update_actor(batch)
            self._vade.record(self.global_steps, batch, self.gen_steps)
            return out

        def fit(self) -> None:
            try:
                super().fit()
            except ValueError as exc:
                if "Generated too many" not in str(exc):
                    raise
                self._save_checkpoint()
                reason = "max_gen_batches"
            else:
                done = self._vade.last_step >= self.total_training_steps
                reason = "completed" if done else "rollout_cap"
            self._vade.finish(reason, self.total_training_steps)

    return CappedDAPOTrainer


def _task_runner_class() -> type:
    from recipe.dapo.main_dapo import DAPOTaskRunner

    class VadeDAPOTaskRunner(DAPOTaskRunner):
        def run(self, config: Any) -> None:
            # DAPOTaskRunner.run imports RayDAPOTrainer from this module at call time (inside
            # the Ray actor), so the capped subclass is installed here, in that process.
            import recipe.dapo.dapo_ray_trainer as trainer_module

            if not getattr(trainer_module.RayDAPOTrainer, "_vade_capped", False):
                capped = capped_trainer_class(trainer_module.RayDAPOTrainer)
                capped._vade_capped = True
                trainer_module.RayDAPOTrainer = capped
            super().run(config)

    return VadeDAPOTaskRunner


def recipe_config_dir() -> Path:
    from recipe.dapo import main_dapo

    return Path(main_dapo.__file__).resolve().parent / "config"


def main() -> None:
    import hydra
    import ray
    from verl.experimental.reward_loop import migrate_legacy_reward_impl
    from verl.trainer.main_ppo import run_ppo
    from verl.utils.device import auto_set_device

    def _run(config: Any) -> None:
        auto_set_device(config)
        config = migrate_legacy_reward_impl(config)
        run_ppo(config, task_runner_class=ray.remote(num_cpus=1)(_task_runner_class()))

    hydra.main(config_path=str(recipe_config_dir()), config_name="dapo_trainer",
               version_base=None)(_run)()


if __name__ == "__main__":
    main()
