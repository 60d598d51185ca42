"""One preflight result (``Check``), in its own module: ``preflight`` runs the checks that
``preflight_cache`` and ``preflight_memory`` define, and all three return this type, so it sits
below them (no import cycle)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    knob: str = ""

    def line(self) -> str:
        head = "ok  " if self.ok else "FAIL"
        tail = "" if self.ok or not self.knob else f" -> {self.knob}"
        return f"{head} {self.name}: {self.detail}{tail}"
