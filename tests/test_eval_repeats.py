"""One evaluation job per (checkpoint, repeat) and the merge into average@k: the per-repeat job
on a tiny Qwen2.5-VL on CPU (real lmms-eval, the training reward replaced by a stub that marks
even rows correct), the merge's checks and the merged file's schema (what the report reads)."""

from __future__ import annotations

import json

import duckdb
from test_eval import build_tiny_qwen, write_eval_set

from vade.cli import main
from vade.eval.store import CREATE_TABLE, EvalRow, write_eval_results

RUN = "tiny-grpo-vade-s0"


def _rows(repeat: int, scores: dict[str, float]) -> list[EvalRow]:
    return [EvalRow(RUN, "tiny", "grpo", "vade", 0, b, repeat, 10 + repeat, s, 8, "ck", f"t_{b}",
                    "acc") for b, s in scores.items()]


def _merge(tmp_path, files, repeats=2):
    cfg = json.dumps({"evaluate": {"repeats": repeats}})
    return main(["evaluate", "--config-json", cfg, "--run-id", RUN, "--no-mlflow",
                 "--merge", *map(str, files), "--out", str(tmp_path / "out.duckdb")])


def test_merge_makes_average_at_k_with_the_reports_schema(tmp_path):
    f0 = write_eval_results(tmp_path / "r0.duckdb", _rows(0, {"math": 50.0, "chart": 25.0}))
    f1 = write_eval_results(tmp_path / "r1.duckdb", _rows(1, {"math": 75.0, "chart": 0.0}))
    assert _merge(tmp_path, [f1, f0]) == 0
    con = duckdb.connect(str(tmp_path / "out.duckdb"), read_only=True)
    cols = [r[0] for r in con.execute("DESCRIBE eval_results").fetchall()]
    ref = duckdb.connect(":memory:")
    ref.execute(CREATE_TABLE)
    assert cols == [r[0] for r in ref.execute("DESCRIBE eval_results").fetchall()]
    got = con.execute("SELECT benchmark, k, score, seeds_eval FROM eval_average "
                      "ORDER BY benchmark").fetchall()
    assert got == [("chart", 2, 12.5, [10, 11]), ("math", 2, 62.5, [10, 11])]


def test_merge_refuses_a_missing_duplicate_or_foreign_repeat(tmp_path, capsys):
    f0 = write_eval_results(tmp_path / "r0.duckdb", _rows(0, {"math": 50.0}))
    assert _merge(tmp_path, [f0]) == 2
    assert "missing [1]" in capsys.readouterr().err
    dup = write_eval_results(tmp_path / "dup.duckdb", _rows(0, {"math": 10.0}))
    assert _merge(tmp_path, [f0, dup]) == 2
    assert "repeat 0 is also in" in capsys.readouterr().err
    other = write_eval_results(tmp_path / "o.duckdb", [
        EvalRow("tiny-base", "tiny", None, "base", None, "math", 1, 11, 1.0, 8, "ck", "t", "acc")])
    assert _merge(tmp_path, [f0, other]) == 2
    assert "rows of run tiny-base" in capsys.readouterr().err
    f1 = write_eval_results(tmp_path / "r1.duckdb", _rows(1, {"chart": 1.0}))
    assert _merge(tmp_path, [f0, f1]) == 2
    assert "different benchmarks" in capsys.readouterr().err
    assert not (tmp_path / "out.duckdb").exists()


def test_one_repeat_job_writes_only_its_repeat(tmp_path, monkeypatch, capsys):
    import vade.rewards

    model = tmp_path / "model"
    build_tiny_qwen(model)
    data = tmp_path / "data"
    write_eval_set(data / "eval" / "math.parquet")
    monkeypatch.setattr(vade.rewards, "compute_score", lambda ds, sol, gt, info=None, **kw: {
        "score": 0.0, "acc": 1.0 if info["index"] % 2 == 0 else 0.0})
    out = tmp_path / "r1.duckdb"
    cfg = json.dumps({"name": "t", "evaluate": {"repeats": 2, "seed": 5, "max_new_tokens": 4}})
    assert main(["evaluate", "--config-json", cfg, "--run-id", RUN, "--repeat", "1",
                 "--checkpoint", str(model), "--data-dir", str(data), "--out", str(out),
                 "--runtime-min", "60", "--samples-log", str(tmp_path / "s.jsonl")]) == 0
    rows = duckdb.connect(str(out), read_only=True).execute(
        "SELECT repeat, seed_eval, score FROM eval_results").fetchall()
    assert rows == [(1, 6, 50.0)]
    # every sample kept, with the response the score came from
    samples = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and {s["task"] for s in samples} == {"vade_math"}
    assert {s["repeat"] for s in samples} == {1} and all("resps" in s for s in samples)
    assert sorted(s["acc"] for s in samples) == [0.0, 0.0, 1.0, 1.0]
    assert main(["evaluate", "--config-json", cfg, "--run-id", RUN, "--repeat", "2",
                 "--checkpoint", str(model), "--data-dir", str(data), "--out", str(out)]) == 2
    assert "--repeat 2 is not one of the 2 repeats" in capsys.readouterr().err
