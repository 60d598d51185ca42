"""A run folder rerun with a changed config gets the outputs of an uninterrupted run of the new
config (``vade.train.local.resume``), and a refused or corrupt rerun loses nothing.

Real: the local trainer's loop, checkpoints, DuckDB history and MLflow store. Stand-in: the toy
policy (``vade.train.local.toy``) instead of the tiny Qwen2.5-VL, for milliseconds per step.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from test_train_local import _cfg, _paths, _tables, write_toy_data

from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_toy_data(tmp_path_factory.mktemp("data"))


def _train(cfg, data: Path, out: Path, **kw) -> dict:
    return train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load, **kw)


def _assert_same_as_uninterrupted(data: Path, tmp_path: Path, out: Path, cfg, done: dict):
    """The rerun folder's history, final weights and done.json equal a fresh run's of ``cfg``."""
    import torch

    ref = tmp_path / "reference" / out.name
    want = _train(cfg, data, ref)
    a, b = _tables(ref / "history.duckdb"), _tables(out / "history.duckdb")
    for table in a:
        assert a[table] == b[table], table
    assert torch.equal(torch.load(ref / "final" / "toy.pt")["emb"],
                       torch.load(out / "final" / "toy.pt")["emb"])
    for key in ("steps", "stopped_by", "rollouts_cumulative", "val_acc", "val_acc_final",
                "effective_ratio_mean"):
        assert done[key] == want[key], key
    assert json.loads((out / "done.json").read_text())["steps"] == cfg.steps


def test_fewer_steps_truncate_to_a_run_of_that_length(data, tmp_path):
    """32 -> 16 in the issue; here 6 -> 5: resume from checkpoint 4, recompute and validate
    step 5 as the end, cut the history and checkpoint 6. Before the fix: nothing ran, done.json
    kept steps 6 with stopped_by "rollout_cap"."""
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(_cfg(tmp_path), data, out)
    cfg = _cfg(tmp_path, steps=5)
    done = _train(cfg, data, out)
    assert (done["steps"], done["stopped_by"]) == (5, "completed")
    assert sorted(done["val_acc"], key=int) == ["0", "3", "5"]
    assert sorted(p.name for p in (out / "checkpoints").glob("*.pt")) == [
        "step_00000002.pt", "step_00000004.pt", "step_00000005.pt"]
    _assert_same_as_uninterrupted(data, tmp_path, out, cfg, done)


def test_more_steps_extend_to_an_uninterrupted_run(data, tmp_path):
    """4 -> 6 with val_every 3: the old end (4) was validated as the end, which a 6-step run does
    not do, so the run continues from checkpoint 2 and the history equals a 6-step run's."""
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(_cfg(tmp_path, steps=4), data, out)
    cfg = _cfg(tmp_path, steps=6)
    done = _train(cfg, data, out)
    assert sorted(done["val_acc"], key=int) == ["0", "3", "6"]
    _assert_same_as_uninterrupted(data, tmp_path, out, cfg, done)


def test_changed_val_every_recomputes_validation(data, tmp_path):
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(_cfg(tmp_path), data, out)
    cfg = _cfg(tmp_path, val_every=2)
    done = _train(cfg, data, out)
    assert sorted(done["val_acc"], key=int) == ["0", "2", "4", "6"]
    _assert_same_as_uninterrupted(data, tmp_path, out, cfg, done)


def test_changed_lr_starts_fresh_and_keeps_the_old_outputs(data, tmp_path, capsys):
    """A key that changes every step (lr) retrains from step 0; the old history and done.json
    are moved to superseded/<time>/ (renamed so folder queries skip it), and the log says so."""
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    old = _train(_cfg(tmp_path, steps=2), data, out)
    cfg = _cfg(tmp_path, steps=2, lr=0.01)
    done = _train(cfg, data, out)
    (moved,) = (out / "superseded").iterdir()
    assert json.loads((moved / "done.json").read_text())["mlflow_run_id"] == old["mlflow_run_id"]
    con = duckdb.connect(str(moved / "history.duckdb.old"), read_only=True)
    assert json.loads(con.execute("SELECT config FROM runs").fetchone()[0])["lr"] == 0.05
    con.close()
    assert "train.lr: 0.05 -> 0.01" in (moved / "reason.txt").read_text()
    assert f"the earlier outputs are in {moved}" in capsys.readouterr().err
    _assert_same_as_uninterrupted(data, tmp_path, out, cfg, done)
