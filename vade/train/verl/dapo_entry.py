"""The DAPO baseline: verl-recipe's DAPO trainer with the paper's rollout cap and our logging.

Run as ``python -m vade.train.verl.dapo_entry <overrides>`` (``vade.train.verl.launch`` does).
It is verl-recipe's own entry (``recipe.dapo.main_dapo``: its ``dapo_trainer`` config, its
``DAPOTaskRunner``, its ``RayDAPOTrainer``) with one trainer subclass swapped in. Nothing of the
recipe is copied; it must be importable as ``recipe`` (see ``vade.train.verl.recipe``). The
subclass only overrides hooks (``_load_checkpoint``, ``_save_checkpoint``, ``_update_actor``)
and wraps ``fit``; the recipe's loop itself runs unchanged.

The cap. The paper limits DAPO's generation to three times the rollouts of the other methods.
verl-recipe's only limit is per step (``max_num_gen_batches``), and it raises ``ValueError``.
Here the cap is global: the train dataloader is wrapped in ``vade.train.verl.dapo_cap.
BudgetedLoader``, which counts generation batches over the whole run (saved in verl's ``data.pt``
with the dataloader state, so it survives a resume) and ends iteration when the budget cannot pay
for another batch; ``total_training_steps`` (set to the normal run's step count) ends a run that
trains all its steps first. The epoch count (``ceil(factor x steps)`` from the overrides) is
raised so that it never binds before the budget. Either way the recipe's loop ends normally;
this wrapper then

* charges the generation batches of the last, unfinished step (drawn, rolled out, never trained
  on) to the last trained step in the history (``train/num_gen_batches_unfinished``);
* names the final checkpoint after the last *trained* step (the recipe names it
  ``global_step_<k+1>`` after k trained steps), so ``steps_trained`` in ``stop.json`` and the
  checkpoint agree;
* runs a final validation when the last trained step had none (the recipe validates only at
  ``test_freq`` and at ``total_training_steps``), appended to verl's file log at that step and
  sent to MLflow;
* writes ``stop.json`` with the reason (``completed`` / ``rollout_cap`` / ``max_gen_batches``)
  and the counts.

If a per-step limit is also set (``dapo.max_num_gen_batches`` > 0) and hit, the recipe's
``ValueError`` is caught, a checkpoint is saved and the reason is ``max_gen_batches``: a logged
stop, not a crash.

Logging. ``RayDAPOTrainer`` never calls a curriculum sampler, so the subclass records each step
in ``_update_actor`` (once per training step, on the kept batch): r and G per kept sample into the
run's DuckDB file, with ``rollouts_generated`` = generation batches of the step (the same count
as the recipe's ``train/num_gen_batches``) x gen batch size x n. On resume the history after the
checkpoint's step is deleted (that attempt's later steps are replayed).
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
from vade.store import RunStore
from vade.train.recorder import RunRecorder, reopen_by_name
from vade.train.verl import timelimit
from vade.train.verl.batch import group_by_sample
from vade.train.verl.dapo_cap import BudgetedLoader, generation_budget
from vade.train.verl.difficulty import dataset_sample_ids
from vade.train.verl.ppo_entry import run_hydra
from vade.train.verl.rollouts import GEN_BATCHES, append_metric_record, rollouts_for
from vade.train.verl.timelimit import stop_if_due
from vade.train.verl.validated import write_validated_counts

__all__ = ["DapoRecorder", "capped_trainer_class", "main"]

log = logging.getLogger(__name__)
STOP_REASONS = ("completed", "rollout_cap", "max_gen_batches")
UNFINISHED = "train/num_gen_batches_unfinished"


class DapoRecorder(RunRecorder):
    """Per-step DuckDB (and MLflow, verl's run reopened) records of a DAPO run, and its stop
    reason.

    ``counted`` is the run's generation-batch counter (``BudgetedLoader.used``) as of the last
    recorded step: a step's own count is the difference.
    """

    def __init__(self, settings: dict[str, Any], *, sample_ids: np.ndarray, batch_size: int,
                 gen_batch_size: int, n: int) -> None:
        self.settings = settings
        self.gen_batch_size = int(gen_batch_size)
        self.n = int(n)
        self.counted = 0
        self.last_step = 0
        store = RunStore(settings["store"], settings["run_id"])
        super().__init__(store, reopen_by_name(settings.get("tracking_uri"),
                                               settings.get("experiment"), settings["run_id"]))
        size = int(sample_ids.max()) + 1
        store.start_run(method="dapo", config={"vade_dapo": settings}, sampler_config={
            "kind": "dapo", "n_samples": size, "batch_size": int(batch_size), "seed": 0})
        store.log_initial_state(None, None, n_samples=size)

    def resume(self, step: int, gen_batches_used: int) -> None:
        """Continue after the checkpoint of ``step`` (0: a fresh start): forget later steps."""
        self.store.truncate_after(int(step))
        self.last_step = int(step)
        self.counted = int(gen_batches_used)

    def gen_batches_through(self, step: int) -> int:
        """Generation batches the history records for steps <= ``step`` (for checkpoints
        written before the count was saved with them)."""
        row = self.store.con.execute(
            "SELECT coalesce(sum(value), 0) FROM metrics WHERE run_id = ? AND step <= ? "
            "AND name IN (?, ?)", [self.store.run_id, int(step), GEN_BATCHES, UNFINISHED]
        ).fetchone()
        return int(row[0])

    def record(self, step: int, batch: Any, gen_batches_used: int) -> Observation:
        """Step ``step`` trained on ``batch`` after ``gen_batches_used`` generation batches in
        the whole run."""
        gen_batches = int(gen_batches_used) - self.counted
        if gen_batches < 1:
            raise ValueError(f"step {step}: generation batch counter did not advance "
                             f"({self.counted} -> {gen_batches_used})")
        self.counted = int(gen_batches_used)
        ev = group_by_sample(batch)
        nan = np.full(ev.ids.shape, np.nan)
        obs = Observation(step=int(step), indices=ev.ids, correct=ev.correct,
                          rollouts=ev.rollouts, p_drawn=nan, gain=nan.copy())
        generated = rollouts_for(gen_batches, self.gen_batch_size, self.n)
        self.log_step(obs, {"vade/effective_ratio": obs.effective_ratio,
                            "vade/rollouts_generated": float(generated)},
                      rollouts_generated=generated,
                      store_metrics={GEN_BATCHES: float(gen_batches)})
        self.last_step = int(step)
        return obs

    def finish(self, reason: str, total_training_steps: int, *, gen_batches_used: int,
               gen_batch_limit: int) -> dict[str, Any]:
        """Charge the unfinished step's batches, write ``stop.json``, close the history."""
        if reason not in STOP_REASONS:
            raise ValueError(f"unknown stop reason {reason!r}")
        used = int(gen_batches_used)
        unfinished = used - self.counted
        if unfinished < 0:
            raise ValueError(f"generation batch counter went back ({self.counted} -> {used})")
        per_batch = self.gen_batch_size * self.n
        if unfinished and self.last_step > 0:
            self.store.add_rollouts(self.last_step, unfinished * per_batch,
                                    {UNFINISHED: float(unfinished)})
            self.counted = used
        info = {"reason": reason, "steps_trained": self.last_step,
                "total_training_steps": int(total_training_steps),
                "gen_batches_used": used, "gen_batches_unfinished": unfinished,
                "gen_batch_limit": int(gen_batch_limit),
                "rollouts_generated": used * per_batch,
                "rollout_budget_batches": int(gen_batch_limit) * per_batch}
        path = Path(self.settings["stop_file"])
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(info, indent=2))
        os.replace(tmp, path)
        self.set_tags({"vade.stop_reason": reason})
        log.warning("DAPO run stopped: %s", info)
        self.close()
        return info


