"""The LLM judge: an OpenAI-compatible endpoint (vLLM) and the environment lmms-eval reads.

lmms-eval's judged tasks (MathVista, MathVerse, MathVision) call an OpenAI-compatible server
configured by environment variables: ``API_TYPE=openai``, ``OPENAI_API_URL`` (the base URL,
ending in ``/v1``), ``OPENAI_API_KEY`` and ``MODEL_VERSION`` (the served model name). This module
starts a vLLM server (``serve``), waits until it answers ``GET /v1/models`` with the served name
(``wait_ready``), stops it (``stop``), and builds that environment (``judge_env``).

``running_judge`` ties them together for one evaluation job, so that a judge that fails cannot
silently corrupt scores (lmms-eval turns a failed judge call into a 0 or a string-distance
guess): a served judge gets a free port chosen at run time (a configured port that is taken is
an error, never another job's judge) and a served name unique to the job (a foreign server on
the port answers with another name: refused); lmms-eval talks to the judge through a counting
relay (``JudgeRelay``); after every repeat ``JudgeHandle.check`` requires the judge alive and
the failed or empty judge calls under ``judge.max_error_fraction``, else the job fails, saying
why, before any score is written. The served judge is always stopped, also on SIGTERM (the
caller turns SIGTERM into an exception: ``vade.eval.command``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from vade.eval.config import JudgeConfig
from vade.eval.judge_client import STATS

__all__ = ["JUDGE_MAX_MODEL_LEN", "JUDGE_TEMPLATE_TOKENS", "JudgeHandle", "JudgeRelay", "for_job",
           "judge_context_tokens", "judge_env", "running_judge", "serve",
           "serve_command", "stop", "wait_ready"]


def judge_env(cfg: JudgeConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables lmms-eval's judge client reads. The key comes from ``cfg.api_key_env`` in
    the environment (a local vLLM accepts any key: ``EMPTY`` when unset)."""
    env = os.environ if environ is None else environ
    return {"API_TYPE": "openai", "OPENAI_API_URL": cfg.base_url.rstrip("/"),
            "OPENAI_API_KEY": env.get(cfg.api_key_env, "EMPTY"),
            "MODEL_VERSION": cfg.served_name}


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def for_job(cfg: JudgeConfig, tag: str) -> JudgeConfig:
    """The judge of one job. ``serve``: a free port (or the configured one, if it is free) and a
    served name unique to this job (``<served_name>-<tag>-<random>``); other modes unchanged."""
    if cfg.mode != "serve":
        return cfg
    if cfg.port is None:
        port = free_port(cfg.host)
    elif _port_free(cfg.host, cfg.port):
        port = cfg.port
    else:
        raise RuntimeError(f"evaluate.judge.port {cfg.port} on {cfg.host} is already taken "
                           "(another job's judge or an orphan server?): set "
                           "evaluate.judge.port: null to use a free port chosen at run time")
    name = f"{cfg.served_name}-{tag}-{secrets.token_hex(4)}"
    return dataclasses.replace(cfg, port=port, served_name=name)


# The judge's context, set rather than left at the model's own limit (Qwen2.5-72B-Instruct:
# 32768, for which vLLM must find KV room for a whole sequence at start). A judge request is a
# template (instructions, the question, few-shot examples), the policy's response and the
# verdict. The template budget is an upper bound assumed for the official extraction/match
# prompts (MathVista's few-shot extraction prompt is the longest), not counted token by token.
JUDGE_TEMPLATE_TOKENS = 3072
JUDGE_OUTPUT_TOKENS = 256           # vade.eval.judge_client.MAX_TOKENS
JUDGE_MAX_MODEL_LEN = 8192          # a 2048-token response + the template + the verdict, rounded up


def judge_context_tokens(response_tokens: int) -> int:
    """Tokens one judge request may need for a policy response of ``response_tokens``."""
    return int(response_tokens) + JUDGE_TEMPLATE_TOKENS + JUDGE_OUTPUT_TOKENS


def _filled(command: tuple[str, ...] | list[str], cfg: JudgeConfig) -> list[str]:
    return [a.replace("{port}", str(cfg.port)).replace("{served_name}", cfg.served_name)
            for a in command]


