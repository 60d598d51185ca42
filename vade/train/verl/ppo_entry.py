"""verl's PPO entry with one change: the VADE sampler observes each batch before the checkpoint.

Run as ``python -m vade.train.verl.ppo_entry <overrides>`` (``vade.train.verl.launch`` does, for
every method except DAPO). It is ``verl.trainer.main_ppo`` itself (its Hydra config
``ppo_trainer``, its ``TaskRunner``, ``run_ppo``) with ``RayPPOTrainer`` replaced, inside the
task runner's process, by a subclass that overrides one hook.

Why. verl 0.7.1's ``fit`` saves the checkpoint of step k (``data.pt`` with the sampler's state)
after the actor update and before it calls ``sampler.update(batch)``. A job killed in between
(preemption, the 48 h limit) resumes from a checkpoint whose policy was trained on step k but
whose sampler never saw step k's rewards: that evidence is lost, and the run's selections and
history diverge from an uninterrupted run. The subclass calls ``sampler.update(batch)`` right
after ``_update_actor`` (the batch then holds its rewards and ``acc``), so the checkpoint holds
the posterior after step k; verl's own call later in the step is a no-op (the sampler skips a
batch it has just observed). ``fit`` itself is not touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vade.job.timelimit import FLAG_ENV, flag_on_signal
from vade.train.verl import timelimit
from vade.train.verl.timelimit import stop_if_due
from vade.train.verl.validated import write_validated_counts

__all__ = ["install", "main", "observe_before_checkpoint"]

_FLAG = "_vade_observes_before_checkpoint"


def observe_before_checkpoint(base: type) -> type:
    """``base`` (``RayPPOTrainer`` or a subclass) observing the batch in ``_update_actor``."""
    # lazy: verl: the train-verl env only
    from verl.experimental.dataset.sampler import AbstractCurriculumSampler

    class VadePPOTrainer(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            write_validated_counts(self)  # the rows verl validates (pooled val/acc weights)

        def _save_checkpoint(self) -> Any:
            out = super()._save_checkpoint()
            stop_if_due(self.global_steps)   # the time limit's checkpoint: end fit here
            return out

        def _update_actor(self, batch: Any) -> Any:
            out = super()._update_actor(batch)
            sampler = getattr(self.train_dataloader, "sampler", None)
            if isinstance(sampler, AbstractCurriculumSampler):
                sampler.update(batch=batch)
            return out

    setattr(VadePPOTrainer, _FLAG, True)
    VadePPOTrainer.__name__ = VadePPOTrainer.__qualname__ = f"Vade{base.__name__}"
    return VadePPOTrainer


def install() -> type:
    """Swap ``verl.trainer.main_ppo.RayPPOTrainer`` (the name ``TaskRunner.run`` builds) for the
    subclass, once per process; returns the class now in place."""
    from verl.trainer import main_ppo  # lazy: verl: the train-verl env only
    from verl.trainer.ppo import ray_trainer  # lazy: verl: the train-verl env only

    from vade.train.verl.diva_advantage import install as install_diva_advantage  # lazy: torch

    timelimit.install(ray_trainer)   # fit's expiration check answers from SLURM's time limit
    install_diva_advantage()  # algorithm.adv_estimator=diva (a no-op for other estimators)
    if not getattr(main_ppo.RayPPOTrainer, _FLAG, False):
        main_ppo.RayPPOTrainer = observe_before_checkpoint(main_ppo.RayPPOTrainer)
    return main_ppo.RayPPOTrainer


def _task_runner_class() -> type:
    from verl.trainer.main_ppo import TaskRunner  # lazy: verl: the train-verl env only

    class VadeTaskRunner(TaskRunner):
        def run(self, config: Any) -> Any:
            install()  # in the Ray actor's process, where the trainer is built
            return super().run(config)

    return VadeTaskRunner


def run_hydra(config_dir: Path, config_name: str, task_runner_class: Callable[[], type],
              entry: str) -> None:
    """verl's start-up under Hydra, the same for this entry and the DAPO one: the checkpoint
    signal's flag, the device, the legacy reward keys, then ``run_ppo`` with the entry's task
    runner in a Ray actor. ``entry``, the entry's module, keeps Hydra's job name (its last part,
    as when Hydra saw the entry's own file) and so its log file the entry's own."""
    # lazy: Hydra, Ray and verl exist only in the train-verl env
    import hydra
    import ray
    from verl.experimental.reward_loop import migrate_legacy_reward_impl
    from verl.trainer.main_ppo import run_ppo
    from verl.utils.device import auto_set_device  # lazy: verl: the train-verl env only

    def _run(config: Any) -> None:
        _flag_on_signal()
        auto_set_device(config)
        config = migrate_legacy_reward_impl(config)
        run_ppo(config, task_runner_class=ray.remote(num_cpus=1)(task_runner_class()))

    _run.__module__ = entry
    hydra.main(config_path=str(config_dir), config_name=config_name, version_base=None)(_run)()


def main() -> None:
    import verl  # lazy: the train-verl env only

    run_hydra(Path(verl.__file__).resolve().parent / "trainer" / "config", "ppo_trainer",
              _task_runner_class, "vade.train.verl.ppo_entry")


def _flag_on_signal() -> None:
    """This driver only waits for Ray: a checkpoint signal becomes the trainer's flag file."""
    if os.environ.get(FLAG_ENV):
        flag_on_signal(os.environ[FLAG_ENV])


if __name__ == "__main__":
    main()
