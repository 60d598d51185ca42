"""A run folder has one writer, and what a new start replaces is moved aside, not deleted.

* :class:`RunLock`: ``<out>/.lock`` held with ``flock`` for the whole run (the kernel drops it
  when the process dies, so a kill never leaves a stale lock) and holding the writer's pid, so a
  second training on the same folder is refused before it loads anything, naming that process.
* :func:`supersede`: a fresh start in a folder that holds an earlier config's outputs moves them
  to ``<out>/superseded/<UTC time>/`` (the history renamed ``history.duckdb.old``, so queries
  over a folder of runs do not count it as a run), and says so.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO

__all__ = ["OUTPUTS", "RunLock", "supersede"]

# What a run writes in its folder (besides the lock), and the name each gets when moved aside.
OUTPUTS = {"done.json": "done.json", "history.duckdb": "history.duckdb.old",
           "history.duckdb.wal": "history.duckdb.old.wal", "checkpoints": "checkpoints",
           "final": "final", "mlflow.json": "mlflow.json"}


_HELD: dict[Path, int] = {}  # locks handed down in this process -> RunLocks inside them


class RunLock:
    """Exclusive use of a run folder by this process (module doc). ``hand_down``: a RunLock of
    the same folder taken later in this process, inside this one, is granted (``vade train
    --log`` takes the lock before the trainer does; a second ``flock`` on a new file description
    would refuse its own process)."""

    def __init__(self, out: str | Path, *, hand_down: bool = False) -> None:
        self.path = Path(out) / ".lock"
        self._handle: IO[str] | None = None
        self._nested = False
        self._hand_down = hand_down

    def __enter__(self) -> RunLock:
        key = self.path.absolute()
        if key in _HELD:
            _HELD[key] += 1
            self._nested = True
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - held until __exit__
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise ValueError(f"run folder {self.path.parent} is being written by another "
                             f"process (pid {owner}, lock {self.path}): wait for it to finish or "
                             "stop it; two trainings cannot share a folder") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle
        if self._hand_down:
            _HELD[key] = 1
        return self

    def __exit__(self, *exc: object) -> None:
        key = self.path.absolute()
        if self._nested:
            _HELD[key] -= 1
            self._nested = False
            return
        if self._hand_down:
            _HELD.pop(key, None)
        if self._handle is not None:
            self._handle.close()  # releases the flock; the file stays (harmless, reused)
            self._handle = None


def supersede(out: str | Path, reason: str) -> Path | None:
    """Move the run outputs in ``out`` to ``out/superseded/<UTC time>/``; return that folder
    (None when there was nothing to move). ``reason`` goes to a ``reason.txt`` beside them."""
    out = Path(out)
    present = [name for name in OUTPUTS if (out / name).exists()]
    if not present:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = out / "superseded" / stamp
    n = 1
    while target.exists():
        n += 1
        target = out / "superseded" / f"{stamp}-{n}"
    target.mkdir(parents=True)
    for name in present:
        os.replace(out / name, target / OUTPUTS[name])
    (target / "reason.txt").write_text(reason + "\n")
    return target
