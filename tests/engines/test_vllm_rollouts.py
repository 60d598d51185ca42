"""Initial difficulty rollouts with the real vLLM 0.12 (CPU build) on the tiny model.

Real: ``vade init-difficulty`` as the ``init_difficulty`` rule runs it (``difficulty.engine:
vllm``), two data-parallel engine processes (``vade.rollout.parallel``, ``CUDA_VISIBLE_DEVICES=0,1``:
on CPU each engine is one OpenMP thread standing for one GPU), each with vLLM's own engine-core
child process, the verifier, the chunk files; the HF engine and the model's own forward pass
for the comparisons. Stand-in: none (the checkpoint is the project's tiny model, warm-started
60 steps in ``conftest.tiny_checkpoint``).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_processes import descendants, wait_gone

from vade.models.policy import suppressed_token_ids
from vade.models.testing import bar_examples, bar_rows, write_rows

pytestmark = [pytest.mark.engines, pytest.mark.e2e]

ROWS, SEED = 32, 7
# 16 rollouts per chunk = 1 prompt per engine call: 32 chunks, so a kill lands between two.
DIFFICULTY = {"engine": "vllm", "rollouts": 16, "temperature": 1.0, "max_new_tokens": 16,
              "batch_size": 16}


def _command(model: Path, data: Path, out: Path) -> list[str]:
    vade = str(Path(sys.executable).with_name("vade"))
    return [vade, "init-difficulty", "--config-json",
            json.dumps({"seed": 0, "difficulty": DIFFICULTY}),
            "--data", str(data), "--model", str(model), "--out", str(out), "--no-progress"]


def _env() -> dict[str, str]:
    return {**os.environ, "CUDA_VISIBLE_DEVICES": "0,1", "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def train_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rows(tmp_path_factory.mktemp("data") / "train.parquet", bar_rows(ROWS, SEED))


@pytest.fixture(scope="module")
def uninterrupted_job(tiny_checkpoint: Path, train_data: Path,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """The uninterrupted run, started and not waited for: the killed job and its rerun run
    beside it (two engine starts of a minute or more each overlap instead of adding up)."""
    out = tmp_path_factory.mktemp("uninterrupted")
    with open(out / "stdout.txt", "w") as log:
        proc = subprocess.Popen(_command(tiny_checkpoint, train_data, out / "difficulty"),
                                env=_env(), stdout=log, stderr=subprocess.DEVNULL, text=True)
    try:
        yield proc, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_job: tuple[Any, Path]) -> Path:
    proc, out = uninterrupted_job
    assert proc.wait(timeout=900) == 0, f"the uninterrupted run failed (status {proc.returncode})"
    assert "2 engines of 1 GPU(s) each: 0 | 1" in (out / "stdout.txt").read_text()
    return out / "difficulty"


def test_a_job_killed_midway_resumes_to_the_uninterrupted_file(tiny_checkpoint, train_data,
                                                               uninterrupted_job, request,
                                                               tmp_path):
    """``kill -9`` of the job after its first chunks: its engine processes and their vLLM
    engine cores exit by themselves (their parent's pipe closed), and the rerun reads the
    written chunks back and writes the same ``initial.parquet`` as the uninterrupted run."""
    import pyarrow.parquet as pq

    out = tmp_path / "difficulty"
    job = subprocess.Popen(_command(tiny_checkpoint, train_data, out), env=_env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    chunks = out / "chunks"
    engines: list[int] = []
    try:
        while not list(chunks.glob("chunk-*.npy")):
            assert job.poll() is None, "the job ended before writing a chunk"
            time.sleep(0.01)
        os.kill(job.pid, signal.SIGSTOP)     # hold it still while we look: then kill -9
        written = len(list(chunks.glob("chunk-*.npy")))
        engines = descendants(job.pid)
        os.kill(job.pid, signal.SIGKILL)
        job.wait(timeout=60)
        assert 1 <= written < ROWS, f"the kill came after all {written} chunks"
        assert len(engines) >= 4   # two engine processes, each with its engine-core child
        assert wait_gone(engines, 120) == [], "an engine outlived its killed job"
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        for pid in wait_gone(engines, 0):   # a failed check leaves no engine running
            os.kill(pid, signal.SIGKILL)
    assert not (out / "initial.parquet").exists()
    rerun = subprocess.run(_command(tiny_checkpoint, train_data, out), env=_env(),
                           capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    resumed = int(rerun.stdout.split("resumed ")[1].split()[0])
    assert resumed >= written
    whole = request.getfixturevalue("uninterrupted")
    assert pq.read_table(out / "initial.parquet").equals(pq.read_table(whole / "initial.parquet"))


def test_pass_rates_agree_with_the_hf_engine(tiny_checkpoint, uninterrupted):
    """The same 32 items x 16 rollouts (temperature 1) with the HF engine in this process; the
    two pass rates are compared with a two-proportion z-test at alpha = 0.01 (|z| < 2.576).

    The items are the same on both sides, so under "same distribution" the difference of the
    totals has variance 2 * sum_i G p_i (1 - p_i) <= 2 n p (1 - p), n = 512: the pooled test is
    conservative. Power: at p = 0.25 the standard error of the difference is
    sqrt(2 * 0.1875 / 512) = 0.027, so a true difference of 0.093 in the pass rate is caught
    with probability 0.8 (0.070 with 0.5). vLLM runs bfloat16 here (``VLLMEngine``'s default),
    HF float32."""
    import pyarrow.parquet as pq

    from vade.models.hf_engine import HFEngine
    from vade.models.policy import load_policy
    from vade.rollout.difficulty import DifficultyConfig, initial_difficulty

    vllm_correct = pq.read_table(uninterrupted / "initial.parquet")["correct"].to_numpy()
    cfg = DifficultyConfig(**{**DIFFICULTY, "engine": "hf", "batch_size": 256})
    hf = initial_difficulty(HFEngine(load_policy(tiny_checkpoint, threads=1), batch_size=256),
                            bar_examples(ROWS, SEED), cfg, seed=0, progress=False)
    n = ROWS * DIFFICULTY["rollouts"]
    a, b = vllm_correct.sum() / n, hf["correct"].sum() / n
    pooled = (a + b) / 2
    z = (a - b) / math.sqrt(2 * pooled * (1 - pooled) / n)
    print(f"pass rate vLLM {a:.3f}, HF {b:.3f}, z = {z:.2f}")
    assert 0.05 < pooled < 0.95, "the model's pass rate leaves nothing to compare"
    assert abs(z) < 2.576


def test_token_logprobs_agree_with_the_hf_forward_pass(tiny_checkpoint, monkeypatch):
    """Greedy 12 tokens of a fixed prompt with an image, vLLM in float32 in this process
    (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), against the HF model's teacher-forced log-probs of
    the same tokens over the full vocabulary. Tolerance: 1e-4 nats per token (both float32;
    vLLM's CPU attention and fused kernels sum in another order).

    The project's policy (``token_logprobs``, the HF engine) renormalises over the vocabulary
    without the four vision placeholder tokens, which vLLM's sampling keeps: its log-probs are
    higher by -log(1 - their mass), about 1e-3 for this model, which is checked too."""
    import torch
    from vllm import SamplingParams

    from vade.models.policy import encode_prompts, load_policy, token_logprobs
    from vade.rollout.vllm_engine import VLLMEngine

    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    example = bar_examples(1, seed=11)[0]
    engine = VLLMEngine(str(tiny_checkpoint), dtype="float32", enforce_eager=True,
                        max_model_len=512)
    try:
        out = engine.llm.generate([engine._request(example)],
                                  SamplingParams(temperature=0, max_tokens=12, logprobs=0,
                                                 ignore_eos=True))[0]
    finally:
        engine.close()
    ids = list(out.outputs[0].token_ids)
    vllm_lp = np.array([out.outputs[0].logprobs[k][t].logprob for k, t in enumerate(ids)])

    policy = load_policy(tiny_checkpoint, threads=1)
    prompt = encode_prompts(policy.processor, [example])
    assert prompt.input_ids[0][prompt.attention_mask[0].bool()].tolist() == list(
        out.prompt_token_ids)
    response = torch.tensor([ids])
    kw = prompt.model_kwargs()
    kw["input_ids"] = torch.cat([kw["input_ids"], response], dim=1)
    kw["attention_mask"] = torch.cat([kw["attention_mask"], torch.ones_like(response)], dim=1)
    with torch.no_grad():
        logits = policy.model(**kw, use_cache=False).logits[0, -len(ids) - 1:-1].float()
        full = torch.log_softmax(logits, dim=-1)
        hf_lp = full.gather(-1, response[0].unsqueeze(-1)).squeeze(-1).numpy()
        policy_lp = token_logprobs(policy.model, prompt, response,
                                   torch.ones_like(response), share_prompts=False)[0].numpy()
        vision = full[:, suppressed_token_ids(policy.model)].exp().sum(-1).numpy()
    diff = np.abs(vllm_lp - hf_lp)
    print(f"largest |vLLM - HF| log-prob over {len(ids)} tokens: {diff.max():.2e}; "
          f"vision tokens' mass up to {vision.max():.2e}")
    assert diff.max() < 1e-4
    np.testing.assert_allclose(policy_lp - vllm_lp, -np.log1p(-vision), atol=1e-4)
