"""The paper config's evaluation settings: which tasks, which output limit, which image limits
(pure config and command building; lmms-eval's own argument parser is real, no model runs)."""

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
    judged = {b.name: (b.task, b.metric, b.scale, b.items) for b in PAPER_BENCHMARKS if b.judge}
    assert judged == {
        "MathVista": ("vade_mathvista_testmini", "accuracy", 100.0, 1000),
        "MathVerse": ("vade_mathverse_testmini", "accuracy", 100.0, 3940),
        "MathVision": ("vade_mathvision_testmini", "accuracy", 100.0, 304)}
    rule = EvaluateConfig.from_dict({"kind": "paper", "mathvision_variant": "rule"})
    vision = {b.name: b for b in rule.benchmarks}["MathVision"]
    assert (vision.task, vision.judge) == ("vade_mathvision_testmini_rule", False)


def test_mathvision_metric_is_a_mean_of_zero_one_over_both_verdicts(monkeypatch, tmp_path):
    """Why scale 100: our MathVision task scores each item 0 or 1 (lmms-eval averages). Both
    verdicts and a malformed one go through the task's real hook, judge client and parser;
    the judge model is a scripted server on 127.0.0.1, MathVerse's prompt file a stand-in."""
    import importlib.util

    from judge_stub import ScriptedJudge
    from official_stub import stage_stand_in

    stage_stand_in(tmp_path, monkeypatch)
    from vade.eval.taskgen import SHIPPED_TASKS

    spec = importlib.util.spec_from_file_location("ju", SHIPPED_TASKS / "judged_utils.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    judge = ScriptedJudge([("Extracted Answer: ", "3"),
                           ("RIGHT", "1"), ("WRONG", "0"), ("GARBLED", "1, probably")])
    monkeypatch.setenv("OPENAI_API_URL", judge.url)
    monkeypatch.setenv("MODEL_VERSION", "judge")
    try:
        scores = [hooks.mathvision_judge_process_results(
            {"answer": "3", "question": f"{tag} q", "options": []}, ["... so 3"])
            for tag in ("RIGHT", "WRONG", "GARBLED")]
    finally:
        judge.close()
    assert scores == [{"accuracy": 1.0, "judge_error": 0.0}, {"accuracy": 0.0, "judge_error": 0.0},
                      {"accuracy": 0.0, "judge_error": 1.0}]


def test_pixel_limits_hold_in_a_vllm_chat_request_built_on_cpu(monkeypatch):
    """lmms-eval's vLLM chat model encodes what doc_to_visual returns without resizing it; our
    hooks return images inside the evaluation's limits. The request's image is built here as
    lmms-eval builds it (its chat task's user turn and ChatMessages.to_openai_messages, real); no
    model runs."""
    import base64
    import importlib.util
    import io

    from lmms_eval.api.task import ConfigurableMessagesTask
    from lmms_eval.protocol import ChatMessages
    from PIL import Image

    from vade.eval.pixels import limits_env
    from vade.eval.taskgen import SHIPPED_TASKS

    spec = importlib.util.spec_from_file_location("ju", SHIPPED_TASKS / "judged_utils.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)

    def request_image(visuals):
        turn = ConfigurableMessagesTask._build_user_turn(visuals, "q")
        messages = ChatMessages(messages=turn).to_openai_messages(
            video_kwargs={"max_pixels": 1, "min_pixels": 1, "max_frames": 1, "nframes": 1})
        url = messages[0]["content"][0]["image_url"]["url"]
        return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))

    doc = {"decoded_image": Image.new("RGB", (3000, 2000), "white")}
    monkeypatch.delenv("VADE_EVAL_MIN_PIXELS", raising=False)
    monkeypatch.delenv("VADE_EVAL_MAX_PIXELS", raising=False)
    assert request_image(hooks.decoded_image_to_visual(doc)).size == (3000, 2000)  # unlimited
    for key, value in limits_env({"min_pixels": 3136, "max_pixels": 1003520}).items():
        monkeypatch.setenv(key, value)
    # sqrt(6e6 / 1003520) = 2.4452: 3000 / 2.4452 = 1226.9 -> 1204 (43 x 28), 2000 -> 812 (29 x 28)
    assert request_image(hooks.decoded_image_to_visual(doc)).size == (1204, 812)
    small = {"decoded_image": Image.new("RGB", (20, 10), "white")}
    # below min_pixels 3136: sqrt(3136 / 200) = 3.96 -> 79.2 x 39.6 -> ceil to 84 x 56
    assert request_image(hooks.decoded_image_to_visual(small)).size == (84, 56)


