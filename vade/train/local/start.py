"""How a local run starts in its folder: resume or start fresh, and nothing lost either way.

Called once the policy is loaded (so a wrong model path or a bad config has already failed and
touched nothing). Nothing in the folder changes until every resource the run needs is open and
valid. In order:

1. the run's identity: its inputs' hashes (``input_hashes``) and the resume plan
   (``vade.train.local.resume``), read from the checkpoint manifests;
2. a resume loads the checkpoint (its checksum verified), opens the history and checks that it
   holds every step up to the checkpoint (a deleted, older or corrupt history is refused,
   naming what to remove);
3. the MLflow store is opened (a broken one is one line naming it), reattaching to the run the
   folder recorded (``vade.tracking.recorded_run``);
4. only then the folder changes: temporary files of a killed writer are removed; a resume cuts
   the history and the checkpoints after its step, a fresh start moves the earlier outputs
   aside (``vade.train.run_folder.supersede``, with the cause in ``reason.txt``); the old
   ``done.json`` goes (the run is no longer finished) and ``mlflow.json`` names the run.

Every decision is one line in the log.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import duckdb

from vade.store import RunStore
from vade.store.file_format import connect_for_reading
from vade.tracking import open_tracker, record_run, recorded_run
from vade.train.checkpoint import (
    load_checkpoint,
    remove_after,
    remove_stale_temporaries,
    restore_rng,
)
from vade.train.config import TrainConfig
from vade.train.local.inputs import RunPaths, input_hashes
from vade.train.local.resume import plan_resume
from vade.train.recorder import RunRecorder
from vade.train.run_folder import supersede

__all__ = ["OpenRun", "open_run"]


@dataclass
class OpenRun:
    """The state to continue from (step, cumulative rollouts, validation so far), the history
    and the recorder (history + MLflow)."""

    state: dict[str, Any]
    store: RunStore
    recorder: RunRecorder
    inputs: dict[str, str | None]  # the inputs' hashes, recorded in each checkpoint


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _check_history(paths: RunPaths, step: int, checkpoint: Any) -> None:
    """The history holds exactly the steps 1..``step`` (read-only: nothing is written yet)."""
    con = connect_for_reading(paths.history)
    try:
        n, top = con.execute("SELECT count(DISTINCT step), coalesce(max(step), 0) FROM steps "
                             "WHERE run_id = ? AND step <= ?", [paths.run_id, step]).fetchone()
    except duckdb.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"the history {paths.history} is truncated or corrupt ({first}): move "
                         "it away (or restore it) and rerun") from None
    finally:
        con.close()
    if (int(n), int(top)) != (step, step):
        raise ValueError(
            f"the history {paths.history} holds {n} of the steps 1..{step} that checkpoint "
            f"{checkpoint} continues from (deleted or replaced?): restore it, or delete "
            f"{paths.history} and {paths.checkpoints} to train again from step 0")


def _backfill_mlflow(store: RunStore, recorder: RunRecorder, upto: int) -> int:
    """The MLflow run gets the history's metrics up to the resume step that it lacks: all of
    them for a new run, what a server that was down missed for a reopened one (issue 49: steps
    6-12 never reached MLflow), so MLflow shows what DuckDB holds."""
    rows = store.con.execute("SELECT step, name, value FROM metrics WHERE run_id = ? AND "
                             "step <= ? ORDER BY step", [store.run_id, upto]).fetchall()
    by_step: dict[int, dict[str, float]] = {}
    for step, name, value in rows:
        by_step.setdefault(int(step), {})[name] = float(value)
    return recorder.backfill(by_step)


def _open_store(paths: RunPaths, cfg: TrainConfig) -> RunStore:
    return RunStore(paths.history, paths.run_id, snapshot_every=cfg.sampler.snapshot_every)


def open_run(cfg: TrainConfig, paths: RunPaths, *, policy: Any, sampler: Any,
             shaper: Any) -> OpenRun:
    """Decide where the run starts, restore that state into ``policy``/``sampler``/``shaper``,
    and open the history and MLflow (module doc)."""
    # 1-2: identity, plan, checkpoint and history -- all read-only
    inputs = input_hashes(paths)
    plan = plan_resume(cfg, paths.checkpoints, inputs)
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
        _check_history(paths, state["step"], plan.checkpoint)
    # 3: MLflow -- the same run when nothing changed, a new one (with the history so far)
    # otherwise; the folder's recorded run first, wherever the folder now is
    same = plan.checkpoint is not None and not plan.changed
    uri = cfg.tracking.uri_for(cfg.name) if cfg.tracking.enabled else None
    run_id, note = recorded_run(paths.out, uri)
    tracker = open_tracker(cfg.tracking, cfg.name, paths.run_id, mode="resume" if same else "new",
                           key=str(paths.out.resolve()), run_id=run_id)
    # 4: every resource is open and valid (a resumed history opened for writing too): now the
    # folder may change
    store = None
    try:
        if plan.checkpoint is not None:
            store = _open_store(paths, cfg)
        for gone in remove_stale_temporaries(paths.out, paths.checkpoints):
            _say(f"removed {gone} (left by a killed write)")
        if plan.checkpoint is None and (plan.reason != "no checkpoint"
                                        or paths.history.exists()):
            moved = supersede(paths.out, plan.reason)
            if moved is not None:
                _say(f"{paths.run_id}: starting at step 0 ({plan.reason}); the earlier outputs "
                     f"are in {moved} (delete it when no longer needed)")
        if store is None:
            store = _open_store(paths, cfg)
        store.truncate_after(state["step"])
        if plan.checkpoint is not None:
            for gone in remove_after(paths.checkpoints, state["step"]):
                _say(f"removed {gone.name}: after the resume step")
            _say(f"{paths.run_id}: {plan.reason}")
    except BaseException:
        if store is not None:
            store.close()
        tracker.close("FAILED")
        raise
    (paths.out / "done.json").unlink(missing_ok=True)  # from here on the run is not finished
    record_run(paths.out, tracker)
    recorder = RunRecorder(store, tracker)
    sent = _backfill_mlflow(store, recorder, state["step"]) if state["step"] else 0
    if tracker.run_id is not None:
        _say(f"{paths.run_id}: {tracker.how}" + (f" ({note})" if note else "")
             + (f", with the history's {state['step']} steps" if state["step"]
                and tracker.created else "")
             + (f", backfilled {sent} metric point(s) it lacked from the history"
                if sent and not tracker.created else ""))
    return OpenRun(state, store, recorder, inputs)
