"""The LLM judge: an OpenAI-compatible endpoint (vLLM) and the environment lmms-eval reads.

lmms-eval's judged tasks (MathVista, MathVerse) call an OpenAI-compatible server configured by
environment variables: ``API_TYPE=openai``, ``OPENAI_API_URL`` (the base URL, ending in ``/v1``),
``OPENAI_API_KEY`` and ``MODEL_VERSION`` (the served model name). This module starts a vLLM
server (``serve``), waits until it answers ``GET /v1/models`` with the served name
(``wait_ready``), stops it (``stop``), and builds that environment (``judge_env``).
``running_judge`` ties them together for one evaluation: an external endpoint is only checked,
a served one is started and always stopped, also when the evaluation fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

from vade.eval.config import JudgeConfig

__all__ = ["judge_env", "running_judge", "serve", "serve_command", "stop", "wait_ready"]


def judge_env(cfg: JudgeConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables lmms-eval's judge client reads. The key comes from ``cfg.api_key_env`` in
    the environment (a local vLLM accepts any key: ``EMPTY`` when unset)."""
    env = os.environ if environ is None else environ
    return {"API_TYPE": "openai", "OPENAI_API_URL": cfg.base_url.rstrip("/"),
            "OPENAI_API_KEY": env.get(cfg.api_key_env, "EMPTY"),
            "MODEL_VERSION": cfg.served_name}


def serve_command(cfg: JudgeConfig) -> list[str]:
    """The server command line: ``cfg.command`` if given, else vLLM's OpenAI server."""
    if cfg.command:
        return list(cfg.command)
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", cfg.model,
            "--served-model-name", cfg.served_name, "--host", cfg.host, "--port", str(cfg.port),
            "--tensor-parallel-size", str(cfg.tensor_parallel_size), *cfg.extra_args]


def serve(cfg: JudgeConfig, log_path: str | Path | None = None,
          command: list[str] | None = None) -> subprocess.Popen:
    """Start the judge server in its own process group (so ``stop`` ends its workers too)."""
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    try:
        return subprocess.Popen(command or serve_command(cfg), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        if log_path:
            log.close()


def wait_ready(base_url: str, served_name: str, *, timeout_s: float = 1800.0,
               api_key: str = "EMPTY", proc: subprocess.Popen | None = None,
               poll_s: float = 2.0) -> None:
    """Block until ``GET <base_url>/models`` lists ``served_name``.

    Raises RuntimeError when ``proc`` exits first, TimeoutError after ``timeout_s``, and
    ValueError when the server answers but serves other models (a misconfigured endpoint).
    """
    url = base_url.rstrip("/") + "/models"
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"judge server exited with status {proc.returncode} before it "
                               f"was ready ({url})")
        try:
            req = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                body = json.loads(resp.read().decode("utf-8"))
            names = [m.get("id") for m in body.get("data", [])]
            if served_name in names:
                return
            raise ValueError(f"judge endpoint {url} serves {names}, not {served_name!r}")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError,
                json.JSONDecodeError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise TimeoutError(f"judge endpoint {url} not ready after {timeout_s:g} s ({last})")
        time.sleep(poll_s)


def stop(proc: subprocess.Popen, timeout_s: float = 60.0) -> int:
    """SIGTERM the server's process group, SIGKILL it after ``timeout_s``; return its status."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return int(proc.returncode)


@contextlib.contextmanager
def running_judge(cfg: JudgeConfig, log_path: str | Path | None = None,
                  command: list[str] | None = None) -> Iterator[dict[str, str]]:
    """The judge for the duration of a block; yields (and sets) its environment variables."""
    if cfg.mode == "none":
        yield {}
        return
    env = judge_env(cfg)
    proc = serve(cfg, log_path, command) if cfg.mode == "serve" else None
    saved = {k: os.environ.get(k) for k in env}
    try:
        wait_ready(env["OPENAI_API_URL"], cfg.served_name, timeout_s=cfg.ready_timeout_s,
                   api_key=env["OPENAI_API_KEY"], proc=proc)
        os.environ.update(env)
        yield env
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
        if proc is not None:
            stop(proc)