def capped_trainer_class(base: type) -> type:
    """``base`` (the recipe's ``RayDAPOTrainer``) with the global cap, recording and clean stop."""

    class CappedDAPOTrainer(base):  # type: ignore[misc, valid-type]
        def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
            cap = config.vade_dapo
            dataset = kwargs["train_dataset"]
            bsz = int(config.data.train_batch_size)
            gen_bsz = int(config.data.get("gen_batch_size") or bsz)
            n = int(config.actor_rollout_ref.rollout.n)
            config.trainer.total_training_steps = int(cap.base_steps)
            super().__init__(config, *args, **kwargs)
            _, limit = generation_budget(train_batch_size=bsz, gen_batch_size=gen_bsz, n=n,
                                         base_steps=int(cap.base_steps),
                                         factor=float(cap.max_rollout_factor))
            self.train_dataloader = BudgetedLoader(self.train_dataloader, limit)
            # the budget, not the epoch loop, is the bound (also on resume, where the recipe
            # restarts its epoch count from training steps)
            per_epoch = max(len(self.train_dataloader), 1)
            self.config.trainer.total_epochs = max(int(self.config.trainer.total_epochs),
                                                   math.ceil(limit / per_epoch) + 1)
            self._vade = DapoRecorder(dict(cap), sample_ids=dataset_sample_ids(dataset),
                                      batch_size=bsz, gen_batch_size=gen_bsz, n=n)

            write_validated_counts(self)  # the rows verl validates (pooled val/acc weights)

        def _load_checkpoint(self) -> Any:
            out = super()._load_checkpoint()
            loader = self.train_dataloader
            if loader.used is None:
                loader.used = self._vade.gen_batches_through(self.global_steps)
                log.warning("checkpoint of step %d has no generation batch count: %d from the "
                            "history", self.global_steps, loader.used)
            self._vade.resume(self.global_steps, loader.used)
            return out

        def _save_checkpoint(self) -> Any:
            # stopped inside a step that never trained: the weights are those of the last
            # trained step, and so is the checkpoint's name

            self.global_steps = min(self.global_steps, self._vade.last_step)
            out = super()._save_checkpoint()
            stop_if_due(self.global_steps)   # the time limit's checkpoint: end fit here
            return out

        def _update_actor(self, batch: Any) -> Any:
            out = super()._update_actor(batch)
            self._vade.record(self.global_steps, batch, self.train_dataloader.used)
            return out

        def _final_validation(self) -> None:
            step = self._vade.last_step
            freq = int(self.config.trainer.get("test_freq", -1) or -1)
            if step < 1 or freq <= 0 or step % freq == 0:
                return  # nothing trained, validation off, or step already validated
            metrics = self._validate()
            path = os.environ.get("VERL_FILE_LOGGER_PATH")
            if path and "file" in list(self.config.trainer.logger):
                append_metric_record(path, step, metrics)
            self._vade.log_metrics({k: float(v) for k, v in metrics.items()
                              if isinstance(v, (int, float, np.floating))}, step)

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
            if reason != "completed":
                self._final_validation()
            self._vade.finish(reason, self.total_training_steps,
                              gen_batches_used=self.train_dataloader.used,
                              gen_batch_limit=self.train_dataloader.limit)

    return CappedDAPOTrainer


