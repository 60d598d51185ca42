"""`vade preflight`: each broken case refused with its knob, before anything loads.

Real: the config checks, package versions read from this venv's metadata against lock files,
imports, the disk and profile readers, and (on this CPU machine) the real GPU probe, which must
report that no GPU is visible. Stand-ins: a GPU node's answer (a list of GPU memories) where a
test needs GPUs, a free-space function for the disk, and a stub importer where only the
version logic is under test (importing vllm/verl takes a minute on these 2 cores).
"""

from __future__ import annotations

import copy
import os
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from vade.cli import main
from vade.cluster.disk import checkpoint_gb
from vade.cluster.preflight import (
    check_disk,
    check_gpus,
    check_packages,
    check_profile,
    probe_gpus,
    run_checks,
    stage_packages,
)


@pytest.fixture(scope="module")
def paper() -> dict:
    with open("config/config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def _lock(root: Path, env: str, pins: dict[str, str]) -> None:
    path = root / "requirements/lock/envs" / f"{env}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# generated\n" + "".join(f"{k}=={v}\n    # via x\n" for k, v in pins.items()))


def test_packages_at_the_locked_versions_pass_and_a_drift_names_the_env(tmp_path):
    tiny = {"train": {"backend": "local"}}
    torch_v, tf_v = metadata.version("torch"), metadata.version("transformers")
    _lock(tmp_path, "cpu", {"torch": torch_v, "transformers": tf_v})
    checks = check_packages(tiny, "train", tmp_path)
    assert [c.ok for c in checks] == [True, True], [c.line() for c in checks]
    _lock(tmp_path, "cpu", {"torch": "2.9.0", "transformers": tf_v})
    (bad,) = [c for c in check_packages(tiny, "train", tmp_path) if not c.ok]
    assert bad.name == "package torch"
    assert f"{torch_v} installed, 2.9.0 locked for env cpu" in bad.detail
    assert "envs/cpu.yaml" in bad.knob


def test_an_import_that_fails_is_reported_not_raised(tmp_path):
    _lock(tmp_path, "cpu", {})

    def broken(module):
        raise OSError(f"libcudart.so.12: cannot open shared object file ({module})")

    checks = check_packages({"train": {"backend": "local"}}, "train", tmp_path, broken)
    assert all(not c.ok for c in checks)
    assert "import torch failed: OSError: libcudart.so.12" in checks[0].detail


def test_the_paper_stages_import_what_they_run(paper):
    assert {d for _, d in stage_packages(paper, "train")} >= {"verl", "vllm", "ray", "torch"}
    # SDPA by default: flash-attn (a source build) is needed only when asked for
    assert "flash-attn" not in {d for _, d in stage_packages(paper, "train")}
    flash = {**paper, "train": {**paper["train"], "verl": {"attention": "flash_attention_2"}}}
    assert ("flash_attn", "flash-attn") in stage_packages(flash, "train")
    assert ("lmms_eval.evaluator", "lmms-eval") in stage_packages(paper, "evaluate")
    assert ("vllm", "vllm") in stage_packages(paper, "difficulty")


def test_no_gpu_on_this_machine_is_reported_clearly(paper):
    gpus = probe_gpus()
    if gpus:
        pytest.skip("this machine has a GPU")
    (c,) = check_gpus(paper, "train", gpus, 4)
    assert not c.ok
    assert c.detail == "no GPU visible (torch.cuda and nvidia-smi), stage train needs 4 " \
                       "(resources.train.gpu)"
    assert "lower resources.train.gpu" in c.knob


def test_too_few_gpus_and_a_judge_that_does_not_fit_its_share(paper):
    (few,) = check_gpus(paper, "evaluate", [80.0, 80.0], 4)
    assert not few.ok and "2 GPU(s) visible, stage evaluate needs 4" in few.detail
    ok = check_gpus(paper, "evaluate", [80.0] * 4, 4)
    assert all(c.ok for c in ok), [c.line() for c in ok]
    # 72e9 params x 2 B / TP 4 = 33.5 GiB per GPU; 0.55 x 40 GiB = 22 GiB: refused
    small = check_gpus(paper, "evaluate", [40.0] * 4, 4)
    (judge,) = [c for c in small if c.name == "evaluate.judge memory"]
    assert not judge.ok
    assert "33.5 GiB of bf16 weights per GPU (TP 4) in a 22.0 GiB share" in judge.detail
    assert "evaluate.judge.gpu_memory_utilization" in judge.knob


def test_disk_for_the_checkpoints(paper, tmp_path):
    # 7B: 7e9 x (2 x 16 + 2) B = 238 GB + 50 GB kept free
    low = check_disk(paper, "train", tmp_path / "runs/x", "qwen2.5-vl-7b", lambda p: 200.0)
    assert not low.ok and "200 GB free" in low.detail and "288 GB needed" in low.detail
    assert check_disk(paper, "train", tmp_path / "runs/x", "qwen2.5-vl-7b", lambda p: 300.0).ok
    assert check_disk(paper, "evaluate", tmp_path, None, lambda p: 60.0).ok


