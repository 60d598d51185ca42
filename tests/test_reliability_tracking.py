"""MLflow never costs finished work, and follows the run wherever its folder goes.

Real: the local trainer, its checkpoints and DuckDB history, and MLflow on a local ``sqlite:///``
store in ``tmp_path``. Stand-in: the toy policy (``vade.train.local.toy``) for the tiny
Qwen2.5-VL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_train_local import _cfg, _paths, write_toy_data

from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy


@pytest.fixture()
def data(tmp_path) -> Path:
    (tmp_path / "data").mkdir()
    return write_toy_data(tmp_path / "data")


def _train(cfg, data: Path, out: Path) -> dict:
    return train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() and p.name != ".lock"}


@pytest.mark.parametrize("steps", [4, 2])
def test_a_corrupt_store_is_one_line_and_deletes_nothing(data, tmp_path, steps):
    """Before: ``open_run`` removed done.json, cut the history and deleted later checkpoints,
    then the tracker failed with a 91-line sqlalchemy traceback."""
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(_cfg(tmp_path, steps=4), data, out)
    broken = tmp_path / "broken.db"
    shutil.copy(tmp_path / "ml.db", broken)
    with open(broken, "r+b") as fh:
        fh.write(b"\xff" * 100)
    before = _snapshot(out)
    cfg = _cfg(tmp_path, steps=steps)
    cfg = type(cfg).from_config({"name": "toy", "train": {**_train_keys(cfg), "steps": steps},
                                 "sampler": {"snapshot_every": 2},
                                 "tracking": {"mlflow_uri": f"sqlite:///{broken}"}})
    with pytest.raises(ValueError) as info:
        _train(cfg, data, out)
    line = str(info.value)
    assert "\n" not in line and f"cannot open the MLflow store sqlite:///{broken}" in line
    assert _snapshot(out) == before


def _train_keys(cfg) -> dict:
    return {k: getattr(cfg, k) for k in ("batch_size", "lr", "val_every", "checkpoint_every",
                                         "keep_checkpoints")}


def _client(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/ml.db")


def test_a_moved_folder_reattaches_to_its_own_run(data, tmp_path, capsys):
    """Before: the rerun opened a new active run with 0 metrics while DuckDB held every step;
    the old run stayed active and done.json pointed to the empty one."""
    cfg = _cfg(tmp_path, steps=4)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    first = _train(cfg, data, out)
    moved = tmp_path / "elsewhere" / out.name
    moved.parent.mkdir()
    out.rename(moved)
    capsys.readouterr()
    again = _train(cfg, data, moved)
    assert again["mlflow_run_id"] == first["mlflow_run_id"]
    assert f"reattached MLflow run {first['mlflow_run_id']} (the folder moved from " \
           f"{out.resolve()})" in capsys.readouterr().err
    client = _client(tmp_path)
    runs = client.search_runs([client.get_experiment_by_name("toy").experiment_id])
    assert [r.info.run_id for r in runs] == [first["mlflow_run_id"]]
    run = runs[0]
    assert run.info.status == "FINISHED" and run.data.tags["vade_run_key"] == str(moved.resolve())
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "vade/effective_ratio")]
    assert steps == [1, 2, 3, 4]


def test_a_copied_folder_gets_its_own_run_with_the_history(data, tmp_path, capsys):
    cfg = _cfg(tmp_path, steps=4)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    first = _train(cfg, data, out)
    copy = tmp_path / "copy" / out.name
    shutil.copytree(out, copy)
    capsys.readouterr()
    again = _train(cfg, data, copy)
    assert again["mlflow_run_id"] != first["mlflow_run_id"]
    err = capsys.readouterr().err
    assert f"new MLflow run {again['mlflow_run_id']} (a copy of {out.resolve()}" in err
    assert "with the history's 4 steps" in err
    client = _client(tmp_path)
    for run_id in (first["mlflow_run_id"], again["mlflow_run_id"]):
        steps = [m.step for m in client.get_metric_history(run_id, "vade/effective_ratio")]
        assert steps == [1, 2, 3, 4], run_id
    assert client.get_run(first["mlflow_run_id"]).data.tags["vade_run_key"] == \
        str(out.resolve())
