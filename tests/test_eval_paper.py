"""The paper config's evaluation settings: which tasks, which output limit, which image limits
(pure config and command building; lmms-eval's own argument parser is real, nothing runs a model)."""

from __future__ import annotations

import json

import pytest

from vade.eval.config import PAPER_BENCHMARKS, EvaluateConfig


def paper_evaluate() -> dict:
    """The `evaluate` section of config/config.yaml (the paper config), as shipped."""
    import yaml

    with open("config/config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)["evaluate"]


def test_all_three_math_benchmarks_are_judged_like_the_paper():
    judged = {b.name: (b.task, b.metric, b.scale) for b in PAPER_BENCHMARKS if b.judge}
    assert judged == {
        "MathVista": ("mathvista_testmini_cot", "llm_as_judge_eval", 1.0),
        "MathVerse": ("mathverse_testmini_vision", "gpt_eval_score", 100.0),
        "MathVision": ("mathvision_reason_testmini", "llm_as_judge_eval", 100.0)}


def test_mathvision_reason_metric_is_a_mean_of_zero_one(monkeypatch):
    """Why scale 100: lmms-eval's judged MathVision scores each item 0 or 1 and averages."""
    from lmms_eval.tasks.mathvision import utils

    class Judged:
        is_correct = True

    # the judge's verdict stands in (no server); lmms-eval's aggregation is real
    monkeypatch.setattr(utils, "_get_pipeline", lambda: (lambda **kw: Judged()))
    doc = {"answer": "3", "question": "q"}
    assert utils.mathvision_gpt_eval_process_results(doc, ["x"]) == {"llm_as_judge_eval": 1.0}


def test_one_output_limit_for_every_benchmark_through_gen_kwargs():
    from lmms_eval.utils import simple_parse_args_string

    from vade.eval.runner import gen_kwargs

    cfg = EvaluateConfig.from_dict(paper_evaluate())
    assert cfg.output_tokens == 2048  # the training response length (paper, Table 4)
    parsed = simple_parse_args_string(gen_kwargs(cfg, seed=7))
    assert parsed == {"max_new_tokens": 2048, "temperature": 0.6, "top_p": 1.0,
                      "do_sample": True, "seed": 7}
    assert EvaluateConfig.from_dict({"kind": "paper"}).output_tokens == 2048
    assert EvaluateConfig.from_dict({}).output_tokens == 64  # synthetic: the local trainer's
    assert EvaluateConfig.from_dict({"kind": "paper", "max_new_tokens": 512}).output_tokens == 512
    greedy = simple_parse_args_string(gen_kwargs(EvaluateConfig.from_dict(
        {"repeats": 1, "temperature": 0, "max_new_tokens": 9})))
    assert greedy == {"max_new_tokens": 9, "temperature": 0.0, "do_sample": False}


def test_base_model_is_evaluated_at_the_checkpoints_pixel_limits(tmp_path):
    from vade.eval.runner import pixels_for

    # a checkpoint saved by verl keeps the base model's processor (Qwen2.5-VL's limits)
    ckpt = tmp_path / "final"
    ckpt.mkdir()
    (ckpt / "preprocessor_config.json").write_text(
        json.dumps({"min_pixels": 3136, "max_pixels": 12845056}))
    cfg = EvaluateConfig.from_dict({"kind": "paper"})
    assert pixels_for(cfg, "Qwen/Qwen2.5-VL-7B-Instruct") == pixels_for(cfg, str(ckpt)) == {
        "min_pixels": 3136, "max_pixels": 12845056}
    fixed = EvaluateConfig.from_dict({"kind": "paper", "min_pixels": 3136, "max_pixels": 1003520})
    assert pixels_for(fixed, "Qwen/Qwen2.5-VL-7B-Instruct") == pixels_for(fixed, str(ckpt)) == {
        "min_pixels": 3136, "max_pixels": 1003520}
    with pytest.raises(ValueError, match="evaluate.min_pixels"):
        EvaluateConfig.from_dict({"min_pixels": 10, "max_pixels": 5})
