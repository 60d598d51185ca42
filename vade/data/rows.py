"""One source row -> an ``Item`` or a counted failure: the step the build and the probe share.

Why shared: the probe's parse rate is only a promise about the build if both parse a row the same
way (same duplicate-id rule, same filters, same parsers). ``RowTally`` keeps the counts per reason
and the first three examples of each, which is what the probe prints and the manifest records.
"""

from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from vade.data.items import InvalidRow, Item
from vade.data.sources import SourceSpec

__all__ = ["EXAMPLES", "RowTally", "SourceRows"]

EXAMPLES = 3


@dataclass
class RowTally:
    """Visited rows of one source: parsed, filtered by design, invalid per reason, with examples."""

    visited: int = 0
    parsed: int = 0
    filtered: Counter = field(default_factory=Counter)
    invalid: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def fail(self, reason: str, row_id: str, detail: str) -> None:
        self.invalid[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < EXAMPLES:
            shown.append(f"{row_id}: {detail}" if detail else row_id)

    @property
    def parse_rate(self) -> float | None:
        """Parsed / (visited - filtered by design); None before any such row."""
        considered = self.visited - sum(self.filtered.values())
        return self.parsed / considered if considered else None

    def to_dict(self) -> dict[str, Any]:
        rate = self.parse_rate
        return {"visited": self.visited, "parsed": self.parsed,
                "parse_rate": None if rate is None else round(rate, 4),
                "filtered": dict(sorted(self.filtered.items())),
                "invalid": dict(sorted(self.invalid.items())),
                "examples": {k: list(v) for k, v in sorted(self.examples.items())}}


class SourceRows:
    """Parses rows of one opened source (``ds``) into items, tallying every outcome."""

    def __init__(self, spec: SourceSpec, ds: Any) -> None:
        self.spec = spec
        self.ds = ds
        self.family = importlib.import_module(f"vade.data.sources.{spec.family}")
        self.tally = RowTally()
        self._dups = _duplicate_positions(ds)

    def parse(self, pos: int) -> Item | None:
        """The item at row position ``pos``, or None (counted as filtered or invalid)."""
        row = self.ds[pos]
        rid = self.family.row_id(self.spec, row, pos)
        self.tally.visited += 1
        filtered = getattr(self.family, "is_filtered", lambda r: None)(row)
        if filtered:
            self.tally.filtered[filtered] += 1
            return None
        try:
            if pos in self._dups:
                raise InvalidRow("duplicate_id", f"id also on row position {self._dups[pos]}")
            item = self.family.parse_row(self.spec, row, rid)
        except InvalidRow as exc:
            self.tally.fail(exc.reason, rid, exc.detail)
            return None
        self.tally.parsed += 1
        return item


def _duplicate_positions(ds: Any) -> dict[int, int]:
    """position -> position of the first row with the same ``id`` (later occurrences only)."""
    if "id" not in ds.column_names:
        return {}
    first: dict[Any, int] = {}
    dups: dict[int, int] = {}
    for pos, value in enumerate(ds["id"]):
        if value in (None, ""):
            continue
        if value in first:
            dups[pos] = first[value]
        else:
            first[value] = pos
    return dups
