"""A hard time budget for symbolic comparison, in any thread of any process.

Why a child process: math-verify bounds its work with ``signal.alarm``, which works only in a
process's main thread, and verl calls the reward from a thread pool; a thread cannot be stopped
from outside, a process can. So each process that scores answers keeps one child
(``python -m vade.rewards.math_worker``) that runs ``math_check.compare`` on one JSON line per
request; the parent waits at most ``BUDGET_S`` for the reply line, and on a late or missing
reply kills the child (it is busy with an unbounded SymPy computation), scores the pair as not
equal and starts a fresh child on the next request. Requests are serialised by a lock (SymPy holds
the GIL anyway); each one is bounded, so no caller waits forever. The child's stdout is the
protocol channel only: library prints go to stderr. Budget, not answers, decides a verdict only
for pathological answers (an ordinary comparison takes milliseconds).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time

__all__ = ["BUDGET_S", "START_TIMEOUT_S", "MathWorker", "bounded_compare"]

BUDGET_S = 1.0          # per comparison, from request to reply
START_TIMEOUT_S = 120.0  # the child's imports (SymPy, math-verify) on a cold, busy machine
_READY = "ready"


def _read_line(fd: int, deadline: float, buffer: bytearray) -> str | None:
    """One line from ``fd`` before ``deadline`` (None: too late or the child closed it)."""
    while b"\n" not in buffer:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buffer.extend(chunk)
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode("utf-8", "replace")


class MathWorker:
    """The parent's handle on its comparison child (see module doc)."""

    def __init__(self, budget_s: float = BUDGET_S) -> None:
        self.budget_s = budget_s
        self.killed = 0  # children killed for running past the budget
        self._proc: subprocess.Popen | None = None
        self._buffer = bytearray()
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "vade.rewards.math_worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, bufsize=0)
        self._buffer = bytearray()
        if _read_line(proc.stdout.fileno(), time.monotonic() + START_TIMEOUT_S,
                      self._buffer) != _READY:
            proc.kill()
            proc.wait()
            raise RuntimeError("the math comparison process (python -m vade.rewards.math_worker)"
                               f" did not start within {START_TIMEOUT_S:g} s")
        return proc

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def compare(self, gold: str, pred: str) -> bool:
        """``math_check.compare(gold, pred)``, or False past the budget."""
        request = (json.dumps({"gold": gold, "pred": pred}) + "\n").encode("utf-8")
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            try:
                self._proc.stdin.write(request)
            except (BrokenPipeError, OSError):
                self._stop()
                return False
            line = _read_line(self._proc.stdout.fileno(), time.monotonic() + self.budget_s,
                              self._buffer)
            if line is None:
                self.killed += 1
                self._stop()
                return False
            return line == "1"

    def close(self) -> None:
        with self._lock:
            self._stop()


_WORKER: MathWorker | None = None
_WORKER_PID = -1
_WORKER_LOCK = threading.Lock()


def bounded_compare(gold: str, pred: str) -> bool:
    """``MathWorker.compare`` on the process's shared worker (started on first use; a forked
    child starts its own)."""
    global _WORKER, _WORKER_PID
    with _WORKER_LOCK:
        if _WORKER is None or _WORKER_PID != os.getpid():
            _WORKER, _WORKER_PID = MathWorker(), os.getpid()
        worker = _WORKER
    return worker.compare(gold, pred)


def main() -> int:
    """The child: one request line in, ``1``/``0`` out, until stdin closes."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the protocol
    from vade.rewards.math_check import compare

    compare("1", "1")  # import and warm math-verify before saying ready
    out.write(_READY + "\n")
    for line in sys.stdin:
        try:
            request = json.loads(line)
            equal = compare(str(request["gold"]), str(request["pred"]))
        except (ValueError, KeyError, TypeError):
            equal = False
        out.write("1\n" if equal else "0\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
