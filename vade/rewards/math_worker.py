"""A hard time budget for symbolic comparison, in any thread of any process, restarts included.

Why a child process: math-verify bounds its work with ``signal.alarm``, which works only in a
process's main thread, and verl calls the reward from a thread pool; a thread cannot be stopped
from outside, a process can. So comparisons run in a child (``python -m vade.rewards.math_child``)
that answers one JSON line per request, and the caller waits at most the budget for the reply;
on a late or missing reply the child is killed and the pair scored "not equal".

The budget (``BUDGET_S``, 1 s) is the comparison's own CPU time: the child watches its process
CPU time (``time.process_time``) from each request and ends itself past the budget, so the
verdict does not depend on how busy the machine is (issue 49, item 16: with the budget in wall
time, a right answer scored 0 at load 5, its comparison starved of CPU by seven others).
``WALL_CAP_S`` (30 s), far above it, bounds what a call waits for in wall time (a child that
gets no CPU at all, a restart) and only then scores "not equal". math-verify's own timeout,
wall time too, is off in the child for the same reason. What holds:

* **One worker per thread** (``bounded_compare`` keeps a ``MathWorker`` per thread and per
  process), each with its own children, so a comparison killed in one thread never delays a
  call in another: there is no shared child and no lock between threads.
* **Restarts happen ahead of need.** A kill starts a spare child in the background at once, and
  from then on the worker keeps one warm spare, so the next call usually finds a ready child.
  When none is ready within the wall cap, the call returns "not equal"
  (``MathWorker.late`` counts these).
* The first call of a thread starts its child and waits for it (``START_TIMEOUT_S``, the cold
  imports on a busy machine): that is starting up, not a restart, and happens once per thread.

The child's stdout is the protocol channel only: library prints go to stderr. Budget, not
answers, decides a verdict only for pathological answers (an ordinary comparison takes
milliseconds). ``vade bench reward`` measures it with 8 threads at once.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
import weakref

__all__ = ["BUDGET_S", "START_TIMEOUT_S", "WALL_CAP_S", "MathWorker", "bounded_compare"]

BUDGET_S = 1.0          # per comparison: the child's CPU time from request to reply
WALL_CAP_S = 30.0       # per call, wall time: a starved or stuck child, a restart
START_TIMEOUT_S = 120.0  # the child's imports (SymPy, math-verify) on a cold, busy machine
_READY = "ready"
_POLL_S = 0.01          # how often the child looks at its CPU time


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


class _Child:
    """One comparison process; ``ready`` is set once it has said so (started in the background
    when ``background`` is true)."""

    def __init__(self, background: bool, budget_s: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "vade.rewards.math_child",
                                      str(budget_s)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)
        self.buffer = bytearray()
        self.ready = threading.Event()
        self.failed = False
        if background:
            threading.Thread(target=self._boot, name="vade-math-start", daemon=True).start()
        else:
            self._boot()

    def _boot(self) -> None:
        line = _read_line(self.proc.stdout.fileno(), time.monotonic() + START_TIMEOUT_S,
                          self.buffer)
        self.failed = line != _READY
        if self.failed:
            self.kill()
        self.ready.set()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def usable(self) -> bool:
        return self.ready.is_set() and not self.failed and self.proc.poll() is None


def _kill_all(children: list[_Child]) -> None:
    for child in children:
        child.kill()


class MathWorker:
    """One thread's comparison children: the active one and, after a first kill, a warm spare
    (module doc). Not shared between threads."""

    def __init__(self, budget_s: float = BUDGET_S, wall_cap_s: float = WALL_CAP_S) -> None:
        self.budget_s = budget_s      # CPU seconds of the child per comparison
        self.wall_cap_s = wall_cap_s  # wall seconds per call
        self.killed = 0  # children killed for running past the budget
        self.late = 0    # calls that found no ready child within their budget
        self._active: _Child | None = None
        self._spare: _Child | None = None
        self._children: list[_Child] = []  # every live child, for the finalizer
        weakref.finalize(self, _kill_all, self._children)

    def _new(self, background: bool) -> _Child:
        child = _Child(background, self.budget_s)
        self._children.append(child)
        return child

    def _drop(self, child: _Child | None) -> None:
        """Kill ``child``; it is reaped in the background, so the caller does not wait for a
        busy machine to schedule its exit."""
        if child is not None:
            child.proc.kill()
            threading.Thread(target=child.proc.wait, name="vade-math-reap", daemon=True).start()
            if child in self._children:
                self._children.remove(child)

    def _ready_child(self, deadline: float) -> _Child | None:
        """The active child; else the spare once ready (before ``deadline``); else, when the
        worker never had a child, a new one started in the foreground (first use)."""
        if self._active is not None and self._active.proc.poll() is None:
            return self._active
        self._drop(self._active)
        self._active = None
        if self._spare is None:
            if self.killed:  # a spare died: start one, do not wait past the budget for it
                self._spare = self._new(background=True)
            else:
                child = self._new(background=False)
                if child.failed:
                    self._drop(child)
                    raise RuntimeError("the math comparison process (python -m "
                                       "vade.rewards.math_worker) did not start within "
                                       f"{START_TIMEOUT_S:g} s")
                self._active = child
                return child
        self._spare.ready.wait(max(0.0, deadline - time.monotonic()))
        if not self._spare.usable():
            if self._spare.ready.is_set():  # it failed to start: replace it
                self._drop(self._spare)
                self._spare = self._new(background=True)
            return None
        self._active, self._spare = self._spare, self._new(background=True)
        return self._active

    def compare(self, gold: str, pred: str) -> bool:
        """``math_check.compare(gold, pred)``, or False past the CPU budget or the wall cap
        (module doc)."""
        deadline = time.monotonic() + self.wall_cap_s
        request = (json.dumps({"gold": gold, "pred": pred}) + "\n").encode("utf-8")
        first = not self._children
        child = self._ready_child(deadline)
        if first:  # the thread's first child just started: its wall cap starts now
            deadline = time.monotonic() + self.wall_cap_s
        if child is None:
            self.late += 1
            return False
        try:
            child.proc.stdin.write(request)
        except (BrokenPipeError, OSError):
            self._drop(child)
            self._active = None
            return False
        line = _read_line(child.proc.stdout.fileno(), deadline, child.buffer)
        if line is None:
            self.killed += 1
            self._drop(child)
            self._active = None
            if self._spare is None:
                self._spare = self._new(background=True)
            return False
        return line == "1"

    def close(self) -> None:
        _kill_all(self._children)
        self._children.clear()
        self._active = self._spare = None


_LOCAL = threading.local()


def bounded_compare(gold: str, pred: str) -> bool:
    """``MathWorker.compare`` on this thread's own worker (started on first use; a forked child
    process starts its own)."""
    worker = getattr(_LOCAL, "worker", None)
    if worker is None or getattr(_LOCAL, "pid", -1) != os.getpid():
        _LOCAL.worker, _LOCAL.pid = MathWorker(), os.getpid()
        worker = _LOCAL.worker
    return worker.compare(gold, pred)

