"""The local trainer's loop with the toy policy (milliseconds per step): updates, sampler state,
DuckDB + MLflow logging, DAPO refills, checkpoint/resume equivalence, errors before any work.

The real tiny Qwen2.5-VL runs in ``tests/test_train_tiny_vlm.py``; the toy exercises the same
loop, loss, optimizer, sampler, store and checkpoint code.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from mlflow_store import fresh_store

from vade.train.config import TrainConfig
from vade.train.local import RunPaths, train_local
from vade.train.local.toy import ToyPolicy

torch.set_num_threads(1)
N_TRAIN, G = 48, 8


def png_bytes(size: tuple[int, int] = (1, 1), colour: tuple[int, int, int] = (0, 0, 0)) -> bytes:
    """A small PNG: the toy policy reads no image, but every row must have one (read check)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _write_split(path: Path, n: int, split: str, seed: int, start: int = 0) -> None:
    rng = np.random.default_rng(seed)
    image = {"bytes": png_bytes(), "path": None}
    rows = []
    for i in range(n):
        gt = "ABCD"[rng.integers(4)]
        rows.append({
            "data_source": "synthetic/bars",
            "prompt": [{"role": "user", "content": "<image>Which bar is tallest?"}],
            "images": [image], "ability": "chart",
            "reward_model": {"style": "rule", "ground_truth": gt},
            "extra_info": {"split": split, "index": start + i, "uid": f"u{start + i}",
                           "task": "bars", "domain": "chart", "answer_type": "choice"},
        })
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_toy_data(d: Path) -> Path:
    """The toy runs' train/val splits and initial difficulty in ``d`` (other modules' ``data``)."""
    _write_split(d / "train.parquet", N_TRAIN, "train", 0)
    _write_split(d / "val.parquet", 12, "val", 1, start=1000)
    r = np.random.default_rng(2).integers(0, G + 1, N_TRAIN)
    pq.write_table(pa.table({"sample_id": np.arange(N_TRAIN, dtype=np.int64), "correct": r,
                             "rollouts": np.full(N_TRAIN, G)}), d / "initial.parquet")
    return d


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_toy_data(tmp_path_factory.mktemp("data"))


def _cfg(tmp_path: Path, **train) -> TrainConfig:
    base = {"batch_size": 6, "steps": 6, "lr": 0.05, "val_every": 3, "checkpoint_every": 2,
            "keep_checkpoints": 5}
    return TrainConfig.from_config({"name": "toy", "train": {**base, **train},
                                    "sampler": {"snapshot_every": 2},
                                    "tracking": {"mlflow_uri": fresh_store(tmp_path / "ml.db")}})


def _paths(data: Path, out: Path) -> RunPaths:
    return RunPaths(data, "toy", out, data / "initial.parquet")


def _tables(path: Path) -> dict[str, list]:
    """What must be equal after a resume (timings excluded: they are wall clock)."""
    con = duckdb.connect(str(path), read_only=True)
    out = {
        "steps": con.execute("SELECT step, n_selected, effective_ratio, mean_accuracy, rollouts"
                             " FROM steps ORDER BY step").fetchall(),
        "events": con.execute("SELECT * FROM events ORDER BY step, sample_id").fetchall(),
        "metrics": con.execute("SELECT step, name, value FROM metrics WHERE name NOT LIKE"
                               " 'timing_s/%' AND name <> 'vade/sampler_seconds'"
                               " ORDER BY step, name").fetchall(),
        "snapshots": con.execute("SELECT * FROM snapshots ORDER BY step, sample_id").fetchall(),
    }
    con.close()
    return out