def serve_command(cfg: JudgeConfig) -> list[str]:
    """The server command line: ``cfg.command`` (``{port}``, ``{served_name}`` filled in) if
    given, else vLLM's OpenAI server with the judge's share of GPU memory."""
    if cfg.command:
        return _filled(cfg.command, cfg)
    context = [] if any(a.startswith("--max-model-len") for a in cfg.extra_args) else [
        "--max-model-len", str(JUDGE_MAX_MODEL_LEN)]   # extra_args may set its own
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", cfg.model,
            "--served-model-name", cfg.served_name, "--host", cfg.host, "--port", str(cfg.port),
            "--tensor-parallel-size", str(cfg.tensor_parallel_size),
            "--gpu-memory-utilization", str(cfg.gpu_memory_utilization), *context,
            *cfg.extra_args]


def serve(cfg: JudgeConfig, log_path: str | Path | None = None,
          command: list[str] | None = None) -> subprocess.Popen:
    """Start the judge server in its own process group (so ``stop`` ends its workers too);
    ``command`` replaces the configured one (``{port}``, ``{served_name}`` filled in)."""
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    try:
        cmd = _filled(command, cfg) if command else serve_command(cfg)
        return subprocess.Popen(cmd, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        if log_path:
            log.close()


def wait_ready(base_url: str, served_name: str, *, timeout_s: float = 1800.0,
               api_key: str = "EMPTY", proc: subprocess.Popen | None = None,
               poll_s: float = 2.0) -> None:
    """Block until ``GET <base_url>/models`` lists ``served_name``.

    The server is asked again after 0.05 s, then twice as long each time up to ``poll_s`` (a
    server that starts in a second is not waited for ``poll_s``; one that takes minutes is not
    asked more often than every ``poll_s``); no request outlives ``timeout_s``.
    Raises RuntimeError when ``proc`` exits first, TimeoutError after ``timeout_s``, and
    ValueError when the server answers but serves other models (a misconfigured endpoint).
    """
    url = base_url.rstrip("/") + "/models"
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    pause = min(0.05, poll_s)
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"judge server exited with status {proc.returncode} before it "
                               f"was ready ({url})")
        try:
            req = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
            left = deadline - time.monotonic()
            with urllib.request.urlopen(req, timeout=min(10.0, max(0.05, left))) as resp:
                body = json.loads(resp.read().decode("utf-8"))
            names = [m.get("id") for m in body.get("data", [])]
            if served_name in names:
                return
            raise ValueError(f"judge endpoint {url} serves {names}, not {served_name!r}")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError,
                json.JSONDecodeError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"judge endpoint {url} not ready after {timeout_s:g} s ({last})")
        time.sleep(min(pause, left))
        pause = min(2 * pause, poll_s)


