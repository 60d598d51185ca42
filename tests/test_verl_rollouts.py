"""DAPO's rollout accounting and capped stop, on recorded metrics and a stand-in trainer (CPU)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import duckdb
import numpy as np
import pytest

from vade.train.verl.dapo_entry import DapoRecorder
from vade.train.verl.rollouts import (
    cumulative_rollouts,
    read_metric_log,
    rollouts_for,
    rollouts_per_step,
)


def write_log(path, records):
    path.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in records))
    return path


def test_rollouts_from_recorded_metrics(tmp_path):
    # attempt 1 ran steps 1-3 and crashed; attempt 2 resumed from step 2's checkpoint
    a1 = write_log(tmp_path / "a1.jsonl", [
        (0, {"val-core/x/acc/mean@1": 0.2}),
        (1, {"train/num_gen_batches": 1, "actor/grad_norm": 0.1}),
        (2, {"train/num_gen_batches": 3, "actor/grad_norm": 0.1}),
        (3, {"train/num_gen_batches": 2, "actor/grad_norm": 0.1})])
    a2 = write_log(tmp_path / "a2.jsonl", [
        (3, {"train/num_gen_batches": 4, "actor/grad_norm": 0.2}),
        (3, {"timing/save_checkpoint": 1.5}),           # a second record of the same step
        (4, {"train/num_gen_batches": 1, "actor/grad_norm": 0.2})])
    metrics = read_metric_log([a1, a2])
    assert metrics[3] == {"train/num_gen_batches": 4, "actor/grad_norm": 0.2,
                          "timing/save_checkpoint": 1.5}
    steps, per = rollouts_per_step(metrics, gen_batch_size=512, n=8)
    assert steps.tolist() == [1, 2, 3, 4]
    assert per.tolist() == [4096, 3 * 4096, 4 * 4096, 4096]
    _, cum = cumulative_rollouts(metrics, 512, 8)
    assert cum.tolist() == [4096, 16384, 32768, 36864]
    # a non-filtering run: one generation batch per trained step
    plain = {1: {"actor/grad_norm": 1.0}, 2: {"training/global_step": 2}}
    assert rollouts_per_step(plain, 4, 2)[1].tolist() == [8, 8]
    with pytest.raises(ValueError, match="num_gen_batches"):
        rollouts_for(0, 512, 8)
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_metric_log([tmp_path / "bad.jsonl"])


def fake_batch(ids, acc):
    return SimpleNamespace(batch=None, non_tensor_batch={
        "extra_info": np.array([{"index": i} for i in ids], dtype=object),
        "acc": np.asarray(acc, dtype=float)})


def settings(tmp_path):
    return {"run_id": "m-grpo-dapo-s0", "store": str(tmp_path / "history.duckdb"),
            "stop_file": str(tmp_path / "stop.json"), "tracking_uri": None,
            "base_epochs": 2, "max_rollout_factor": 3.0}


def test_recorder_counts_generated_not_kept_rollouts(tmp_path):
    rec = DapoRecorder(settings(tmp_path), sample_ids=np.arange(10), batch_size=2,
                       gen_batch_size=2, n=2)
    # step 1 needed 3 generation batches (run counter 0 -> 3), step 2 one (-> 4)
    rec.record(1, fake_batch([5, 7, 5, 7], [1, 0, 0, 1]), gen_batches_used=3)
    rec.record(2, fake_batch([1, 1, 2, 2], [1, 0, 0, 1]), gen_batches_used=4)
    with pytest.raises(ValueError, match="did not advance"):
        rec.record(3, fake_batch([1, 1], [1, 0]), gen_batches_used=4)
    info = rec.finish("rollout_cap", total_training_steps=10, gen_batches_used=4,
                      gen_batch_limit=5)
    assert info["reason"] == "rollout_cap" and info["steps_trained"] == 2
    assert json.loads((tmp_path / "stop.json").read_text())["reason"] == "rollout_cap"
    con = duckdb.connect(str(tmp_path / "history.duckdb"), read_only=True)
    rows = con.execute("SELECT step, rollouts, rollouts_cumulative, effective_ratio "
                       "FROM step_summary ORDER BY step").fetchall()
    assert rows == [(1, 12, 12, 1.0), (2, 4, 16, 1.0)]
    ev = con.execute("SELECT sample_id, correct, rollouts FROM events WHERE step = 1 "
                     "ORDER BY sample_id").fetchall()
    assert ev == [(5, 1.0, 2.0), (7, 1.0, 2.0)]
    con.close()
