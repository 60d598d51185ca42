"""A run's identity covers every input: a changed data file, model or initial difficulty starts
the run again (the old outputs kept under ``superseded/`` with the cause), as a changed config
does; an unchanged input resumes.

Real: the local trainer, its checkpoints and resume plan, the DuckDB history and the input
hashing. Stand-in: the toy policy (``vade.train.local.toy``) for the tiny Qwen2.5-VL. The
Snakemake test at the end reruns part of the real smoke pipeline (tiny model, real rules).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_train_local import _cfg, _paths, _tables, write_toy_data

from vade.tracking import TrackingConfig
from vade.train.local import RunPaths, train_local
from vade.train.local.inputs import input_hashes
from vade.train.local.toy import ToyPolicy


def _quiet(tmp_path: Path, **train):
    return replace(_cfg(tmp_path, **train), tracking=TrackingConfig(enabled=False))


def _train(cfg, paths: RunPaths) -> dict:
    return train_local(cfg, paths, progress=False, load_policy=ToyPolicy.load)


@pytest.fixture()
def data(tmp_path) -> Path:
    (tmp_path / "data").mkdir()
    return write_toy_data(tmp_path / "data")


def _new_difficulty(data: Path) -> Path:
    """initial.parquet with every row's count of correct rollouts changed."""
    table = pq.read_table(data / "initial.parquet").to_pydict()
    table["correct"] = [(c + 3) % 9 for c in table["correct"]]
    path = data.parent / "initial2.parquet"
    pq.write_table(pa.table(table), path)
    return path


def test_a_changed_difficulty_file_starts_fresh_and_equals_a_fresh_run(data, tmp_path, capsys):
    """Before: ``vade train --difficulty <modified file>`` resumed the old checkpoint and its
    history kept the old file's step-0 alpha."""
    cfg = _quiet(tmp_path, steps=4)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(cfg, _paths(data, out))
    changed = RunPaths(data, "toy", out, _new_difficulty(data))
    done = _train(cfg, changed)
    (moved,) = (out / "superseded").iterdir()
    reason = (moved / "reason.txt").read_text()
    assert "an input changed (difficulty: sha256:" in reason and "train:" not in reason
    assert f"the earlier outputs are in {moved}" in capsys.readouterr().err
    assert (moved / "history.duckdb.old").is_file() and (moved / "done.json").is_file()
    ref_out = tmp_path / "reference" / out.name
    want = _train(cfg, RunPaths(data, "toy", ref_out, changed.difficulty))
    a, b = _tables(ref_out / "history.duckdb"), _tables(out / "history.duckdb")
    assert a == b
    assert done["val_acc"] == want["val_acc"]
    import duckdb

    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    alpha = con.execute("SELECT alpha FROM snapshots WHERE step = 0 ORDER BY sample_id"
                        ).fetchnumpy()["alpha"]
    con.close()
    new = pq.read_table(changed.difficulty).column("correct").to_numpy()
    np.testing.assert_array_equal(alpha, new)  # r = alpha at step 0 (Algorithm 1)


def test_a_changed_training_split_starts_fresh(data, tmp_path):
    cfg = _quiet(tmp_path, steps=2)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(cfg, _paths(data, out))
    rows = pq.read_table(data / "train.parquet").to_pylist()
    rows[5]["reward_model"]["ground_truth"] = "D" if rows[5]["reward_model"]["ground_truth"] \
        != "D" else "A"
    pq.write_table(pa.Table.from_pylist(rows), data / "train.parquet")
    _train(cfg, _paths(data, out))
    (moved,) = (out / "superseded").iterdir()
    assert "an input changed (train: sha256:" in (moved / "reason.txt").read_text()


def test_unchanged_inputs_resume_and_a_touched_file_is_unchanged(data, tmp_path, capsys):
    cfg = _quiet(tmp_path, steps=2)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(cfg, _paths(data, out))
    (data / "initial.parquet").touch()
    _train(cfg, _paths(data, out))
    assert not (out / "superseded").exists()
    assert "resuming from step_00000002.pt" in capsys.readouterr().err


def test_model_identity_is_content_not_path(tmp_path):
    model = tmp_path / "m"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "w.bin").write_bytes(b"\0" * 10)
    paths = RunPaths(tmp_path, str(model), tmp_path / "o")
    first = input_hashes(paths)["model"]
    shutil.copytree(model, tmp_path / "elsewhere")
    assert input_hashes(replace(paths, model=str(tmp_path / "elsewhere")))["model"] == first
    (model / "sub" / "w.bin").write_bytes(b"\1" * 10)
    assert input_hashes(paths)["model"] != first
    assert input_hashes(replace(paths, model="Qwen/Qwen2.5-VL-7B-Instruct"))["model"] == \
        "name:Qwen/Qwen2.5-VL-7B-Instruct"


def test_a_checkpoint_without_input_hashes_is_not_trusted(data, tmp_path):
    """Checkpoints written before inputs were recorded cannot vouch for them: start fresh."""
    cfg = _quiet(tmp_path, steps=2)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(cfg, _paths(data, out))
    for path in (out / "checkpoints").glob("*.json"):
        meta = json.loads(path.read_text())
        del meta["fingerprint"]["inputs"]
        path.write_text(json.dumps(meta))
    _train(cfg, _paths(data, out))
    (moved,) = (out / "superseded").iterdir()
    assert "record no input hashes" in (moved / "reason.txt").read_text()


@pytest.mark.e2e
def test_a_changed_difficulty_temperature_reaches_the_run_through_snakemake(smoke_pipeline,
                                                                            tmp_path):
    """Before: ``init_difficulty`` and ``train`` reran ("Input files updated"), but the trainer
    resumed its old checkpoint, wrote no new step, and the history's step-0 alpha still matched
    the old ``initial.parquet``. From a copy of the shared smoke pipeline (``smoke_pipeline``: its
    VADE runs trained on the first initial difficulty), a colder difficulty temperature and one
    VADE run asked for: the fewest jobs that show it (initial difficulty, one training run).
    """
    import duckdb
    import yaml
    from smoke_pipeline import copy_of, snakemake, write_config
    from test_pipeline import scheduled

    workdir = copy_of(smoke_pipeline, tmp_path / "clone")
    run = workdir / "results" / "tiny" / "runs" / "tiny-grpo-vade-s0"
    initial = workdir / "results" / "tiny" / "difficulty" / "tiny" / "initial.parquet"
    old = pq.read_table(initial).column("correct").to_numpy()
    config = write_config(workdir, "colder.yaml",
                          lambda cfg: cfg["difficulty"].update(temperature=0.2))
    proc = snakemake(workdir, str((run / "done.json").relative_to(workdir)), "--cores", "2",
                     "--configfile", str(config.relative_to(workdir)))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert scheduled(proc) == {"init_difficulty": 1, "train": 1}
    new = pq.read_table(initial).column("correct").to_numpy()
    assert (old != new).any()  # near-greedy rollouts changed the difficulty file
    con = duckdb.connect(str(run / "history.duckdb"), read_only=True)
    alpha = con.execute("SELECT alpha FROM snapshots WHERE step = 0 ORDER BY sample_id"
                        ).fetchnumpy()["alpha"]
    steps = con.execute("SELECT count(*) FROM steps").fetchone()[0]
    con.close()
    np.testing.assert_array_equal(alpha, new)
    assert steps == yaml.safe_load(config.read_text())["train"]["steps"]
    (moved,) = (run / "superseded").iterdir()
    assert "an input changed (difficulty: sha256:" in (moved / "reason.txt").read_text()
