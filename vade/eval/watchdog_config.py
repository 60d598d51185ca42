"""``evaluate.judge.watchdog``, typed: its own module because ``vade.eval.config`` reads it and
the watchdog (``vade.eval.watchdog``) uses the judge, which reads ``vade.eval.config``; here it
sits below both."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vade.checks import check_float, check_int, reject_unknown

__all__ = ["WatchdogConfig"]


@dataclasses.dataclass(frozen=True)
class WatchdogConfig:
    """``evaluate.judge.watchdog``."""

    interval_s: float = 10.0        # how often the judge is looked at
    min_calls: int = 20             # recent calls needed before their error fraction counts
    window_calls: int = 200         # "recent": about the last this many calls
    hang_s: float = 300.0           # a judge call unanswered this long: hung
    liveness_timeout_s: float = 10.0   # GET /models answer time
    liveness_failures: int = 3      # consecutive unanswered liveness probes: dead
    max_retries: int = 2            # caps lmms-eval's ServerConfig.num_retries
    retry_delay_s: float = 2.0      # caps ServerConfig.retry_delay
    call_timeout_s: int = 120       # caps ServerConfig.timeout (one call)

    @classmethod
    def from_dict(cls, v: Mapping[str, Any] | None) -> WatchdogConfig:
        v = dict(v or {})
        w = "evaluate.judge.watchdog"
        reject_unknown(v, {f.name for f in dataclasses.fields(cls)}, w)
        for key in ("interval_s", "hang_s", "liveness_timeout_s", "retry_delay_s"):
            if key in v:
                v[key] = check_float(f"{w}.{key}", v[key], 0.0, 86400.0,
                                     open_lo=key != "retry_delay_s")
        for key, lo in (("min_calls", 1), ("window_calls", 1), ("liveness_failures", 1),
                        ("max_retries", 1), ("call_timeout_s", 1)):
            if key in v:
                v[key] = check_int(f"{w}.{key}", v[key], lo, 10**9)
        return cls(**v)
