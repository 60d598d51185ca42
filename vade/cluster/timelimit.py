"""Stop a training job cleanly before its time limit: checkpoint, exit, resume next submission.

Why: a paper-scale run needs many 48 h submissions, and checkpoints every ``checkpoint_every``
steps alone may never land inside one (DAPO's worst step is over 2 h: 20 steps take 44 h). Two
triggers, either one enough:

* wall time: the job's end (``SLURM_JOB_END_TIME``, set by SLURM in the job's environment) is
  nearer than ``margin`` (1.5) times the slowest step seen so far in this process;
* a signal: SLURM's warning (``--signal=<SIG>@<seconds>``, see ``cluster.time_limit`` and
  docs/cluster.md) or a user's ``kill -USR1 <pid>``. The handler only sets a flag; the trainer
  checks it between steps, so a step is never cut in half.

A process that cannot handle the signal itself (verl's trainer runs inside a Ray actor) is told
through a flag file (``VADE_CHECKPOINT_FLAG``), which the launcher writes when it gets the signal.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["END_ENV", "FLAG_ENV", "MARGIN_ENV", "SIGNAL_ENV", "TimeGuard", "TimeLimitReached",
           "job_end_time"]

END_ENV = "SLURM_JOB_END_TIME"        # epoch seconds; SLURM sets it in the job's environment
FLAG_ENV = "VADE_CHECKPOINT_FLAG"     # a file whose existence means "checkpoint and stop"
SIGNAL_ENV = "VADE_CHECKPOINT_SIGNALS"  # comma-separated names; default USR1
MARGIN_ENV = "VADE_TIME_MARGIN"       # the factor on the slowest step; default 1.5


class TimeLimitReached(SystemExit):
    """Raised after the checkpoint: one line on stderr, exit status 1, nothing lost."""


def job_end_time(environ: Mapping[str, str] | None = None) -> float | None:
    """The job's end in epoch seconds, or None outside a time-limited job."""
    env = os.environ if environ is None else environ
    raw = env.get(END_ENV, "").strip()
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 else None


class TimeGuard:
    """Between steps: should this process checkpoint now and exit? (``reason()``)."""

    def __init__(self, *, end_time: float | None = None, margin: float = 1.5,
                 signals: tuple[str, ...] = ("USR1",), flag_file: str | Path | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.end_time = end_time
        self.margin = float(margin)
        self.signals = tuple(signals)
        self.flag_file = Path(flag_file) if flag_file else None
        self.clock = clock
        self.slowest = 0.0
        self.received: str | None = None
        self._previous: dict[int, Any] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kw: Any) -> TimeGuard:
        env = os.environ if environ is None else environ
        names = tuple(s.strip().upper().removeprefix("SIG")
                      for s in env.get(SIGNAL_ENV, "USR1").split(",") if s.strip())
        return cls(end_time=job_end_time(env), margin=float(env.get(MARGIN_ENV) or 1.5),
                   signals=names, flag_file=env.get(FLAG_ENV) or None, **kw)

    def install(self) -> TimeGuard:
        """Handle the signals (main thread only; elsewhere the flag file and the clock serve)."""
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        for name in self.signals:
            num = getattr(signal, f"SIG{name}", None)
            if num is None:
                raise ValueError(f"{SIGNAL_ENV}: unknown signal {name!r}")
            self._previous[num] = signal.signal(num, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.received = signal.Signals(signum).name

    def restore(self) -> None:
        for num, handler in self._previous.items():
            signal.signal(num, handler)
        self._previous.clear()

    def step_done(self, seconds: float) -> None:
        self.slowest = max(self.slowest, float(seconds))

    def remaining(self) -> float | None:
        return None if self.end_time is None else self.end_time - self.clock()

    def reason(self) -> str | None:
        """Why to stop now, or None to go on."""
        if self.received:
            return f"{self.received} received (SLURM's warning before the time limit)"
        if self.flag_file is not None and self.flag_file.exists():
            return f"{self.flag_file} exists (the launcher got the time-limit signal)"
        left = self.remaining()
        if left is not None and self.slowest > 0 and left < self.margin * self.slowest:
            return (f"{left:.0f} s left of the job, under {self.margin:g} x the slowest step "
                    f"({self.slowest:.0f} s)")
        return None
