"""Wall-clock seconds per phase of a training step, so a slow step can be attributed.

Phases of the local trainer (names are the keys of ``timing_s/<phase>`` metrics and of
``done.json``'s ``timing_s``): ``sampler`` (select + observe), ``generate`` (engine calls,
prompt encoding included), ``reward`` (scoring the responses), ``ref_logprob`` (no-grad passes:
the KL reference and, when a batch is reused, the old policy), ``actor`` (log-probs with grad,
backward, optimizer), ``log`` (DuckDB + MLflow), ``validate``, ``checkpoint``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PHASES", "Phases"]

PHASES = ("sampler", "generate", "reward", "ref_logprob", "actor", "log", "validate",
          "checkpoint")


class Phases:
    """Accumulates seconds per phase; ``with phases.time("generate"): ...``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def time(self, phase: str) -> Iterator[None]:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r} (known: {', '.join(PHASES)})")
        t = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - t

    def metrics(self) -> dict[str, float]:
        """``timing_s/<phase>`` for the phases timed so far."""
        return {f"timing_s/{k}": v for k, v in self.seconds.items()}
