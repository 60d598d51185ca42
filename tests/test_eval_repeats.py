"""One evaluation job per (checkpoint, repeat) and the merge into average@k: the per-repeat job
on a tiny Qwen2.5-VL on CPU (real lmms-eval and the real training reward, on golds set from what
the seeded model answers), the merge's checks and the merged file's schema (what the report
reads)."""

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


def _golds_from(samples: list[dict], data) -> float:
    """Rewrite the eval set so that the even rows' golds are what their responses answered (as
    the reward reads them, answer type text) and the odd rows' can never match; return the
    score the real reward must then give, in percent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vade.rewards import extract_answer

    path = data / "eval" / "math.parquet"
    rows = pq.read_table(path).to_pylist()
    answered = {s["doc"]["extra_info"]["index"]: extract_answer(s["resps"][0][0]).answer
                for s in samples}
    right = 0
    for row in rows:
        idx = row["extra_info"]["index"]
        found = answered[idx]
        row["extra_info"]["answer_type"] = "text"
        if idx % 2 == 0 and found and found.strip():
            row["reward_model"]["ground_truth"] = found
            right += 1
        else:
            row["reward_model"]["ground_truth"] = "an answer no response gives"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return 100.0 * right / len(rows)


def test_one_repeat_job_writes_only_its_repeat(tmp_path, capsys):
    """Real lmms-eval and the real reward: a first run records what the tiny model answers;
    golds are then set so that exactly the even rows' answers are right, and the same seeded
    repeat must score exactly that share."""
    model = tmp_path / "model"
    build_tiny_qwen(model)
    data = tmp_path / "data"
    write_eval_set(data / "eval" / "math.parquet")
    out = tmp_path / "r1.duckdb"
    cfg = json.dumps({"name": "t", "evaluate": {"repeats": 2, "seed": 5, "max_new_tokens": 4}})
    args = ["evaluate", "--config-json", cfg, "--run-id", RUN, "--repeat", "1",
            "--checkpoint", str(model), "--data-dir", str(data), "--out", str(out),
            "--runtime-min", "60", "--samples-log", str(tmp_path / "s.jsonl")]
    assert main(args) == 0
    first = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    expected = _golds_from(first, data)
    assert expected > 0, "no even row's response had a readable answer"
    assert main(args) == 0
    rows = duckdb.connect(str(out), read_only=True).execute(
        "SELECT repeat, seed_eval, score FROM eval_results").fetchall()
    assert rows == [(1, 6, expected)]
    # every sample kept, with the response the score came from (the same as the first run's)
    samples = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and {s["task"] for s in samples} == {"vade_math"}
    assert {s["repeat"] for s in samples} == {1} and all("resps" in s for s in samples)
    assert [s["resps"] for s in samples] == [s["resps"] for s in first]
    assert sum(s["acc"] for s in samples) == expected * 4 / 100
    assert all(s["acc"] == 0.0 for s in samples if s["doc"]["extra_info"]["index"] % 2)
    assert main(["evaluate", "--config-json", cfg, "--run-id", RUN, "--repeat", "2",
                 "--checkpoint", str(model), "--data-dir", str(data), "--out", str(out)]) == 2
    assert "--repeat 2 is not one of the 2 repeats" in capsys.readouterr().err
