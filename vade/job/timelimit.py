"""Stop a training job cleanly before its time limit: checkpoint, exit, resume next submission.

Why: a paper-scale run needs many 48 h submissions, and checkpoints every ``checkpoint_every``
steps alone may never land inside one (DAPO's worst step is over 2 h: 20 steps take 44 h). Two
triggers, either one enough:

* wall time: the job's end (``SLURM_JOB_END_TIME`` in the job's environment, else what
  ``squeue -o %e`` says for ``SLURM_JOB_ID``) is nearer than ``margin`` (1.5) times the slowest step seen so far in this process;
* a signal: SLURM's warning (``--signal=URG@<seconds>`` in slurm/config.yaml, see
  docs/cluster.md), a user's ``kill -USR1 <pid>``, or ``SIGTERM`` (what ``scancel`` and
  preemption send first, KillWait seconds before SIGKILL). The handler only sets a flag; the
  trainer checks it between steps, so a step is never cut in half. The handlers stay installed
  until the run's MLflow run is closed: a second signal while stopping only sets the flag again
  (issue 49: a second SIGUSR1 0.2 s later hit the default handler, rc 138, no message).

A process that cannot handle the signal itself (verl's trainer runs inside a Ray actor) is told
through a flag file (``VADE_CHECKPOINT_FLAG``), which the launcher writes when it gets the signal.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["END_ENV", "FLAG_ENV", "MARGIN_ENV", "SIGNAL_ENV", "TimeGuard", "TimeLimitReached",
           "flag_on_signal", "job_end_time", "signal_names"]

END_ENV = "SLURM_JOB_END_TIME"        # epoch seconds; SLURM sets it in the job's environment
FLAG_ENV = "VADE_CHECKPOINT_FLAG"     # a file whose existence means "checkpoint and stop"
SIGNAL_ENV = "VADE_CHECKPOINT_SIGNALS"  # comma-separated names; default USR1,URG,TERM
_WHY = {"URG": "SLURM's warning before the time limit", "USR1": "a checkpoint request",
        "TERM": "scancel or preemption"}
MARGIN_ENV = "VADE_TIME_MARGIN"       # the factor on the slowest step; default 1.5


class TimeLimitReached(SystemExit):
    """Raised after the checkpoint: one line on stderr, exit status 1, nothing lost."""


def job_end_time(environ: Mapping[str, str] | None = None,
                 squeue: Callable[[str], str] | None = None) -> float | None:
    """The job's end in epoch seconds (``SLURM_JOB_END_TIME``, else ``squeue -o %e`` for
    ``SLURM_JOB_ID``), or None outside a time-limited job."""
    env = os.environ if environ is None else environ
    raw = env.get(END_ENV, "").strip()
    if not raw and env.get("SLURM_JOB_ID"):
        raw = (squeue or _squeue_end)(env["SLURM_JOB_ID"]).strip()
        try:   # squeue prints local time, e.g. 2026-11-29T10:05:00
            raw = str(datetime.fromisoformat(raw).timestamp()) if "T" in raw else ""
        except ValueError:
            raw = ""
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 else None


def _squeue_end(job_id: str) -> str:
    exe = shutil.which("squeue")
    if not exe:
        return ""
    try:
        return subprocess.run([exe, "-h", "-j", job_id, "-o", "%e"], capture_output=True,
                              text=True, timeout=30, check=False).stdout
    except (subprocess.SubprocessError, OSError):
        return ""


def signal_names(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The signals that mean "checkpoint now": ``VADE_CHECKPOINT_SIGNALS``, default USR1, URG
    and TERM (URG for SLURM's warning: its default action is to be ignored, so the processes
    that do not handle it, Snakemake's and Ray's, live on)."""
    env = os.environ if environ is None else environ
    names = tuple(s.strip().upper().removeprefix("SIG")
                  for s in env.get(SIGNAL_ENV, "USR1,URG,TERM").split(",") if s.strip())
    for name in names:
        if not isinstance(getattr(signal, f"SIG{name}", None), int):
            raise ValueError(f"{SIGNAL_ENV}: unknown signal {name!r}")
    return names


def flag_on_signal(flag: str | Path, environ: Mapping[str, str] | None = None) -> None:
    """In a process that only launches the trainer: on a checkpoint signal, create ``flag``
    (which the trainer's guard reads) instead of dying."""
    path = Path(flag)

    def _handle(signum: int, frame: Any) -> None:
        path.write_text(signal.Signals(signum).name)

    for name in signal_names(environ):
        signal.signal(getattr(signal, f"SIG{name}"), _handle)


class TimeGuard:
    """Between steps: should this process checkpoint now and exit? (``reason()``)."""

    def __init__(self, *, end_time: float | None = None, margin: float = 1.5,
                 signals: tuple[str, ...] = ("USR1", "URG", "TERM"), flag_file: str | Path | None = None,
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
        return cls(end_time=job_end_time(env), margin=float(env.get(MARGIN_ENV) or 1.5),
                   signals=signal_names(env), flag_file=env.get(FLAG_ENV) or None, **kw)

    def install(self) -> TimeGuard:
        """Handle the signals (main thread only; elsewhere the flag file and the clock serve)."""
        if threading.current_thread() is not threading.main_thread():
            return self
        for name in self.signals:
            num = getattr(signal, f"SIG{name}")
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
            why = _WHY.get(self.received.removeprefix("SIG"))
            return f"{self.received} received" + (f" ({why})" if why else "")
        if self.flag_file is not None and self.flag_file.exists():
            return f"{self.flag_file} exists (the launcher got the time-limit signal)"
        left = self.remaining()
        if left is not None and self.slowest > 0 and left < self.margin * self.slowest:
            return (f"{left:.0f} s left of the job, under {self.margin:g} x the slowest step "
                    f"({self.slowest:.0f} s)")
        return None
