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


def test_paper_policy_is_served_by_vllm_with_its_own_memory_share():
    """The lmms-eval call of repeat 2 of a trained 7B checkpoint, as `vade evaluate` makes it
    (built, not run: no GPU here). lmms-eval's own parser reads the argument strings."""
    from lmms_eval.utils import simple_parse_args_string

    from vade.eval.runner import command_line, lmms_eval_call, target_for

    cfg = EvaluateConfig.from_dict(paper_evaluate())
    target = target_for("qwen2.5-vl-7b-grpo-vade-s0", "results/paper/runs/x/final")
    call = lmms_eval_call(cfg, target, cfg.benchmarks, repeat=2)
    assert call["model"] == "vllm" and call["batch_size"] == 256 and call["device"] == "cuda"
    assert simple_parse_args_string(call["model_args"]) == {
        "model": "results/paper/runs/x/final", "tensor_parallel_size": 4,
        "gpu_memory_utilization": 0.35, "max_model_len": 8192 + 2048,
        # lmms-eval's vllm model takes max(request, this): its default 4096 would win over 2048
        "max_new_tokens": 2048, "max_pixels": 12845056}
    assert simple_parse_args_string(call["gen_kwargs"])["seed"] == 2  # repeats differ by seed
    assert call["tasks"] == ["mathvista_testmini_cot", "mathverse_testmini_vision",
                             "mathvision_reason_testmini", "vade_scienceqa_img_reasoning",
                             "vade_chartqa_reasoning"]
    assert (call["random_seed"], call["torch_random_seed"]) == (2, 2)
    cmd = command_line(call)
    assert cmd[:5] == ["python", "-m", "lmms_eval", "--model", "vllm"]
    assert cmd[cmd.index("--seed") + 1] == "2,2,2,2"


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
                    "--tensor-parallel-size": "4", "--gpu-memory-utilization": "0.55"}
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