def test_steps_update_weights_sampler_and_log_everything(data, tmp_path):
    # no weight decay (it moves every row), no KL loss (once the shared bias moved, it pulls on
    # every selected row; it is tested in test_train_algos)
    cfg = _cfg(tmp_path, steps=3, checkpoint_every=0, weight_decay=0.0,
               grpo={"kl_loss_coef": 0.0})
    out = tmp_path / "toy-grpo-vade-s0"
    start = ToyPolicy(cfg).model.emb.detach().clone()
    done = train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    assert json.loads((out / "done.json").read_text())["steps"] == 3
    assert done["rollouts_cumulative"] == 3 * 6 * G
    trained = torch.load(out / "final" / "toy.pt")["emb"]
    assert not torch.equal(trained, start)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    # eq. 5 on the selected samples: alpha <- 0.2 alpha + r, beta <- 0.2 beta + G - r
    ev = np.array(con.execute("SELECT alpha_before, beta_before, correct, alpha_after,"
                              " beta_after FROM events").fetchall())
    np.testing.assert_allclose(ev[:, 3], 0.2 * ev[:, 0] + ev[:, 2])
    np.testing.assert_allclose(ev[:, 4], 0.2 * ev[:, 1] + G - ev[:, 2])
    # trained rows are exactly the samples whose embedding rows moved: only informative groups
    # (0 < correct < G) carry a policy gradient, Adam moves no row that never had one, and the
    # toy's row of sample i is i (ids < its 4096-row table)
    eff = con.execute("SELECT step, effective_ratio FROM steps ORDER BY step").fetchall()
    assert [s for s, _ in eff] == [1, 2, 3]
    informative = {int(i) for (i,) in con.execute(
        f"SELECT DISTINCT sample_id FROM events WHERE correct > 0 AND correct < {G}").fetchall()}
    selected = {int(i) for (i,) in con.execute("SELECT DISTINCT sample_id FROM events").fetchall()}
    moved = set(np.flatnonzero((trained != start).any(dim=1).numpy()).tolist())
    assert moved == informative and 0 < len(moved) < len(selected)
    names = {r[0] for r in con.execute("SELECT DISTINCT name FROM metrics").fetchall()}
    assert {"vade/effective_ratio", "vade/rollouts_cumulative", "critic/score/mean",
            "actor/grad_norm", "actor/loss", "vade/sampler_seconds",
            "val/acc"} <= names
    con.close()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=cfg.tracking.mlflow_uri)
    run = client.get_run(done["mlflow_run_id"])
    assert run.info.run_name == "toy-grpo-vade-s0" and run.info.status == "FINISHED"
    assert run.data.params["train.method"] == "vade" and "code_version" in run.data.tags
    assert [m.step for m in client.get_metric_history(run.info.run_id, "val/acc")] == [0, 3]


def test_resume_after_a_crash_equals_an_uninterrupted_run(data, tmp_path):
    cfg = _cfg(tmp_path)
    whole = tmp_path / "a" / "toy-grpo-vade-s0"
    train_local(cfg, _paths(data, whole), progress=False, load_policy=ToyPolicy.load)
    cut = tmp_path / "b" / "toy-grpo-vade-s0"
    with pytest.raises(RuntimeError, match="simulated crash after step 5"):
        train_local(cfg, _paths(data, cut), progress=False, load_policy=ToyPolicy.load,
                    crash_after_step=5)  # step 5 is logged, the newest checkpoint is step 4
    assert not (cut / "done.json").exists()
    assert duckdb.connect(str(cut / "history.duckdb"), read_only=True).execute(
        "SELECT max(step) FROM steps").fetchone()[0] == 5
    done = train_local(cfg, _paths(data, cut), progress=False, load_policy=ToyPolicy.load)
    a, b = _tables(whole / "history.duckdb"), _tables(cut / "history.duckdb")
    assert [s[0] for s in b["steps"]] == [1, 2, 3, 4, 5, 6]  # none duplicated, none missing
    for table in a:
        assert a[table] == b[table], table
    assert torch.equal(torch.load(whole / "final" / "toy.pt")["emb"],
                       torch.load(cut / "final" / "toy.pt")["emb"])
    assert done["rollouts_cumulative"] == 6 * 6 * G
    from mlflow.tracking import MlflowClient

    hist = MlflowClient(tracking_uri=cfg.tracking.mlflow_uri).get_metric_history(
        done["mlflow_run_id"], "vade/effective_ratio")
    assert sorted(m.step for m in hist) == [1, 2, 3, 4, 5, 6]  # step 5 not logged twice