def _task_runner_class() -> type:
    from recipe.dapo.main_dapo import DAPOTaskRunner  # lazy: verl-recipe: the train-verl env only

    class VadeDAPOTaskRunner(DAPOTaskRunner):
        def run(self, config: Any) -> None:
            # DAPOTaskRunner.run imports RayDAPOTrainer from this module at call time (inside
            # the Ray actor), so the capped subclass is installed here, in that process.
            # lazy: verl-recipe: the train-verl env only
            import recipe.dapo.dapo_ray_trainer as trainer_module

            timelimit.install(trainer_module)   # the recipe's expiration check, from SLURM
            if not getattr(trainer_module.RayDAPOTrainer, "_vade_capped", False):
                capped = capped_trainer_class(trainer_module.RayDAPOTrainer)
                capped._vade_capped = True
                trainer_module.RayDAPOTrainer = capped
            super().run(config)

    return VadeDAPOTaskRunner


def recipe_config_dir() -> Path:
    from recipe.dapo import main_dapo  # lazy: verl-recipe: the train-verl env only

    return Path(main_dapo.__file__).resolve().parent / "config"


def main() -> None:
    run_hydra(recipe_config_dir(), "dapo_trainer", _task_runner_class, "vade.train.verl.dapo_entry")


if __name__ == "__main__":
    main()
