"""Every checkpoint signal at any moment gives a checkpoint where there is one to write, one line,
and a closed MLflow run (issue 49, item 10).

Real: the ``vade train`` command in its own process, the local trainer, its checkpoints, DuckDB
history, MLflow on a sqlite store, real signals and handlers (tests/fixtures/signalled_train.py
sends them to itself at known points, so nothing depends on timing). Stand-in: the toy policy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_store import fresh_store
from test_train_local import write_toy_data

from vade.job.timelimit import TimeGuard

ROOT = Path(__file__).resolve().parent.parent


def _run(scenario: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path, str]:
    (tmp_path / "data").mkdir()
    data = write_toy_data(tmp_path / "data")
    uri = fresh_store(tmp_path / "ml.db")
    cfg = {"name": "toy", "train": {"backend": "local", "batch_size": 6, "steps": 5, "lr": 0.05,
                                    "val_every": 0, "checkpoint_every": 0},
           "tracking": {"mlflow_uri": uri}}
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fixtures" / "signalled_train.py"), scenario, "--",
         "train", "--config-json", json.dumps(cfg), "--algorithm", "grpo", "--method", "vade",
         "--seed", "0", "--data-dir", str(data), "--model", "toy", "--difficulty",
         str(data / "initial.parquet"), "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    return proc, out, uri


def _statuses(uri: str) -> list[str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    return [r.info.status for e in client.search_experiments()
            for r in client.search_runs([e.experiment_id])]


@pytest.mark.e2e  # several seconds: a `vade train` process per case
@pytest.mark.parametrize("scenario,signal_name", [("twice", "SIGUSR1"), ("TERM", "SIGTERM")])
def test_a_signal_mid_run_checkpoints_and_closes_the_mlflow_run(tmp_path, scenario,
                                                                signal_name):
    """Before: a second SIGUSR1 while stopping ended the process (rc 138, no message, the MLflow
    run left RUNNING); SIGTERM left no checkpoint and no message."""
    proc, out, uri = _run(scenario, tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"toy-grpo-vade-s0: checkpointed step 3 of 5 and stopped: "
                           f"{signal_name} received"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in (out / "checkpoints").glob("step_*.pt")) == [
        "step_00000003.pt"]
    assert _statuses(uri) == ["KILLED"]


@pytest.mark.e2e  # several seconds: a `vade train` process per case
@pytest.mark.parametrize("name", ["USR1", "URG", "TERM"])
def test_a_signal_while_loading_stops_before_training_with_one_line(tmp_path, name):
    """Before: SIGUSR1 while loading ended the process (rc 138, no message), SIGURG was lost
    (the run went on to the end), SIGTERM ended it with no message."""
    proc, out, uri = _run(f"load-{name}", tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("toy-grpo-vade-s0: stopped before training, nothing changed in "
                           f"{out}: SIG{name} received"), proc.stderr[-2000:]
    assert not (out / "done.json").exists() and not (out / "history.duckdb").exists()
    assert "RUNNING" not in _statuses(uri)


def test_the_default_signals_include_sigterm():
    assert TimeGuard.from_env({}).signals == ("USR1", "URG", "TERM")
    assert TimeGuard().signals == ("USR1", "URG", "TERM")
