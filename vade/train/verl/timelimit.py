"""verl runs stop before the job's time limit with a checkpoint (``vade.job.timelimit``).

verl 0.7.1's ``fit`` (and verl-recipe's DAPO ``fit``) already force a checkpoint when a
"capacity block" nears its end: after each actor update they call ``should_save_ckpt_esi(
max_steps_duration=<slowest step so far>, ...)``, imported by name into the trainer's module,
which reads two cloud vendors' expiration variables. :func:`install` puts
:func:`should_checkpoint` in its place in that module: the same question answered from SLURM
(the job's end time, the signal's flag file) with our margin (1.5 x the slowest step).
After that checkpoint :func:`stop_if_due` (called from the trainer subclasses'
``_save_checkpoint``) records why in ``VADE_TIME_STOP`` and ends ``fit``; the launcher then exits
with one line, and the next submission resumes from the checkpoint (``resume_mode=auto``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from vade.job.timelimit import TimeGuard

__all__ = ["STOP_ENV", "TimeLimitStop", "install", "should_checkpoint", "stop_if_due"]

STOP_ENV = "VADE_TIME_STOP"   # the JSON file the trainer writes when it stops for the limit
_STATE: dict[str, Any] = {"guard": None, "reason": None}


class TimeLimitStop(RuntimeError):
    """Ends ``fit`` inside the Ray actor after the checkpoint (a SystemExit would look like an
    intended actor exit to Ray)."""


def _guard() -> TimeGuard:
    if _STATE["guard"] is None:
        _STATE["guard"] = TimeGuard.from_env()   # no signal handler: not the main thread
    return _STATE["guard"]


def should_checkpoint(max_steps_duration: float, save_ckpt_duration: float = 60,
                      redundant_time: float = 0) -> bool:
    """``should_save_ckpt_esi``'s signature; True when this job should checkpoint and stop."""
    guard = _guard()
    guard.step_done(float(max_steps_duration) + float(save_ckpt_duration))
    reason = guard.reason()
    if reason:
        _STATE["reason"] = reason
    return reason is not None


def install(module: ModuleType) -> None:
    """Replace ``module.should_save_ckpt_esi`` (the trainer module's imported name)."""
    if getattr(module, "should_save_ckpt_esi", None) is not should_checkpoint:
        module.should_save_ckpt_esi = should_checkpoint


def stop_if_due(step: int) -> None:
    """After a checkpoint: if it was the time limit's, write ``VADE_TIME_STOP`` and end."""
    reason = _STATE["reason"]
    if not reason:
        return
    path = os.environ.get(STOP_ENV)
    if path:
        tmp = Path(path).with_name(Path(path).name + ".tmp")
        tmp.write_text(json.dumps({"step": int(step), "reason": reason}))
        os.replace(tmp, path)
    raise TimeLimitStop(f"checkpointed step {step} and stopped: {reason}")
