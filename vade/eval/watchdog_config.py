"""``evaluate.judge.watchdog``, typed: its own module because ``vade.eval.config`` reads it and
the watchdog (``vade.eval.watchdog``) uses the judge, which reads ``vade.eval.config``; here it
sits below both."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vade.config_schema import build

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
    def from_checked(cls, v: Mapping[str, Any] | None) -> WatchdogConfig:
        """From ``evaluate.judge.watchdog`` as the schema checked it (its types and ranges:
        workflow/schemas/config.schema.yaml, vade.config_schema)."""
        return build(cls, v or {})
