"""Judge wiring against a stub OpenAI-compatible server on 127.0.0.1: readiness checks, the
environment lmms-eval's judge client reads (it really sends its request to the stub), and a
served judge that is started, waited for and always stopped."""

from __future__ import annotations

import json
import socket
import sys
import threading
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

from vade.eval.config import JudgeConfig
from vade.eval.judge import judge_env, running_judge, wait_ready

# The stub, as a script: also run as a separate process for the `serve` mode (argv: port,
# served name, and optionally how many chat completions it answers before failing every later one).
# A failure carries ``retry-after-ms: 1``: the OpenAI client still retries twice (each retry is a
# request the relay counts), only without its own 0.5 s and 1 s back-off, which no test checks.
STUB = r'''
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVED = sys.argv[2] if len(sys.argv) > 2 else "judge"
OK = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 10**9
SEEN = []

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        if code >= 500:
            self.send_header("retry-after-ms", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": SERVED, "object": "model"}]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SEEN.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, {"error": "not found"})
        if len(SEEN) > OK:
            return self._send(500, {"error": {"message": "CUDA out of memory"}})
        self._send(200, {"id": "c1", "object": "chat.completion", "created": 0,
                         "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": "42"}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                   "total_tokens": 2}})

if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''

_ns: dict = {}
exec(compile(STUB, "stub_openai", "exec"), _ns)  # noqa: S102 (our own stub, in-process)
_ns["SERVED"] = "judge"  # (the script reads it from argv, which is pytest's here)


@pytest.fixture()
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ns["Handler"])
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    _ns["SEEN"].clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _ns["SEEN"]
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_judge_env_names_the_base_url_key_and_model():
    cfg = JudgeConfig(mode="external", url="http://h:9/v1/", served_name="qwen72b",
                      api_key_env="MY_KEY")
    assert judge_env(cfg, {"MY_KEY": "sk-1"}) == {
        "API_TYPE": "openai", "OPENAI_API_URL": "http://h:9/v1", "OPENAI_API_KEY": "sk-1",
        "MODEL_VERSION": "qwen72b"}
    assert judge_env(JudgeConfig(port=8123), {})["OPENAI_API_URL"] == "http://127.0.0.1:8123/v1"
    assert judge_env(JudgeConfig(port=8000), {})["OPENAI_API_KEY"] == "EMPTY"


def test_wait_ready_accepts_the_served_name_only(stub):
    url, _ = stub
    wait_ready(url, "judge", timeout_s=5)
    with pytest.raises(ValueError, match="serves \\['judge'\\], not 'other'"):
        wait_ready(url, "other", timeout_s=5)
    with pytest.raises(TimeoutError, match="not ready"):
        wait_ready(f"http://127.0.0.1:{_free_port()}/v1", "judge", timeout_s=0.3, poll_s=0.05)


def test_lmms_eval_judge_client_reaches_the_endpoint(stub, monkeypatch):
    from lmms_eval.llm_judge import Request, ServerConfig, get_server

    url, seen = stub
    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    cfg = JudgeConfig(mode="external", url=url, served_name="judge", api_key_env="JUDGE_KEY")
    for k, v in judge_env(cfg).items():
        monkeypatch.setenv(k, v)
    import os

    server = get_server(server_name=os.environ["API_TYPE"],
                        config=ServerConfig(model_name=os.environ["MODEL_VERSION"],
                                            num_retries=1, retry_delay=0))
    resp = server.evaluate(Request(messages=[{"role": "user", "content": "6*7?"}]))
    assert resp.success and resp.content.strip() == "42"
    (call,) = seen
    assert call["path"] == "/v1/chat/completions" and call["model"] == "judge"
    assert call["auth"] == "Bearer sk-test"
    assert call["messages"][-1]["content"] == "6*7?"


def test_served_judge_is_started_waited_for_and_stopped(tmp_path, monkeypatch):
    port = _free_port()
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    cfg = JudgeConfig(mode="serve", port=port, served_name="j72", ready_timeout_s=30)
    monkeypatch.delenv("OPENAI_API_URL", raising=False)
    with running_judge(cfg, tmp_path / "judge.log", tag="t-r0",
                       command=[sys.executable, str(script), "{port}", "{served_name}"]) as h:
        import os

        env = h.env
        # lmms-eval is pointed at the counting relay in front of the judge on `port`
        judge_url = f"http://127.0.0.1:{port}/v1"
        assert os.environ["OPENAI_API_URL"] == env["OPENAI_API_URL"] != judge_url
        with urllib.request.urlopen(env["OPENAI_API_URL"] + "/models", timeout=5) as r:
            served = json.loads(r.read())["data"][0]["id"]
        assert served == env["MODEL_VERSION"] and served.startswith("j72-t-r0-")  # unique
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as r:
            assert json.loads(r.read())["data"][0]["id"] == served
    assert "OPENAI_API_URL" not in os.environ  # restored
    with pytest.raises(OSError):  # the server is gone
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)


def test_served_judge_that_dies_is_an_error_not_a_hang(tmp_path):
    cfg = JudgeConfig(mode="serve", port=_free_port(), ready_timeout_s=60)
    with pytest.raises(RuntimeError, match="exited with status 3"), running_judge(
            cfg, command=[sys.executable, "-c", "import sys; sys.exit(3)"]):
        pass


def test_vade_judge_serve_writes_ready_file_and_stops_on_sigterm(tmp_path):
    import os
    import signal
    import subprocess
    import time

    port = _free_port()
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    cfg = {"evaluate": {"judge": {"mode": "serve", "port": port, "served_name": "j",
                                  "command": [sys.executable, str(script), "{port}", "j"]}}}
    ready = tmp_path / "judge.json"
    proc = subprocess.Popen([sys.executable, "-m", "vade", "judge", "serve", "--config-json",
                             json.dumps(cfg), "--ready-file", str(ready)],
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert json.loads(ready.read_text()) == {
            "API_TYPE": "openai", "MODEL_VERSION": "j",
            "OPENAI_API_URL": f"http://127.0.0.1:{port}/v1"}  # no key in the file
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    with pytest.raises(OSError):  # the stub server went down with it
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)


def test_stop_ends_the_servers_children_when_the_server_itself_was_killed(tmp_path):
    """vLLM's OpenAI server runs its engine core as a child process in the server's process
    group; when the server is killed (OOM, ``kill -9``) the child lives on. ``stop`` must end
    the whole group even then. Stand-in: a shell as the server and ``sleep`` as its child."""
    import os
    import signal
    import time

    from vade.eval.judge import serve, stop

    pid_file = tmp_path / "child.pid"
    cfg = JudgeConfig(mode="serve", port=_free_port())
    proc = serve(cfg, command=["sh", "-c", f"sleep 1000 & echo $! > {pid_file}; wait"])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child = int(pid_file.read_text())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    try:
        stop(proc, timeout_s=10)
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child), "the server's child outlived stop()"
    finally:
        if _running(child):
            os.kill(child, signal.SIGKILL)


def _running(pid: int) -> bool:
    """A process that exists and is not a zombie (``/proc/<pid>/stat``, state field)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