def test_every_evaluation_sets_the_checkpoints_pixel_limits_for_the_hooks(tmp_path, monkeypatch):
    """``evaluate_checkpoint`` puts the limits of ``pixels_for`` in the environment before
    lmms-eval runs (lmms-eval stands in: it records the environment it would run in)."""
    import os

    import lmms_eval.evaluator
    import lmms_eval.tasks

    from vade.eval.runner import evaluate_checkpoint, target_for

    seen = {}

    def stand_in(**kwargs):
        seen.update({k: os.environ.get(k) for k in ("VADE_EVAL_MIN_PIXELS",
                                                     "VADE_EVAL_MAX_PIXELS")})
        return {"results": {"t": {"acc,none": 1.0}}, "n-samples": {"t": {"effective": 1}}}

    monkeypatch.setattr(lmms_eval.evaluator, "simple_evaluate", stand_in)
    monkeypatch.setattr(lmms_eval.tasks, "TaskManager", lambda *a, **k: None)
    for key in ("VADE_EVAL_MIN_PIXELS", "VADE_EVAL_MAX_PIXELS"):
        monkeypatch.delenv(key, raising=False)
    cfg = EvaluateConfig.from_dict({"kind": "paper", "repeats": 1, "max_pixels": 1003520})
    from vade.eval.config import Benchmark

    evaluate_checkpoint(cfg, target_for("qwen2.5-vl-7b-base", "Qwen/Qwen2.5-VL-7B-Instruct"),
                        [Benchmark("T", "t", "acc")], [], False)
    assert seen == {"VADE_EVAL_MIN_PIXELS": "3136", "VADE_EVAL_MAX_PIXELS": "1003520"}


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


def test_paper_policy_is_served_by_vllm_with_its_own_memory_share():
    """The lmms-eval call of repeat 2 of a trained 7B checkpoint, as `vade evaluate` makes it
    (built, not run: no GPU here). lmms-eval's own parser reads the argument strings."""
    from lmms_eval.utils import simple_parse_args_string

    from vade.eval.runner import command_line, lmms_eval_call, target_for

    cfg = EvaluateConfig.from_dict(paper_evaluate())
    target = target_for("qwen2.5-vl-7b-grpo-vade-s0", "results/paper/runs/x/final")
    call = lmms_eval_call(cfg, target, cfg.benchmarks, repeat=2)
    assert call["model"] == "vllm" and call["batch_size"] == 256
    # no device: lmms-eval would pass it to vllm.LLM, which 0.12 refuses (TypeError)
    assert call["device"] is None
    assert simple_parse_args_string(call["model_args"]) == {
        "model": "results/paper/runs/x/final", "tensor_parallel_size": 4,
        "gpu_memory_utilization": 0.35, "max_model_len": 8192 + 2048,
        # lmms-eval's vllm model takes max(request, this): its default 4096 would win over 2048
        "max_new_tokens": 2048, "max_pixels": 12845056}
    assert simple_parse_args_string(call["gen_kwargs"])["seed"] == 2  # repeats differ by seed
    assert call["tasks"] == ["vade_mathvista_testmini", "vade_mathverse_testmini",
                             "vade_mathverse_testmini_cot", "vade_mathvision_testmini", "vade_scienceqa_img_reasoning",
                             "vade_chartqa_reasoning"]
    assert (call["random_seed"], call["torch_random_seed"]) == (2, 2)
    cmd = command_line(call)
    assert cmd[:5] == ["python", "-m", "lmms_eval", "--model", "vllm"]
    assert cmd[cmd.index("--seed") + 1] == "2,2,2,2" and "--device" not in cmd


def test_paper_judge_command_and_environment():
    from vade.eval.judge import for_job, judge_env, serve_command

    cfg = EvaluateConfig.from_dict(paper_evaluate())
    a, b = for_job(cfg.judge, "run-r0"), for_job(cfg.judge, "run-r0")
    assert a.served_name != b.served_name and a.served_name.startswith("judge-run-r0-")
    cmd = serve_command(a)
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    opts = dict(zip(cmd[3::2], cmd[4::2]))
    assert opts == {"--model": "Qwen/Qwen2.5-72B-Instruct", "--served-model-name": a.served_name,
                    "--host": "127.0.0.1", "--port": str(a.port),
                    "--tensor-parallel-size": "4", "--gpu-memory-utilization": "0.55",
                    "--max-model-len": "8192"}   # vade.eval.judge.JUDGE_MAX_MODEL_LEN
    # judge 0.55 + policy 0.35 of each 80 GB GPU: 72 GB, leaving room for CUDA contexts
    assert cfg.judge.gpu_memory_utilization + cfg.policy.gpu_memory_utilization <= 0.95
    assert judge_env(a, {}) == {"API_TYPE": "openai", "OPENAI_API_KEY": "EMPTY",
                                "OPENAI_API_URL": f"http://127.0.0.1:{a.port}/v1",
                                "MODEL_VERSION": a.served_name}
    over = {**paper_evaluate(), "policy": {"engine": "vllm", "gpu_memory_utilization": 0.5}}
    with pytest.raises(ValueError, match="evaluate.policy.gpu_memory_utilization"):
        EvaluateConfig.from_dict(over)


def test_paper_evaluation_environment_has_vllm():
    """The paper's evaluation jobs (policy and judge served by vLLM) get an env with vLLM: the
    conda env of the rule and the pyproject extra; the CPU demo's env stays without it."""
    import tomllib
    import yaml

    def pins(path: str) -> set[str]:
        with open(path, encoding="utf-8") as f:
            deps = yaml.safe_load(f)["dependencies"]
        return {p for d in deps if isinstance(d, dict) for p in d["pip"]}

    assert {"vllm==0.12.0", "lmms-eval==0.7.3", "torch==2.9.0"} <= pins("envs/eval-vllm.yaml")
    assert not any(p.startswith("vllm") for p in pins("envs/eval.yaml"))
    with open("pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert "vllm==0.12.0" in extras["eval-vllm"] and "lmms-eval==0.7.3" in extras["eval-vllm"]
    with open("workflow/rules/common.smk", encoding="utf-8") as f:
        assert '"../../envs/eval-vllm.yaml" if vllm' in f.read()