def stop(proc: subprocess.Popen, timeout_s: float = 60.0) -> int:
    """SIGTERM the server's process group, SIGKILL it after ``timeout_s``; return its status.

    The group is signalled even when the server has exited already: vLLM's OpenAI server runs
    its engine core as a child process in the same group, and a server that was killed
    (``kill -9``, the OOM killer) leaves that child running, holding its memory (seen with
    vLLM 0.12)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    return int(proc.returncode)


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is left (zombies waiting for their reaper aside)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    if not Path("/proc").is_dir():   # no process table to read: killpg's answer stands
        return True
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":   # stat fields 3 and 5: state, pgrp
            return True
    return False


def _empty_completion(body: bytes) -> bool:
    """A chat completion whose first choice has no text (an empty extraction or verdict)."""
    try:
        choices = json.loads(body.decode("utf-8")).get("choices") or [{}]
        content = (choices[0].get("message") or {}).get("content")
    except (ValueError, AttributeError, IndexError):
        return True
    return not (isinstance(content, str) and content.strip())


class JudgeRelay:
    """A local HTTP relay between lmms-eval and the judge that counts what lmms-eval hides.

    Every request is forwarded unchanged; a POST counts as failed when the judge cannot be
    reached, answers with an HTTP error, or returns a completion with empty content.
    """

    def __init__(self, upstream: str, host: str = "127.0.0.1") -> None:
        self.upstream = upstream.rstrip("/")
        self.calls = 0
        self.failures = 0
        self.last_error = ""
        self._lock = threading.Lock()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # the job log is lmms-eval's
                pass

            def _relay(self, method: str) -> None:
                body = None
                if method == "POST":
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.removeprefix("/v1")
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() in ("authorization", "content-type", "accept")}
                req = urllib.request.Request(relay.upstream + path, data=body, method=method,
                                             headers=headers)
                try:
                    with urllib.request.urlopen(req, timeout=600) as resp:
                        code, data = resp.status, resp.read()
                except urllib.error.HTTPError as exc:
                    code, data = exc.code, exc.read()
                except (urllib.error.URLError, OSError) as exc:
                    code, data = 502, json.dumps({"error": f"judge unreachable: {exc}"}).encode()
                if method == "POST":
                    relay._count(code, data)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._relay("GET")

            def do_POST(self):
                self._relay("POST")

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://{host}:{self._server.server_address[1]}/v1"
        # a short poll: closing the relay (once per job) waits for the loop's next turn
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    def _count(self, code: int, data: bytes) -> None:
        failed = code >= 400 or _empty_completion(data)
        with self._lock:
            self.calls += 1
            if failed:
                self.failures += 1
                self.last_error = f"HTTP {code}: {data[:200].decode('utf-8', 'replace')}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclasses.dataclass
class JudgeHandle:
    """The judge of a running job: its environment, and the check run after every repeat."""

    cfg: JudgeConfig
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    relay: JudgeRelay | None = None
    log_path: str | Path | None = None

    def check(self, repeat: int) -> None:
        """Fail (RuntimeError, saying why) when the judge died or failed too often."""
        if self.cfg.mode == "none":
            return
        where = f" (judge log: {self.log_path})" if self.log_path else ""
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"judge server exited with status {self.proc.returncode} during "
                               f"repeat {repeat}: its scores are not trusted, none written{where}")
        try:
            wait_ready(self.cfg.base_url, self.cfg.served_name, timeout_s=30, poll_s=2,
                       api_key=self.env["OPENAI_API_KEY"], proc=self.proc)
        except (TimeoutError, ValueError, RuntimeError) as exc:
            raise RuntimeError(f"judge not alive after repeat {repeat} ({exc}): none of its "
                               f"scores written{where}") from None
        relay = self.relay
        if relay is not None and relay.calls:
            failures = relay.failures + STATS.malformed
            frac = failures / relay.calls
            last = relay.last_error or f"not a verdict: {STATS.last_malformed!r}"
            if frac > self.cfg.max_error_fraction:
                raise RuntimeError(
                    f"judge failed on {failures} of {relay.calls} calls by repeat {repeat} "
                    f"({frac:.1%} > evaluate.judge.max_error_fraction "
                    f"{self.cfg.max_error_fraction:g}; last: {last}): those items scored 0, "
                    f"so no score is written{where}")


@contextlib.contextmanager
def running_judge(cfg: JudgeConfig, log_path: str | Path | None = None,
                  command: list[str] | None = None, tag: str = "job") -> Iterator[JudgeHandle]:
    """The judge for the duration of a block; sets (and yields with) its environment, which
    points lmms-eval at a counting relay in front of the judge. ``cfg`` with mode ``serve`` is
    first made this job's own (``for_job``: free port, unique served name)."""
    if cfg.mode == "none":
        yield JudgeHandle(cfg, {})
        return
    cfg = for_job(cfg, tag)
    upstream = judge_env(cfg)
    proc = serve(cfg, log_path, command) if cfg.mode == "serve" else None
    saved = {k: os.environ.get(k) for k in upstream}
    relay = None
    try:
        wait_ready(upstream["OPENAI_API_URL"], cfg.served_name, timeout_s=cfg.ready_timeout_s,
                   api_key=upstream["OPENAI_API_KEY"], proc=proc)
        relay = JudgeRelay(upstream["OPENAI_API_URL"])
        STATS.reset()  # this judge's malformed verdicts start at 0
        env = {**upstream, "OPENAI_API_URL": relay.url}
        os.environ.update(env)
        yield JudgeHandle(cfg, env, proc, relay, log_path)
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
        if relay is not None:
            relay.close()
        if proc is not None:
            stop(proc)
