"""The judge's lifecycle with the real ``vllm serve`` (vLLM 0.12's OpenAI server, CPU build).

Real: ``vade.eval.judge.running_judge`` starting vLLM's OpenAI server as the evaluation job does
(``serve_command``: a free port on 127.0.0.1, a served name unique to the job), its readiness
wait, the counting relay, ``vade.eval.judge_client.chat`` requests, ``JudgeWatchdog`` and
``JudgeHandle.check``, ``stop``. Stand-in: the judge model is the project's tiny checkpoint
(``conftest.tiny_checkpoint``), not Qwen2.5-72B-Instruct: its replies are not verdicts, so the
test checks the transport (answers, counts, determinism), not their content.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from engine_processes import descendants, wait_gone

from vade.eval.config import JudgeConfig
from vade.eval.judge import running_judge
from vade.eval.judge_client import chat
from vade.eval.watchdog import JudgeWatchdog, WatchdogConfig

pytestmark = [pytest.mark.engines, pytest.mark.e2e]


def test_a_served_judge_answers_is_watched_and_leaves_no_engine_behind(tiny_checkpoint,
                                                                         tmp_path, capsys):
    """One server start: ready, three judged requests through the relay, then ``kill -9`` of
    the server; the watchdog and the end-of-repeat check name the exit, and leaving the block
    ends vLLM's engine-core process too (it is the server's child: it must not outlive it)."""
    cfg = JudgeConfig(mode="serve", model=str(tiny_checkpoint), tensor_parallel_size=1,
                      gpu_memory_utilization=0.5, ready_timeout_s=600,
                      extra_args=("--max-model-len", "1024", "--enforce-eager"))
    log = tmp_path / "judge.log"
    start = time.monotonic()
    with running_judge(cfg, log, tag="engines") as handle:
        ready_s = time.monotonic() - start
        assert handle.cfg.host == "127.0.0.1" and handle.cfg.port != cfg.port
        assert handle.cfg.served_name.startswith("judge-engines-")
        core = descendants(handle.proc.pid)
        assert core, "vLLM's OpenAI server started no engine-core process"
        prompt = "Is 3 + 4 = 7? Reply with 1 or 0."
        replies = [chat(prompt, max_tokens=8), chat(prompt, max_tokens=8),
                   chat("What is 2 + 2?", max_tokens=8)]
        assert replies[0] == replies[1]          # temperature 0
        assert handle.relay.calls == 3
        assert handle.relay.failures == sum(r == "" for r in replies)   # empty = failed
        dog = JudgeWatchdog(handle, WatchdogConfig(liveness_timeout_s=5), judged=True)
        assert dog.look() is None
        os.kill(handle.proc.pid, signal.SIGKILL)
        handle.proc.wait(timeout=30)
        assert dog.look() == "judge server exited with status -9"
        with pytest.raises(RuntimeError, match="judge server exited with status -9 during "
                                               "repeat 1"):
            handle.check(1)
    assert wait_gone(core, 60) == [], f"engine core outlived the judge (log: {log})"
    with capsys.disabled():
        print(f"\njudge: ready after {ready_s:.0f} s; replies {replies}")
