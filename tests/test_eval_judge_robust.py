"""A judge that fails cannot corrupt scores: a stub OpenAI-compatible judge (a real HTTP server
process on 127.0.0.1, started by `vade evaluate` as it would start vLLM) that starts failing
half-way makes the job fail, saying why, with no score written; a configured port that is taken
is refused; SIGTERM stops the judge. Stand-ins: the stub for vLLM's server, and, in the job test,
a stand-in for lmms-eval's evaluation loop that sends each repeat's judge requests through
lmms-eval's real judge client (what lmms-eval's judged tasks do, without a GPU model)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from test_eval_judge import STUB

from vade.eval.config import JudgeConfig
from vade.eval.judge import running_judge
from vade.eval.store import EvalRow


@pytest.fixture()
def stub(tmp_path):
    path = tmp_path / "stub_judge.py"
    path.write_text(STUB)
    return path


def _closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _judge_calls(n: int) -> None:
    """What a judged lmms-eval task does per item: one call through lmms-eval's client."""
    from lmms_eval.llm_judge import Request, ServerConfig, get_server

    server = get_server(server_name=os.environ["API_TYPE"],
                        config=ServerConfig(model_name=os.environ["MODEL_VERSION"],
                                            num_retries=1, retry_delay=0))
    for _ in range(n):
        try:  # as lmms-eval's judged tasks do: a failed judgement becomes a 0, silently
            server.evaluate(Request(messages=[{"role": "user", "content": "Is 6*7 42?"}]))
        except Exception:  # noqa: BLE001, S110
            pass


def test_judge_failing_half_way_fails_the_job_and_writes_no_score(tmp_path, stub, monkeypatch):
    from vade.cli import main
    from vade.eval import command, runner

    seen = {}

    def stand_in(cfg, target, benchmarks, include, defaults, repeats=None, after_repeat=None,
                 samples_log=None, manager=None):
        seen["port"] = int(os.environ["OPENAI_API_URL"].rsplit(":", 1)[1].split("/")[0])
        rows = []
        for r in range(cfg.repeats) if repeats is None else repeats:
            _judge_calls(4)               # the stub answers 6 calls: repeat 0 fine, 1 half lost
            after_repeat(r)
            rows.append(EvalRow(target.run_id, target.model, None, "base", None, "J", r, r,
                                50.0, 4, target.checkpoint, "t", "m"))
        return rows

    monkeypatch.setattr(runner, "evaluate_checkpoint", stand_in)
    monkeypatch.setattr(command, "_preload", lambda *a: None)  # task "t" is not lmms-eval's
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    cfg = {"evaluate": {"kind": "paper", "repeats": 2, "max_new_tokens": 16, "benchmarks": [
        {"name": "J", "task": "t", "metric": "m", "judge": True, "items": 4}],
        "judge": {"mode": "serve", "served_name": "j", "max_error_fraction": 0.1,
                  "ready_timeout_s": 60,
                  "command": [sys.executable, str(stub), "{port}", "{served_name}", "6"]}}}
    out = tmp_path / "eval.duckdb"
    log = tmp_path / "judge.log"
    with pytest.raises(RuntimeError) as err:
        main(["evaluate", "--config-json", json.dumps(cfg), "--run-id", "tiny-base",
              "--checkpoint", str(ckpt), "--out", str(out), "--judge-log", str(log),
              "--no-mlflow"])
    msg = str(err.value)
    # repeat 0: 4 answered; repeat 1: 2 answered, then 2 items x 3 attempts (the OpenAI client
    # retries twice) failed: 6 of 12 requests
    assert "judge failed on 6 of 12 calls by repeat 1" in msg
    assert "50.0% > evaluate.judge.max_error_fraction 0.1" in msg
    assert "CUDA out of memory" in msg and "no score is written" in msg and str(log) in msg
    assert not out.exists()
    assert _closed(seen["port"])  # lmms-eval's endpoint (the relay) is gone, and so is the judge


def test_judge_that_dies_between_repeats_fails_the_check(tmp_path, stub):
    cfg = JudgeConfig(mode="serve", served_name="j", ready_timeout_s=60)
    with running_judge(cfg, command=[sys.executable, str(stub), "{port}", "{served_name}", "9"],
                       tag="x") as judge:
        _judge_calls(2)
        judge.check(0)
        os.killpg(judge.proc.pid, signal.SIGKILL)
        judge.proc.wait()
        with pytest.raises(RuntimeError, match="judge server exited with status -9 during "
                                               "repeat 1: its scores are not trusted"):
            judge.check(1)


def test_taken_port_is_refused_and_a_free_one_chosen_by_default(tmp_path, stub):
    marker = tmp_path / "started"
    cmd = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    with socket.socket() as other:  # another job's judge (or an orphan) on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"evaluate.judge.port {port} on 127.0.0.1 is "
                                               "already taken.*evaluate.judge.port: null"), \
                running_judge(JudgeConfig(mode="serve", port=port), command=cmd):
            pass
        assert not marker.exists()  # nothing was started against the foreign server
        # the default: a free port at run time, never the taken one
        with running_judge(JudgeConfig(mode="serve", ready_timeout_s=60), tag="y",
                           command=[sys.executable, str(stub), "{port}", "{served_name}",
                                    "9"]) as judge:
            assert judge.cfg.port != port
            url = f"http://127.0.0.1:{judge.cfg.port}/v1/models"
            with urllib.request.urlopen(url, timeout=5) as r:
                assert json.loads(r.read())["data"][0]["id"] == judge.cfg.served_name


SIGTERM_JOB = r'''
import sys, time
from vade.eval.command import _sigterm_raises
from vade.eval.config import JudgeConfig
from vade.eval.judge import running_judge

cfg = JudgeConfig(mode="serve", served_name="j", ready_timeout_s=60)
with _sigterm_raises(), running_judge(
        cfg, command=[sys.executable, sys.argv[1], "{port}", "{served_name}", "9"]) as judge:
    print(judge.cfg.port, judge.proc.pid, flush=True)
    time.sleep(600)
'''


def test_sigterm_stops_the_judge(tmp_path, stub):
    """`vade evaluate` turns SIGTERM (scancel, the time limit) into an exit that stops the
    judge's whole process group."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    job = subprocess.Popen([sys.executable, "-c", SIGTERM_JOB, str(stub)], cwd=root,
                           stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": root})
    try:
        port, pid = map(int, job.stdout.readline().split())
        assert not _closed(port)
        job.send_signal(signal.SIGTERM)
        assert job.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while not _closed(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _closed(port)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        if job.poll() is None:
            job.kill()
