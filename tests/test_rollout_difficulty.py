"""Initial difficulty (Algorithm 1, lines 1-4): r per sample from G verified rollouts, written to
parquet + DuckDB atomically; the CLI end to end with a real (random) tiny model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from vade.cli import main
from vade.data.records import example_from_row
from vade.models.testing import bar_examples, bar_rows, tiny_policy, warm_base_model, write_rows
from vade.rollout.difficulty import (
    DifficultyConfig,
    difficulty_config_from_section,
    format_histogram,
    initial_difficulty,
    write_difficulty,
)
from vade.rollout.engine import Rollouts


class ScriptedEngine:
    """Example at train row i answers correctly in exactly i % (G+1) of its G rollouts."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls, self.fail_after, self.seeds = 0, fail_after, []

    def generate(self, examples, n, *, temperature, max_new_tokens, seed):
        self.calls += 1
        self.seeds.append(seed)
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("engine died")
        texts = []
        for ex in examples:
            r = ex.index % (n + 1)
            wrong = "D" if ex.ground_truth != "D" else "A"
            texts += [f"so \\boxed{{{ex.ground_truth}}}"] * r + [f"\\boxed{{{wrong}}}"] * (n - r)
        return Rollouts(np.repeat(np.arange(len(examples)), n), texts, n)