def test_dapo_refills_counts_all_rollouts_and_observes_kept_groups(data, tmp_path):
    cfg = _cfg(tmp_path, method="dapo", steps=4, checkpoint_every=0)
    out = tmp_path / "toy-grpo-dapo-s0"
    done = train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    steps = con.execute("SELECT step, n_selected, effective_ratio, rollouts FROM steps"
                        " ORDER BY step").fetchall()
    gen = dict(con.execute("SELECT step, value FROM metrics WHERE name ="
                           " 'dapo/num_gen_batches'").fetchall())
    assert all(eff == 1.0 for _, _, eff, _ in steps)   # only informative groups are observed
    assert any(gen[s] > 1 for s in gen)                   # it did regenerate
    assert done["rollouts_cumulative"] == sum(r for *_, r in steps) > 4 * 6 * G
    assert done["rollouts_cumulative"] <= 3 * 4 * 6 * G   # the cap: 3 x a plain run's rollouts
    assert done["stopped_by"] == "completed" and len(steps) == 4
    assert con.execute("SELECT count(*) FROM events WHERE correct = 0 OR correct = 8"
                       ).fetchone()[0] == 0


def test_dapo_stops_the_run_when_its_rollout_budget_is_spent(data, tmp_path):
    """Factor 1: DAPO may spend only a plain run's rollouts. It regenerates, so it runs out before
    its 4 steps: the run stops at the step that leaves less than one batch of budget, with that
    step validated and checkpointed, and resuming it runs nothing more."""
    cfg = _cfg(tmp_path, method="dapo", steps=4, checkpoint_every=3)
    cfg = cfg.with_overrides(dapo=type(cfg.dapo)(max_rollout_factor=1.0))
    out = tmp_path / "toy-grpo-dapo-s0"
    done = train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    budget = 4 * 6 * G
    assert done["stopped_by"] == "rollout_cap" and 1 <= done["steps"] < 4
    assert budget - 6 * G < done["rollouts_cumulative"] <= budget
    assert str(done["steps"]) in done["val_acc"]
    assert (out / "checkpoints" / f"step_{done['steps']:08d}.pt").is_file()
    again = train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    assert (again["steps"], again["rollouts_cumulative"]) == (done["steps"],
                                                              done["rollouts_cumulative"])
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    assert con.execute("SELECT count(*), sum(rollouts) FROM steps").fetchone() == (
        done["steps"], done["rollouts_cumulative"])


@pytest.mark.parametrize("train,match", [
    ({"batch_size": 64}, "train.batch_size = 64 exceeds the 48 training rows"),
    ({"method": "ppo"}, "train.method"),
    ({"rollouts_per_prompt": 1}, "train.rollouts_per_prompt"),
])
def test_bad_config_fails_before_any_work(data, tmp_path, train, match):
    loaded = []

    def never(path, cfg):
        loaded.append(path)
        raise AssertionError("the model must not be loaded")

    out = tmp_path / "run"
    with pytest.raises(ValueError, match=match):
        cfg = _cfg(tmp_path, **train)
        train_local(cfg, _paths(data, out), progress=False, load_policy=never)
    assert not loaded and not out.exists()


def test_missing_or_foreign_difficulty_is_named(data, tmp_path):
    cfg = _cfg(tmp_path)
    bad = tmp_path / "initial.parquet"
    pq.write_table(pa.table({"sample_id": np.arange(10, dtype=np.int64),
                             "correct": np.zeros(10, dtype=np.int64), "rollouts": np.full(10, 8)}), bad)
    with pytest.raises(ValueError, match="no initial difficulty for sample_id 10"):
        train_local(cfg, RunPaths(data, "toy", tmp_path / "r", bad), progress=False,
                    load_policy=ToyPolicy.load)
    with pytest.raises(ValueError, match="needs --difficulty"):
        train_local(cfg, RunPaths(data, "toy", tmp_path / "r"), progress=False,
                    load_policy=ToyPolicy.load)


