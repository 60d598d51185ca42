"""`vade evaluate --plan`: items x repeats x max tokens and GPU-hours per checkpoint, and the
refusal of a plan whose (checkpoint, repeat) job cannot finish inside the rule's runtime
(pure arithmetic on the paper config as shipped; nothing stands in)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from vade.cli import main
from vade.eval.config import EvaluateConfig
from vade.eval.plan import PlanError, make_plan


@pytest.fixture(scope="module")
def paper() -> dict:
    with open("config/config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_paper_default_plan_fits_its_runtime_by_hand_computed_numbers(paper):
    cfg = EvaluateConfig.from_dict(paper["evaluate"])
    res = paper["resources"]["evaluate"]
    plan = make_plan(cfg, runtime_min=res["runtime"], gpus=res["gpu"])
    # MathVista 1000 + MathVerse testmini 3940, twice (query_wo and its CoT companion)
    # + MathVision 304 + ScienceQA 2017 + ChartQA 2500
    assert plan.items_per_repeat == 1000 + 2 * 3940 + 304 + 2017 + 2500 == 13701
    assert plan.tokens_per_repeat == 13701 * 2048 == 28_059_648
    # 45 min (judge served in the job) + 28,059,648 tokens / 2000 tokens/s
    assert plan.minutes_per_job == pytest.approx(45 + 28_059_648 / 2000 / 60)  # 278.8
    assert plan.gpu_hours_per_checkpoint == pytest.approx(4 * 278.830 / 60 * 4, abs=0.01)
    assert plan.minutes_per_job < res["runtime"]
    plan.check()  # accepted


def test_cli_plan_prints_the_arithmetic_and_accepts_the_paper_config(capsys):
    assert main(["evaluate", "--plan", "--config", "config/config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "13,701 items x 4 repeats x 2048 tokens = 112,238,592 tokens" in out
    assert "per job: 278.8 min (runtime 720 min); per checkpoint: 74.4 GPU-hours" in out
    assert "MathVerse      3,940 items x 2048 tokens" in out
    assert "MathVerse (CoT)   3,940 items x 2048 tokens" in out
    assert "MathVision       304 items x 2048 tokens" in out


@pytest.mark.parametrize("edit, knob", [
    # the pre-fix setup: transformers at batch 1 (~25 tokens/s) cannot finish a repeat in 12 h
    ({"policy": {"engine": "hf"}, "plan": {"tokens_per_s": None}},
     "evaluate.max_new_tokens <= 73 would fit"),  # (720 - 45) x 60 x 25 / 13701 = 73.9
    # MathVision's own 16,384-token limit: 45 + 13701 x 16384 / 2000 / 60 = 1916 min > 720
    ({"max_new_tokens": 16384}, "evaluate.max_new_tokens <= 5911 would fit"),
])
def test_plan_refuses_a_job_that_cannot_finish_and_names_the_knob(paper, capsys, edit, knob):
    cfg = copy.deepcopy(paper)
    cfg["evaluate"].update(edit)
    with pytest.raises(PlanError, match="resources.evaluate.runtime is 720 min") as err:
        make_plan(EvaluateConfig.from_dict(cfg["evaluate"]), runtime_min=720, gpus=4).check()
    assert knob in str(err.value)
    rc = main(["evaluate", "--plan", "--config-json", json.dumps(cfg)])
    assert rc == 2 and knob in capsys.readouterr().err


def test_plan_without_item_counts_names_the_benchmark():
    cfg = EvaluateConfig.from_dict({"kind": "paper", "benchmarks": [
        {"name": "X", "task": "x_task", "metric": "acc"}]})
    with pytest.raises(PlanError, match=r"evaluate.benchmarks\[0\].items"):
        make_plan(cfg, runtime_min=60, gpus=1)


def test_the_mathverse_subset_is_counted_by_the_plan(paper):
    """vision_only scores 788 MathVerse items instead of testmini's 3,940 (issue 25)."""
    cfg = copy.deepcopy(paper["evaluate"])
    cfg["mathverse_subset"] = "vision_only"
    plan = make_plan(EvaluateConfig.from_dict(cfg), runtime_min=720, gpus=4)
    assert dict(plan.items)["MathVerse"] == dict(plan.items)["MathVerse (CoT)"] == 788
    assert plan.items_per_repeat == 1000 + 2 * 788 + 304 + 2017 + 2500 == 7397
    with pytest.raises(ValueError, match="'evaluate.mathverse_subset' must be one of"):
        EvaluateConfig.from_dict({**cfg, "mathverse_subset": "vision"})
    with pytest.raises(ValueError, match="not both"):
        EvaluateConfig.from_dict({**cfg, "benchmarks": [{"name": "X", "task": "x",
                                                          "metric": "acc"}]})