def test_counts_match_hand_computed_r_and_outputs_agree(tmp_path):
    exs = bar_examples(11, seed=0)
    cfg = DifficultyConfig(rollouts=4, batch_size=12)  # 3 prompts per engine call
    engine = ScriptedEngine()
    result = initial_difficulty(engine, exs, cfg, seed=5, progress=False)
    expected = [i % 5 for i in range(11)]  # 0 1 2 3 4 0 1 2 3 4 0
    assert result["correct"].tolist() == expected
    assert result["sample_id"].tolist() == list(range(11))
    assert engine.calls == 4 and len(set(engine.seeds)) == 4
    summary = write_difficulty(tmp_path, result, cfg=cfg)
    assert summary["pass_at_4_histogram"] == [3, 2, 2, 2, 2]
    assert summary["informative_fraction"] == pytest.approx(6 / 11)
    table = pq.read_table(tmp_path / "initial.parquet")
    assert table.column_names == ["sample_id", "correct", "rollouts"]
    assert all(str(t) == "int64" for t in table.schema.types)
    assert table.column("correct").to_pylist() == expected
    assert table.column("rollouts").to_pylist() == [4] * 11
    con = duckdb.connect(str(tmp_path / "difficulty.duckdb"), read_only=True)
    rows = con.execute("SELECT sample_id, correct, rollouts FROM initial_difficulty "
                       "ORDER BY sample_id").fetchall()
    con.close()
    assert rows == [(i, expected[i], 4) for i in range(11)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["difficulty.duckdb", "initial.parquet",
                                                          "summary.json"]


def test_engine_failure_leaves_no_output(tmp_path):
    exs = bar_examples(6, seed=0)
    cfg = DifficultyConfig(rollouts=2, batch_size=2)
    with pytest.raises(RuntimeError, match="engine died"):
        write_difficulty(tmp_path, initial_difficulty(ScriptedEngine(fail_after=2), exs, cfg,
                                                      seed=0, progress=False), cfg=cfg)
    assert list(tmp_path.iterdir()) == []


def test_sample_ids_must_be_row_positions():
    rows = bar_rows(3, seed=0)
    rows[2]["extra_info"]["index"] = 7
    exs = [example_from_row(r) for r in rows]
    with pytest.raises(ValueError, match=r"train row 2: extra_info\.index is 7, expected 2"):
        initial_difficulty(ScriptedEngine(), exs, DifficultyConfig(), seed=0, progress=False)


def test_config_validation_names_the_key():
    assert difficulty_config_from_section(None) == DifficultyConfig()
    with pytest.raises(ValueError, match=r"'difficulty\.rollouts' must be an integer in \[2,"):
        difficulty_config_from_section({"rollouts": 1})
    with pytest.raises(ValueError, match=r"'difficulty\.rollout' is unknown"):
        difficulty_config_from_section({"rollout": 8})
    with pytest.raises(ValueError, match=r"'difficulty\.engine' must be one of"):
        difficulty_config_from_section({"engine": "sglang"})
    with pytest.raises(ValueError, match=r"difficulty\.temperature"):
        difficulty_config_from_section({"temperature": 0})


def test_histogram_text():
    text = format_histogram([1, 2, 1])
    assert "pass@2 histogram" in text and "r=1" in text
    assert "informative (0 < r < G): 2 (50.0%), never right: 1, always right: 1" in text


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("base")
    tiny_policy(bar_examples(6, seed=3)).save(folder)
    return folder


def _cli(tmp_path: Path, model: Path, out: str, cfg: dict) -> int:
    data = tmp_path / "train.parquet"
    if not data.exists():
        write_rows(data, bar_rows(5, seed=9))
    return main(["init-difficulty", "--config-json", json.dumps(cfg), "--data", str(data),
                 "--model", str(model), "--out", str(tmp_path / out), "--no-progress"])


@pytest.fixture(scope="module")
def warm_model(tmp_path_factory):
    """The smallest tiny Qwen2.5-VL, warm-started 40 steps on bar charts (as in
    test_train_tiny_vlm): it answers some rollouts right and some wrong, so counts can differ."""
    return warm_base_model(tmp_path_factory.mktemp("warm"),
                           bar_rows(64, seed=5, split="warmstart", start_index=5000))


def test_init_difficulty_command_end_to_end(tmp_path, warm_model, capsys):
    """Real: the CLI, HF engine, warm-started tiny model and reward. Same seed, same counts;
    another seed, other counts (a random model scored 0 everywhere, so "same" compared zeros)."""
    write_rows(tmp_path / "train.parquet", bar_rows(12, seed=9))

    def counts(out: str, seed: int) -> dict:
        cfg = {"seed": seed, "difficulty": {"engine": "hf", "rollouts": 4, "max_new_tokens": 12,
                                            "batch_size": 16}}
        assert _cli(tmp_path, warm_model, out, cfg) == 0
        return pq.read_table(tmp_path / out / "initial.parquet").to_pydict()

    a = counts("a", 1)
    assert "pass@4 histogram" in capsys.readouterr().out
    assert a["sample_id"] == list(range(12)) and a["rollouts"] == [4] * 12
    assert 0 < sum(a["correct"]) < 12 * 4 and len(set(a["correct"])) > 1
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["seed"] == 1 and summary["prompts_per_second"] > 0
    assert counts("b", 1) == a                        # same seed, same counts
    assert counts("c", 2)["correct"] != a["correct"]  # another seed, other rollouts


def test_init_difficulty_command_errors(tmp_path, saved_model, capsys):
    assert _cli(tmp_path, saved_model, "c", {"seed": 0, "difficulty": {"rollouts": 1}}) == 2
    assert "difficulty.rollouts" in capsys.readouterr().err
    assert _cli(tmp_path, tmp_path / "no-model", "c", {"seed": 0}) == 2
    assert "no-model (config.json missing)" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_pipeline_on_the_synthetic_generator(tmp_path, capsys):
    """build-data -> build-model -> init-difficulty, the workflow's first three rules, tiny sizes."""
    pytest.importorskip("vade.data.synthetic")
    data_cfg = {"seed": 2, "data": {"kind": "synthetic", "synthetic": {
        "train": 6, "val": 0, "warmstart": 12, "eval": 0}}}
    assert main(["build-data", "--config-json", json.dumps(data_cfg), "--out",
                 str(tmp_path / "data"), "--no-progress"]) == 0
    small = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
             "intermediate_size": 64, "mrope_section": [2, 3, 3], "vision_hidden_size": 32,
             "vision_depth": 2, "vision_heads": 2, "vision_intermediate_size": 64}
    model_cfg = {"seed": 2, "model": {"kind": "tiny", "tiny": small,
                                      "warm_start": {"steps": 2, "batch_size": 4}}}
    assert main(["build-model", "--config-json", json.dumps(model_cfg), "--no-progress",
                 "--warmstart", str(tmp_path / "data" / "warmstart.parquet"),
                 "--out", str(tmp_path / "base")]) == 0
    diff_cfg = {"seed": 2, "difficulty": {"rollouts": 2, "max_new_tokens": 3}}
    assert main(["init-difficulty", "--config-json", json.dumps(diff_cfg), "--no-progress",
                 "--data", str(tmp_path / "data" / "train.parquet"),
                 "--model", str(tmp_path / "base"), "--out", str(tmp_path / "difficulty")]) == 0
    table = pq.read_table(tmp_path / "difficulty" / "initial.parquet").to_pydict()
    assert table["sample_id"] == list(range(6)) and table["rollouts"] == [2] * 6
    assert "pass@2 histogram" in capsys.readouterr().out