def test_ratio_window_averages_first_and_last_steps():
    from vade.bench.train import ratio_window

    curve = [{"effective_ratio": v} for v in (1.0, 0.5, 0.25, 0.0)]
    assert ratio_window(curve, 2) == (0.75, 0.125)
    assert ratio_window(curve, 10) == (0.4375, 0.4375)  # window longer than the run


def test_bench_train_writes_curves_summary_and_plot(data, tmp_path):
    import csv
    import json

    import yaml

    from vade.bench.train import main

    cfg = tmp_path / "bench.yaml"
    cfg.write_text(yaml.safe_dump({"name": "toy", "train": {
        "batch_size": 6, "steps": 4, "lr": 0.05, "val_every": 2, "checkpoint_every": 2}}))
    out = tmp_path / "bench"
    assert main(["--config", str(cfg), "--data-dir", str(data), "--difficulty",
                 str(data / "initial.parquet"), "--toy", "--no-tracking", "--out-dir", str(out),
                 "--algorithms", "grpo", "--methods", "vanilla", "dapo", "--window", "2"]) == 0
    summary = {s["method"]: s for s in json.loads((out / "summary.json").read_text())}
    rows = list(csv.DictReader((out / "curves.csv").open()))
    assert (out / "curves.png").stat().st_size > 0
    van = [float(r["effective_ratio"]) for r in rows if r["method"] == "vanilla"]
    assert len(van) == 4 and summary["vanilla"]["steps"] == 4
    assert summary["vanilla"]["effective_ratio_first"] == pytest.approx(sum(van[:2]) / 2)
    assert summary["vanilla"]["effective_ratio_last"] == pytest.approx(sum(van[2:]) / 2)
    assert summary["vanilla"]["rollouts"] == 4 * 6 * G
    assert summary["dapo"]["rollouts"] >= summary["vanilla"]["rollouts"]
    phases = list(csv.DictReader((out / "phases.csv").open()))
    van_phases = {r["phase"]: float(r["seconds_per_step"]) for r in phases
                  if r["method"] == "vanilla"}
    assert {"generate", "reward", "actor", "sampler", "log", "step"} <= set(van_phases)
    assert van_phases == pytest.approx(summary["vanilla"]["phases"])


def test_phase_medians_hand_computed():
    from vade.bench.train import phase_medians

    timing = {"generate": [0.5, 0.1, 0.3], "actor": [0.2, 0.2, 0.8], "validate": [0.0, 0.0, 0.9],
              "checkpoint": []}
    got = phase_medians(timing)
    # per-step totals 0.7, 0.3, 2.0 -> median 0.7; validate is a mean (runs on few steps)
    assert got == pytest.approx({"generate": 0.3, "actor": 0.2, "validate": 0.3, "step": 0.7})


def test_every_step_is_timed_by_phase(data, tmp_path):
    """done.json's timing_s has one entry per step for every phase; the in-step phases are also
    step metrics, and they add up to no more than the step's own wall time."""
    from vade.train.local.timing import PHASES

    out = tmp_path / "toy-grpo-vanilla-s0"
    done = train_local(_cfg(tmp_path, steps=3, method="vanilla", checkpoint_every=2),
                       _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    assert set(done["timing_s"]) == set(PHASES)
    assert all(len(v) == 3 for v in done["timing_s"].values())
    assert [v > 0 for v in done["timing_s"]["checkpoint"]] == [False, True, True]  # steps 2, 3
    assert all(v > 0 for k in ("generate", "reward", "actor", "sampler", "log")
               for v in done["timing_s"][k])
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    rows = con.execute("SELECT step, name, value FROM metrics WHERE name LIKE 'timing_s/%'"
                       ).fetchall()
    con.close()
    m = {(s, n): v for s, n, v in rows}
    for step in (1, 2, 3):
        inner = sum(m[(step, f"timing_s/{k}")] for k in ("generate", "reward", "actor",
                                                        "sampler"))
        assert 0 < inner <= m[(step, "timing_s/step")] + 1e-9
