"""A tracking server killed mid-run loses no metric: what it missed is sent when it answers again
during the run, or backfilled from the DuckDB history by the next run of the folder (issue 49,
item 3). Every (step, metric) in DuckDB is then in MLflow with the same value.

Real: a ``mlflow server`` on 127.0.0.1 (SIGKILLed and restarted on the same port and database),
the local trainer, its checkpoints, DuckDB history and MLflow tracker. Stand-in: the toy policy
in place of a model. The kill and the restart are done from inside the training loop (a wrapper
around ``_train_step``), so they land at a known step.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import duckdb
import pytest
from test_train_local import write_toy_data

from vade.train.config import TrainConfig
from vade.train.local import RunPaths, loop, train_local
from vade.train.local.toy import ToyPolicy

from . import mlflow_server

pytestmark = pytest.mark.cluster


def _points_in_duckdb(history: Path) -> dict[tuple[int, str], float]:
    con = duckdb.connect(str(history), read_only=True)
    try:
        return {(int(s), n): float(v) for s, n, v in
                con.execute("SELECT step, name, value FROM metrics").fetchall()}
    finally:
        con.close()


def _points_in_mlflow(uri: str, run_id: str, names: set[str]) -> dict[tuple[int, str], float]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    return {(m.step, name): m.value for name in names
            for m in client.get_metric_history(run_id, name)}


def _train(server: mlflow_server.Server, data: Path, out: Path, monkeypatch,
           events: dict[int, object]) -> dict:
    """C12 (12 steps, validation every 6, a checkpoint every 4), calling ``events[step]()``
    before that step."""
    cfg = TrainConfig.from_config({
        "name": "outage", "train": {"batch_size": 6, "steps": 12, "lr": 0.05, "val_every": 6,
                                    "checkpoint_every": 4, "keep_checkpoints": 5},
        "tracking": {"mlflow_uri": server.uri}})
    real = loop._train_step

    def step(cfg, policy, sampler, examples, t, **kw):
        if t in events:
            events.pop(t)()
        return real(cfg, policy, sampler, examples, t, **kw)

    with monkeypatch.context() as m:
        m.setattr(loop, "_train_step", step)
        return train_local(cfg, RunPaths(data, "toy", out, data / "initial.parquet"),
                           progress=False, load_policy=ToyPolicy.load)


def test_metrics_survive_a_server_killed_mid_run(tmp_path: Path, monkeypatch, capsys) -> None:
    """Before: one warning, then tracking was off: MLflow held steps 0-5 of 0-12, for good."""
    from mlflow.tracking import MlflowClient

    (tmp_path / "data").mkdir()
    data = write_toy_data(tmp_path / "data")
    server = mlflow_server.start(tmp_path / "server")
    with contextlib.closing(server):
        mlflow_server.wait(server)

        def back() -> None:
            mlflow_server.wait(mlflow_server.restart(server))

        # A: down from step 4 to step 9 of the run
        a = tmp_path / "a"
        done = _train(server, data, a, monkeypatch,
                      {4: lambda: mlflow_server.kill(server), 9: back})
        duck = _points_in_duckdb(a / "history.duckdb")
        names = {n for _, n in duck}
        assert _points_in_mlflow(server.uri, done["mlflow_run_id"], names) == duck
        assert MlflowClient(server.uri).get_run(done["mlflow_run_id"]).info.status == "FINISHED"
        # B: down from step 4 to the end; the server comes back and the run is rerun
        b = tmp_path / "b"
        done = _train(server, data, b, monkeypatch, {4: lambda: mlflow_server.kill(server)})
        duck = _points_in_duckdb(b / "history.duckdb")
        back()
        held = _points_in_mlflow(server.uri, done["mlflow_run_id"], names)
        assert held.items() < duck.items()   # the outage's points are missing ...
        with capsys.disabled():
            print(f"\nafter the kill: MLflow {len(held)} of DuckDB's {len(duck)} points")
        capsys.readouterr()
        again = _train(server, data, b, monkeypatch, {})
        assert again["mlflow_run_id"] == done["mlflow_run_id"]
        assert f"backfilled {len(duck) - len(held)} metric point(s)" in capsys.readouterr().err
        assert _points_in_mlflow(server.uri, done["mlflow_run_id"], names) == duck  # ... not lost
        assert MlflowClient(server.uri).get_run(done["mlflow_run_id"]).info.status == "FINISHED"


def test_an_unreachable_server_at_start_is_one_line(tmp_path: Path, monkeypatch) -> None:
    """Before: MLflow's 7 retries with backoff 2 hung the start for 230 s without a line.
    Real: a port on 127.0.0.1 that nothing listens on."""
    from .local_slurm import free_port

    (tmp_path / "data").mkdir()
    data = write_toy_data(tmp_path / "data")
    server = mlflow_server.Server(root=tmp_path, port=free_port(), proc=None)  # type: ignore
    with pytest.raises(ValueError) as info:
        _train(server, data, tmp_path / "run", monkeypatch, {})
    line = str(info.value)
    assert "\n" not in line
    assert f"cannot open the MLflow store {server.uri} (no answer within 5 s: " in line
    assert not (tmp_path / "run" / "history.duckdb").exists()
