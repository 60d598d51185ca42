"""DIVA-GRPO on the local trainer with a real tiny Qwen2.5-VL: variants, levels, cost, resume.

Real: synthetic rows from the renderer, variants from ``make_variant``, the tiny model (one
layer, warm-started 40 steps on synthetic rows), generation, the reward, the DIVA advantage, the
actor update, DuckDB. Nothing is a stand-in.
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

pytest.importorskip("transformers")

from vade.data.config import DEFAULT_PROMPT_TEMPLATE, SyntheticConfig
from vade.data.synthetic.generate import make_items
from vade.data.writer import verl_row
from vade.diva import initial_levels, update_levels
from vade.train.config import TrainConfig
from vade.train.local import RunPaths, train_local

torch.set_num_threads(1)
N_TRAIN, G, B = 12, 4, 3


def _rows(split: str, n: int, start: int = 0) -> list[dict]:
    per = {"math": n // 3, "chart": n // 3, "science": n - 2 * (n // 3)}
    items = make_items(SyntheticConfig(), 11, split, per, set())
    return [verl_row(it, start + i, split, DEFAULT_PROMPT_TEMPLATE, False)
            for i, it in enumerate(items)]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from vade.models.testing import warm_base_model, write_rows

    d = tmp_path_factory.mktemp("diva")
    warm_base_model(d, _rows("warmstart", 48, 5000), max_positions=384)
    write_rows(d / "train.parquet", _rows("train", N_TRAIN))
    write_rows(d / "val.parquet", _rows("val", 3, 1000))
    r = np.random.default_rng(0).integers(0, 9, N_TRAIN)
    pq.write_table(pa.table({"sample_id": np.arange(N_TRAIN, dtype=np.int64), "correct": r,
                             "rollouts": np.full(N_TRAIN, 8)}), d / "initial.parquet")
    return d


def _cfg(tmp_path: Path, method: str, **train) -> TrainConfig:
    base = {"method": method, "batch_size": B, "rollouts_per_prompt": G, "steps": 3, "lr": 1e-3,
            "max_new_tokens": 8, "val_every": 0, "val_before_train": False,
            "checkpoint_every": 2, "keep_checkpoints": 3}
    return TrainConfig.from_config({"name": "t", "train": {**base, **train},
                                    "tracking": {"mlflow_uri": fresh_store(tmp_path / "ml.db")}})


def _run(data: Path, out: Path, cfg: TrainConfig, **kw):
    return train_local(cfg, RunPaths(data, str(data / "base"), out, data / "initial.parquet"),
                       progress=False, **kw)


def _tables(path: Path):
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                for t in ("levels", "events", "steps")}, con.execute(
            "SELECT sampler FROM runs").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("method, sampler", [("diva", "uniform"), ("vade-diva", "vade")])
def test_levels_move_by_the_table_and_variants_count_as_rollouts(data, tmp_path, method, sampler):
    out = tmp_path / f"t-grpo-{method}-s0"
    done = _run(data, out, _cfg(tmp_path, method))
    assert done["rollouts_cumulative"] == 3 * 2 * B * G  # originals and variants
    tables, used = _tables(out / "history.duckdb")
    assert used == sampler
    r = pq.read_table(data / "initial.parquet")["correct"].to_numpy()
    levels = {row[2]: row[3] for row in tables["levels"] if row[1] == 0}
    assert [levels[i] for i in range(N_TRAIN)] == initial_levels(r, 8).tolist()
    events = {(row[1], row[2]): row[5] for row in tables["events"]}  # (step, sample) -> correct
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    variant_acc = dict(con.execute("SELECT step, value FROM metrics "
                                   "WHERE name = 'diva/variant_accuracy'").fetchall())
    con.close()
    for step in (1, 2, 3):
        rows = [row for row in tables["levels"] if row[1] == step]
        assert len(rows) == B
        for _, _, sample, level, offset, mean in rows:
            assert -8 <= offset <= 8
            expected = update_levels(np.array([levels[sample]]), np.array([mean]))[0]
            assert level == expected
            # the original's own group is what the sampler saw; the mean adds the variant's
            original = events[(step, sample)]
            assert 0 <= mean * 2 * G - original <= G
            levels[sample] = level
        variant_correct = sum(row[5] * 2 * G - events[(step, row[2])] for row in rows)
        assert variant_correct / (B * G) == pytest.approx(variant_acc[step])
    assert [row[5] for row in tables["steps"]] == [2 * B * G] * 3  # rollouts per step


def test_diva_resume_equals_an_uninterrupted_run(data, tmp_path):
    cfg = _cfg(tmp_path, "vade-diva", steps=4)
    whole = tmp_path / "a" / "t-grpo-vade-diva-s0"
    _run(data, whole, cfg)
    cut = tmp_path / "b" / "t-grpo-vade-diva-s0"
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run(data, cut, cfg, crash_after_step=3)  # step 3 logged, newest checkpoint step 2
    _run(data, cut, cfg)
    a, _ = _tables(whole / "history.duckdb")
    b, _ = _tables(cut / "history.duckdb")
    assert a["levels"] == b["levels"] and a["events"] == b["events"]
    assert [s[1] for s in b["steps"]] == [1, 2, 3, 4]
    assert json.loads((cut / "done.json").read_text())["rollouts_cumulative"] == 4 * 2 * B * G
