"""Named numbers beside a benchmark's table number, and the judge beside every judged number.

Real: the config schema, the runner's reading of an lmms-eval result, the DuckDB store, the merge
command's printout. Stand-in: the lmms-eval result dicts are written here in the shape
``simple_evaluate`` returns (no model runs).
"""

from __future__ import annotations

import json

import duckdb
import pytest

from vade.cli import main
from vade.eval.config import Benchmark, Companion, EvaluateConfig, JudgeConfig
from vade.eval.runner import companion_scores, lmms_eval_call, target_for
from vade.eval.store import EvalRow, open_eval_catalog, read_eval_rows, write_eval_results

RUN = "qwen2.5-vl-7b-grpo-vade-s0"
JUDGE = "Qwen/Qwen2.5-72B-Instruct"


def test_paper_defaults_name_the_official_number_and_its_companions():
    cfg = EvaluateConfig.from_dict({"kind": "paper"})
    by = {b.name: b for b in cfg.benchmarks}
    assert [b.name for b in cfg.benchmarks] == ["MathVista", "MathVerse", "MathVision",
                                                "ScienceQA", "ChartQA"]
    assert by["MathVerse"].task == "vade_mathverse_testmini"  # query_wo: the official primary
    assert by["MathVerse"].companions == (Companion("CoT", "vade_mathverse_testmini_cot",
                                                    "accuracy"),)
    assert by["ChartQA"].metric == "relaxed_overall"  # lmms-eval's official metric
    assert by["ChartQA"].companions == (Companion("reward", "vade_chartqa_reasoning",
                                                  "relaxed_overall_reward"),)
    assert by["ScienceQA"].companions[0].metric == "exact_match_reward"
    vision = EvaluateConfig.from_dict({"kind": "paper", "mathverse_subset": "vision_only"})
    assert vision.benchmarks[1].tasks == ("vade_mathverse_testmini_vision_only",
                                          "vade_mathverse_testmini_vision_only_cot")
    # one lmms-eval run per task: ChartQA's reward companion reads the same task's samples
    call = lmms_eval_call(cfg, target_for(RUN, "ck"), cfg.benchmarks, 0)
    assert call["tasks"].count("vade_chartqa_reasoning") == 1
    assert len(call["tasks"]) == 6


@pytest.mark.parametrize("companions, key", [
    ("x", r"'evaluate.benchmarks\[0\].companions' must be a list"),
    ([{"name": "a", "task": "t"}],
     r"'evaluate.benchmarks\[0\].companions\[0\]\.metric' is required"),
    ([{"name": "a", "task": "t", "metric": ""}],
     r"'evaluate.benchmarks\[0\].companions\[0\]\.metric' must be a non-empty string"),
    ([{"name": "a", "task": "t", "metric": "m", "scale": 2}], r"companions\[0\]"),
    ([{"name": "a", "task": "t", "metric": "m"}] * 2, "companions' must name each companion once"),
])
def test_bad_companions_are_named(companions, key):
    bench = {"name": "B", "task": "t", "metric": "m", "companions": companions}
    with pytest.raises(ValueError, match=key):
        EvaluateConfig.from_dict({"kind": "paper", "benchmarks": [bench]})


def test_companion_scores_read_their_own_task_and_metric():
    bench = Benchmark("MathVerse", "v", "accuracy", companions=(Companion("CoT", "v_cot",
                                                                          "accuracy"),))
    result = {"results": {"v": {"accuracy,none": 0.5}, "v_cot": {"accuracy,none": 0.25}},
              "n-samples": {"v": {"effective": 8}, "v_cot": {"effective": 8}}}
    assert json.loads(companion_scores(result, bench)) == {
        "CoT": {"score": 25.0, "task": "v_cot", "metric": "accuracy"}}
    assert companion_scores(result, Benchmark("X", "v", "accuracy")) is None
    with pytest.raises(ValueError, match=r"MathVerse \(CoT\): lmms-eval returned no result"):
        companion_scores({"results": {"v": {}}}, bench)


def test_the_judge_label_is_the_model_it_runs():
    assert JudgeConfig.from_dict({"mode": "serve"}).label == JUDGE  # the paper's judge
    external = JudgeConfig.from_dict({"mode": "external", "url": "https://api.openai.com/v1",
                                      "served_name": "gpt-4o-2024-08-06",
                                      "api_key_env": "OPENAI_API_KEY"})
    assert external.label == "gpt-4o-2024-08-06"


def _rows(repeat: int, verse: float, cot: float) -> list[EvalRow]:
    extras = json.dumps({"CoT": {"score": cot, "task": "v_cot", "metric": "accuracy"}})
    return [EvalRow(RUN, "qwen2.5-vl-7b", "grpo", "vade", 0, "MathVerse", repeat, repeat, verse,
                    8, "ck", "v", "accuracy", JUDGE, extras),
            EvalRow(RUN, "qwen2.5-vl-7b", "grpo", "vade", 0, "ChartQA", repeat, repeat, 80.0, 8,
                    "ck", "c", "relaxed_overall")]


def test_merge_prints_companions_and_the_judge_beside_the_number(tmp_path, capsys):
    files = [write_eval_results(tmp_path / f"r{i}.duckdb", _rows(i, v, c))
             for i, (v, c) in enumerate([(50.0, 40.0), (25.0, 30.0)])]
    rc = main(["evaluate", "--config-json", json.dumps({"evaluate": {"repeats": 2}}),
               "--run-id", RUN, "--no-mlflow", "--merge", *map(str, files),
               "--out", str(tmp_path / "out.duckdb")])
    assert rc == 0
    out = capsys.readouterr().out
    assert (f"{RUN} MathVerse: average@2 = 37.50 (accuracy); CoT = 35.00; judge {JUDGE}"
            in out)
    assert f"{RUN} ChartQA: average@2 = 80.00 (relaxed_overall)\n" in out
    rows = read_eval_rows(tmp_path / "out.duckdb")
    assert {(r.benchmark, r.judge) for r in rows} == {("MathVerse", JUDGE), ("ChartQA", None)}
    con = open_eval_catalog([tmp_path / "out.duckdb"])
    got = con.execute("SELECT benchmark, judge FROM eval_average ORDER BY 1").fetchall()
    assert got == [("ChartQA", None), ("MathVerse", JUDGE)]  # companions are no column


def test_files_written_before_the_judge_and_extras_columns_still_read(tmp_path):
    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    con.execute("CREATE TABLE eval_results (run_id VARCHAR, model VARCHAR, algorithm VARCHAR, "
                "method VARCHAR, seed BIGINT, benchmark VARCHAR, repeat INTEGER, "
                "seed_eval BIGINT, score DOUBLE, n BIGINT, checkpoint VARCHAR, task VARCHAR, "
                "metric VARCHAR)")
    con.execute("INSERT INTO eval_results VALUES ('x-base', 'x', NULL, 'base', NULL, 'M', 0, 0, "
                "50.0, 4, 'ck', 't', 'acc')")
    con.close()
    (row,) = read_eval_rows(old)
    assert (row.score, row.judge, row.extras) == (50.0, None, None)
    cat = open_eval_catalog([old])
    assert cat.execute("SELECT score, judge FROM eval_average").fetchall() == [(50.0, None)]
