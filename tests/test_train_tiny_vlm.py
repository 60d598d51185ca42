"""Real RL on the tiny Qwen2.5-VL: weights and sampler state move, resume is exact, DAPO+GSPO run.

The model is the smallest the architecture allows (~56k parameters, one layer), warm-started for
40 steps on the bar task so that it answers in ``\\boxed{}`` with a spread of accuracy, i.e. some
groups are informative and the policy gradient is not zero.
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

pytest.importorskip("transformers")

from vade.train.config import TrainConfig
from vade.train.local import RunPaths, train_local

torch.set_num_threads(1)
N_TRAIN, G = 16, 4


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from vade.models.testing import bar_rows, warm_base_model, write_rows

    d = tmp_path_factory.mktemp("vlm")
    warm_base_model(d, bar_rows(64, seed=5, split="warmstart", start_index=5000))
    write_rows(d / "train.parquet", bar_rows(N_TRAIN, seed=6, split="train"))
    write_rows(d / "val.parquet", bar_rows(6, seed=7, split="val", start_index=1000))
    r = np.random.default_rng(0).integers(0, 9, N_TRAIN)
    pq.write_table(pa.table({"sample_id": np.arange(N_TRAIN, dtype=np.int64), "correct": r,
                             "rollouts": np.full(N_TRAIN, 8)}), d / "initial.parquet")
    return d


def _cfg(tmp_path: Path, **train) -> TrainConfig:
    base = {"batch_size": 4, "rollouts_per_prompt": G, "steps": 3, "lr": 1e-3,
            "max_new_tokens": 8, "val_every": 0, "val_before_train": False,
            "checkpoint_every": 2, "keep_checkpoints": 3}
    return TrainConfig.from_config({"name": "t", "train": {**base, **train},
                                    "tracking": {"mlflow_uri": f"sqlite:///{tmp_path}/ml.db"}})


def _run(data: Path, out: Path, cfg: TrainConfig, **kw):
    return train_local(cfg, RunPaths(data, str(data / "base"), out, data / "initial.parquet"),
                       progress=False, **kw)


def test_real_steps_change_weights_and_sampler_state(data, tmp_path):
    from vade.models.policy import load_policy

    out = tmp_path / "tiny-grpo-vade-s0"
    done = _run(data, out, _cfg(tmp_path))
    assert json.loads((out / "done.json").read_text())["rollouts_cumulative"] == 3 * 4 * G
    base = load_policy(data / "base").model.state_dict()
    final = load_policy(out / "final").model.state_dict()  # save_pretrained, reloadable
    moved = [k for k in base if not torch.equal(base[k], final[k])]
    assert len(moved) > len(base) // 2
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    ev = np.array(con.execute("SELECT step, alpha_before, beta_before, correct, alpha_after,"
                              " beta_after FROM events ORDER BY step").fetchall())
    assert ev.shape == (3 * 4, 6)
    np.testing.assert_allclose(ev[:, 4], 0.2 * ev[:, 1] + ev[:, 3])       # eq. 5
    np.testing.assert_allclose(ev[:, 5], 0.2 * ev[:, 2] + G - ev[:, 3])
    grad = con.execute("SELECT value FROM metrics WHERE name = 'actor/grad_norm'").fetchall()
    assert any(v > 0 for (v,) in grad)
    assert done["val_acc_final"] is not None and 0 <= done["val_acc_final"] <= 1
    con.close()


def test_real_model_resume_equals_uninterrupted(data, tmp_path):
    cfg = _cfg(tmp_path, steps=4, algorithm="gspo", ppo_epochs=2)
    whole = tmp_path / "a" / "tiny-gspo-vade-s0"
    _run(data, whole, cfg)
    cut = tmp_path / "b" / "tiny-gspo-vade-s0"
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run(data, cut, cfg, crash_after_step=3)
    _run(data, cut, cfg)

    def history(p: Path):
        con = duckdb.connect(str(p / "history.duckdb"), read_only=True)
        out = (con.execute("SELECT step, effective_ratio, rollouts FROM steps ORDER BY step"
                           ).fetchall(),
               con.execute("SELECT * FROM events ORDER BY step, sample_id").fetchall(),
               con.execute("SELECT step, name, value FROM metrics WHERE name LIKE 'actor/%'"
                           " ORDER BY step, name").fetchall())
        con.close()
        return out

    a, b = history(whole), history(cut)
    assert [s for s, *_ in b[0]] == [1, 2, 3, 4]
    assert a == b


def test_dapo_with_gspo_on_the_real_model(data, tmp_path):
    out = tmp_path / "tiny-gspo-dapo-s0"
    done = _run(data, out, _cfg(tmp_path, method="dapo", algorithm="gspo", steps=2,
                                checkpoint_every=0))
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    rollouts = [r for (r,) in con.execute("SELECT rollouts FROM steps ORDER BY step").fetchall()]
    assert all(4 * G <= r <= 3 * 4 * G for r in rollouts)
    assert done["rollouts_cumulative"] == sum(rollouts)
    con.close()