def test_disk_counts_the_runs_beside_this_one(paper, tmp_path):
    """main checked each run alone (288 GB): a 7B job beside two started runs (a 3B one with
    2 GB of checkpoints written, a 7B one) and a finished one needs 238 + 100 + 238 GB + 50."""
    runs = tmp_path / "paper" / "runs"
    (runs / "qwen2.5-vl-3b-grpo-vade-s0" / "checkpoints").mkdir(parents=True)
    (runs / "qwen2.5-vl-3b-grpo-vade-s0" / "checkpoints" / "w").write_bytes(b"")
    (runs / "qwen2.5-vl-7b-gspo-vade-s0").mkdir()
    (runs / "qwen2.5-vl-7b-grpo-dapo-s0").mkdir()
    (runs / "qwen2.5-vl-7b-grpo-dapo-s0" / "done.json").write_text("{}")
    written = 2.0   # a 2 GB sparse file: the size the run has written is subtracted
    os.truncate(runs / "qwen2.5-vl-3b-grpo-vade-s0" / "checkpoints" / "w", int(written * 1e9))
    job = check_disk(paper, "train", runs / "qwen2.5-vl-7b-grpo-vanilla-s0", "qwen2.5-vl-7b",
                     lambda p: 600.0)
    need = 238 + (checkpoint_gb(paper, "qwen2.5-vl-3b") - written) + 238 + 50
    assert not job.ok and f"{need:.0f} GB needed" in job.detail
    assert "this run and 2 other started, unfinished run(s)" in job.detail
    by_hand = check_disk(paper, "train", tmp_path, None, lambda p: 1e4)
    assert "the 14 unfinished run(s) of the grid at once" in by_hand.detail


def test_profile_placeholders_are_found_outside_comments(tmp_path):
    prof = tmp_path / "slurm"
    prof.mkdir()
    (prof / "config.yaml").write_text('default-resources:\n  slurm_account: "your-account"\n'
                                      '  # your-cpu-partition in a comment\n')
    c = check_profile(prof)
    assert not c.ok and "['your-account']" in c.detail
    (prof / "config.yaml").write_text('default-resources:\n  slurm_account: "lab42"\n'
                                      '  # replace your-account here\n')
    assert check_profile(prof).ok


def test_a_bad_gpu_layout_fails_first(paper, tmp_path):
    bad = copy.deepcopy(paper)
    bad["resources"]["evaluate"]["gpu"] = 2
    checks = run_checks(bad, "evaluate", profile=None, out_dir=tmp_path,
                        probe=lambda: [80.0] * 4, importer=lambda m: None,
                        free_gb=lambda p: 1e4, environ={})
    assert not checks[0].ok and "resources.evaluate.gpu = 2" in checks[0].detail


def test_cli_exits_nonzero_naming_each_problem(paper, tmp_path, capsys, monkeypatch):
    """The real command on the paper config on this CPU machine (difficulty stage: vllm is not
    in the CPU venv, no GPU, no prefetched cache)."""
    monkeypatch.chdir(Path.cwd())
    cfg = copy.deepcopy(paper)
    cfg["cluster"] = {"cache_dir": str(tmp_path / "cache")}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    rc = main(["preflight", "--config", str(path), "--stage", "difficulty", "--out",
               str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL package vllm: not installed" in out
    assert "FAIL asset Qwen/Qwen2.5-VL-7B-Instruct: not in" in out
    assert "nothing was loaded" in out
    if not probe_gpus():
        assert "FAIL gpus: no GPU visible" in out


def test_judge_context_and_kv_room_by_hand(paper):
    from vade.eval.config import JudgeConfig
    from vade.eval.judge import serve_command

    checks = {c.name: c for c in check_gpus(paper, "evaluate", [79.2] * 4, 4)}
    kv = checks["evaluate.judge KV cache"]
    # 0.55 x 79.2 GiB share - 72e9 x 2 B / 4 GPUs of weights - 2 GiB reserve, over K and V of
    # 80 layers x 8 KV heads x 128 dims x 2 B / TP 4 = 81,920 B per token
    free = 0.55 * 79.2 - 72e9 * 2 / 4 / 2**30 - 2.0
    tokens = int(free * 2**30 // 81920)
    assert kv.ok and f"{tokens} tokens of KV (80 KiB each at TP 4)" in kv.detail
    assert f"{tokens // 8192} request(s) of 8192 at once" in kv.detail
    tight = copy.deepcopy(paper)
    tight["evaluate"]["judge"]["gpu_memory_utilization"] = 0.45   # 35.6 GiB: 0 GiB of KV
    kv = {c.name: c for c in check_gpus(tight, "evaluate", [79.2] * 4, 4)}[
        "evaluate.judge KV cache"]
    assert not kv.ok and "raise evaluate.judge.gpu_memory_utilization" in kv.line()
    # a 6000-token response no longer fits the judge's 8192-token context (6000 + 3072 + 256)
    long = copy.deepcopy(paper)
    long["evaluate"]["max_new_tokens"] = 6000
    ctx = {c.name: c for c in check_gpus(long, "evaluate", [79.2] * 4, 4)}[
        "evaluate.judge context"]
    assert not ctx.ok and "needs up to 9328 tokens" in ctx.detail
    cmd = serve_command(JudgeConfig.from_dict({"mode": "serve", "port": 8000}))
    assert cmd[cmd.index("--max-model-len") + 1] == "8192"
    own = serve_command(JudgeConfig.from_dict({"mode": "serve", "port": 8000,
                                               "extra_args": ["--max-model-len=16384"]}))
    assert own.count("--max-model-len=16384") == 1 and "--max-model-len" not in own
