"""A real ``mlflow server`` on 127.0.0.1: SQLite backend on local disk, artifacts in a folder.

Why: on a cluster the runs of many jobs log over HTTP to one tracking server, whose single
process owns the database; the tests check that path (the SLURM pipeline, eight concurrent jobs)
against the server a user starts with the same command (docs/cluster.md, "An MLflow server").
The server runs in its own process group on a free port and is stopped by its pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .local_slurm import free_port, tail


@dataclass
class Server:
    """A started server; ``uri`` is what ``MLFLOW_TRACKING_URI`` takes."""

    root: Path
    port: int
    proc: subprocess.Popen

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        """``stop``, under the name ``contextlib.closing`` calls."""
        self.stop()

    def stop(self) -> None:
        """SIGTERM the server's process group (uvicorn and its workers), SIGKILL after 20 s."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def command(root: Path, port: int) -> list[str]:
    """The same command a user runs on the server host (docs/cluster.md)."""
    mlflow = Path(sys.executable).parent / "mlflow"
    return [str(mlflow), "server", "--host", "127.0.0.1", "--port", str(port),
            "--backend-store-uri", f"sqlite:///{root}/mlflow.db",
            "--artifacts-destination", str(root / "artifacts"), "--workers", "1"]


def start(root: Path) -> Server:
    """A server starting (its first start migrates the new database: ~10-70 s); ``wait``
    returns once it answers. Its URI is known at once, so jobs can be given it meanwhile."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    return Server(root=root, port=port, proc=_launch(root, port, "w"))


def _launch(root: Path, port: int, mode: str) -> subprocess.Popen:
    log = (root / "server.log").open(mode)
    # the GenAI job runner (huey consumers, a dozen processes) serves no tracking request
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    return subprocess.Popen(command(root, port), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env=env)


def kill(server: Server) -> None:
    """SIGKILL the server's process group: a server that goes away mid-run."""
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait()


def restart(server: Server) -> Server:
    """The same server (database, port) started again after ``kill``; ``wait`` for it."""
    server.proc = _launch(server.root, server.port, "a")
    return server


def wait(server: Server, timeout_s: float = 180) -> Server:
    """``server`` once ``/health`` answers; stops it and raises when it does not."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited ({server.proc.returncode})\n"
                               + tail(server.root / "server.log"))
        try:
            with urllib.request.urlopen(f"{server.uri}/health", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"mlflow server not up after {timeout_s:.0f} s\n"
                       + tail(server.root / "server.log"))
