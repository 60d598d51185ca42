"""How a local run starts in its folder: resume or start fresh, and nothing lost either way.

Called once the policy is loaded (so a wrong model path or a bad config has already failed and
touched nothing). In order: temporary files of a killed writer are removed; the resume plan
(``vade.train.local.resume``) is made; a resume checks that the history holds every step up to
the checkpoint (a deleted or older history is refused, naming what to remove) and cuts the history
and the checkpoints after it; a fresh start moves an earlier config's outputs aside
(``vade.train.run_folder.supersede``). Only then is the old ``done.json`` removed: the run is no
longer finished. Every decision is one line in the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vade.train.config import TrainConfig
from vade.train.local.inputs import RunPaths

if TYPE_CHECKING:
    from vade.store import RunStore
    from vade.train.recorder import RunRecorder

__all__ = ["OpenRun", "open_run"]


@dataclass
class OpenRun:
    """The state to continue from (step, cumulative rollouts, validation so far), the history
    and the recorder (history + MLflow)."""

    state: dict[str, Any]
    store: RunStore
    recorder: RunRecorder


def _say(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)


def _history_steps(store: RunStore, upto: int) -> tuple[int, int]:
    row = store.con.execute("SELECT count(DISTINCT step), coalesce(max(step), 0) FROM steps "
                            "WHERE run_id = ? AND step <= ?", [store.run_id, upto]).fetchone()
    return int(row[0]), int(row[1])


def _replay_to_mlflow(store: RunStore, recorder: RunRecorder, upto: int) -> None:
    """A new MLflow run for a resumed history gets the history's metrics up to the resume step,
    so MLflow shows what DuckDB holds."""
    rows = store.con.execute("SELECT step, name, value FROM metrics WHERE run_id = ? AND "
                             "step <= ? ORDER BY step", [store.run_id, upto]).fetchall()
    by_step: dict[int, dict[str, float]] = {}
    for step, name, value in rows:
        by_step.setdefault(int(step), {})[name] = float(value)
    for step, metrics in by_step.items():
        recorder.log_metrics(metrics, step)


def open_run(cfg: TrainConfig, paths: RunPaths, *, policy: Any, sampler: Any,
             shaper: Any) -> OpenRun:
    """Decide where the run starts, restore that state into ``policy``/``sampler``/``shaper``,
    and open the history and MLflow (module doc)."""
    from vade.store import RunStore
    from vade.tracking import open_tracker
    from vade.train.checkpoint import (
        load_checkpoint,
        remove_after,
        remove_stale_temporaries,
        restore_rng,
    )
    from vade.train.local.resume import plan_resume
    from vade.train.recorder import RunRecorder
    from vade.train.run_folder import supersede

    for gone in remove_stale_temporaries(paths.out, paths.checkpoints):
        _say(f"removed {gone} (left by a killed write)")
    plan = plan_resume(cfg, paths.checkpoints)
    state: dict[str, Any] = {"step": 0, "rollouts_cumulative": 0, "val": {}}
    if plan.checkpoint is not None:
        if not paths.history.is_file():
            raise ValueError(f"{paths.checkpoints} holds a checkpoint at step {plan.step} but "
                             f"the history {paths.history} is missing: restore it, or delete "
                             f"{paths.checkpoints} to train again from step 0")
        saved = load_checkpoint(plan.checkpoint)  # the checksum is verified here
        policy.load_state_dict(saved["policy"])
        sampler.load_state_dict(saved["sampler"])
        if shaper is not None:
            shaper.load_state_dict(saved["diva"])
        restore_rng(saved["rng"])
        state = {k: saved[k] for k in ("step", "rollouts_cumulative", "val")}
    else:
        if plan.reason != "no checkpoint" or paths.history.exists():
            moved = supersede(paths.out, plan.reason)
            if moved is not None:
                _say(f"{paths.run_id}: starting at step 0 ({plan.reason}); the earlier outputs "
                     f"are in {moved} (delete it when no longer needed)")
    store = RunStore(paths.history, paths.run_id, snapshot_every=cfg.sampler.snapshot_every)
    try:
        if state["step"]:
            n, top = _history_steps(store, state["step"])
            if (n, top) != (state["step"], state["step"]):
                raise ValueError(
                    f"the history {paths.history} holds {n} of the steps 1..{state['step']} that "
                    f"checkpoint {plan.checkpoint} continues from (deleted or replaced?): restore "
                    f"it, or delete {paths.history} and {paths.checkpoints} to train again from "
                    "step 0")
            store.truncate_after(state["step"])
            for gone in remove_after(paths.checkpoints, state["step"]):
                _say(f"removed {gone.name}: after the resume step")
            _say(f"{paths.run_id}: {plan.reason}")
        else:
            store.truncate_after(0)
    except BaseException:
        store.close()
        raise
    (paths.out / "done.json").unlink(missing_ok=True)  # from here on the run is not finished
    # MLflow: the same run when nothing changed; a new one (with the history so far) otherwise.
    same = plan.checkpoint is not None and not plan.changed
    recorder = RunRecorder(store, open_tracker(cfg.tracking, cfg.name, paths.run_id,
                                               mode="resume" if same else "new",
                                               key=str(paths.out.resolve())))
    if plan.checkpoint is not None and not same:
        _replay_to_mlflow(store, recorder, state["step"])
    return OpenRun(state, store, recorder)
