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
    # MathVista 1000 + MathVerse 3 x 788 + MathVision 304 + ScienceQA 2017 + ChartQA 2500
    assert plan.items_per_repeat == 8185
    assert plan.tokens_per_repeat == 8185 * 2048 == 16_762_880
    # 45 min (judge served in the job) + 16,762,880 tokens / 2000 tokens/s
    assert plan.minutes_per_job == pytest.approx(45 + 16_762_880 / 2000 / 60)  # 184.7
    assert plan.gpu_hours_per_checkpoint == pytest.approx(4 * 184.69 / 60 * 4, abs=0.01)
    assert plan.minutes_per_job < res["runtime"]
    plan.check()  # accepted


def test_cli_plan_prints_the_arithmetic_and_accepts_the_paper_config(capsys):
    assert main(["evaluate", "--plan", "--config", "config/config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "8,185 items x 4 repeats x 2048 tokens = 67,051,520 tokens" in out
    assert "per job: 184.7 min (runtime 720 min); per checkpoint: 49.3 GPU-hours" in out
    assert "MathVision       304 items x 2048 tokens" in out


@pytest.mark.parametrize("edit, knob", [
    # the pre-fix setup: transformers at batch 1 (~25 tokens/s) cannot finish a repeat in 12 h
    ({"policy": {"engine": "hf"}, "plan": {"tokens_per_s": None}},
     "evaluate.max_new_tokens <= 123 would fit"),
    # MathVision's own 16,384-token limit: 45 + 8185 x 16384 / 2000 / 60 = 1162 min > 720
    ({"max_new_tokens": 16384}, "evaluate.max_new_tokens <= 9896 would fit"),
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
