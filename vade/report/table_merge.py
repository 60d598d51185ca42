"""Fold a study's freshly exported per-run table (``runs.csv``, or ``picks.csv``) into the
committed one.

Why: a study outlives the machine that runs it. The race's runs take about 10 hours on two
cores, sittings last three, and ``results/`` (the run histories) is neither committed nor
guaranteed to survive to the next sitting. The committed table is what lasts, so each sitting's
export is folded into it: a run the committed table has and the new export lacks is carried
over, a new run is added, and a run both have must agree byte for byte (the export writes fixed
decimals: same history, same bytes). A run that differs is refused, named with its first
differing cell, and nothing is written: either the run is not what produced the committed rows
(another code version, another machine's arithmetic) or the committed table is stale; both need
a person's decision, not a silent overwrite. A table of another study is refused too: the
studies share run ids (``tiny-grpo-vanilla-s0`` is a run of each testbed), so its runs would
otherwise land as the committed study's.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from vade.report.export import COLUMNS, table_text, write_table_text
from vade.report.picks import PICK_COLUMNS, picks_text

__all__ = ["Merged", "merge_table_files", "merge_tables"]


@dataclass(frozen=True)
class Merged:
    """The merged table's text and what happened to each run."""

    text: str
    added: tuple[str, ...]       # runs only the new export has
    carried: tuple[str, ...]     # runs only the committed table has
    agreed: tuple[str, ...]      # runs both have, identical
    differing: tuple[str, ...]   # one line per run both have that differ (then ``text`` is "")


def _runs(text: str, where: str, columns: tuple[str, ...]) -> dict[str, list[list[str]]]:
    """run id -> its rows (cells as written), in file order; the header must be ``columns``
    (run id second, the row's key within the run fifth: step, or part)."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(rows[0]) != columns:
        raise ValueError(f"{where}: the header is not the {_NAMES[columns]} "
                         f"({', '.join(columns)})")
    out: dict[str, list[list[str]]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(columns):
            raise ValueError(f"{where}: line {line} has {len(row)} cells, not {len(columns)}")
        out.setdefault(row[1], []).append(row)
    return out


def _first_difference(old: list[list[str]], new: list[list[str]],
                      columns: tuple[str, ...]) -> str:
    if len(old) != len(new):
        return f"{len(old)} rows committed, {len(new)} rows new"
    for a, b in zip(old, new):
        for column, x, y in zip(columns, a, b):
            if x != y:
                return f"{columns[4]} {a[4]}, {column}: committed {x!r}, new {y!r}"
    return ""


_NAMES = {COLUMNS: "per-run table's", PICK_COLUMNS: "picks table's"}


def merge_tables(committed: str, new: str, *, committed_name: str = "committed",
                 new_name: str = "new", columns: tuple[str, ...] = COLUMNS) -> Merged:
    """The committed table's text with the new export folded in (see the module docstring);
    ``columns``: the table's header (``export.COLUMNS`` or ``picks.PICK_COLUMNS``)."""
    old_runs, new_runs = _runs(committed, committed_name, columns), _runs(new, new_name, columns)
    studies = {name: sorted({rows[0][0] for rows in runs.values()})
               for name, runs in ((committed_name, old_runs), (new_name, new_runs))}
    if len(set(studies[committed_name]) | set(studies[new_name])) > 1:
        raise ValueError("one table holds one study: " + "; ".join(
            f"{name} has {', '.join(map(repr, st)) or 'no run'}" for name, st in studies.items()))
    shared = sorted(old_runs.keys() & new_runs.keys())
    why = {rid: _first_difference(old_runs[rid], new_runs[rid], columns) for rid in shared}
    differing = tuple(f"{rid}: {w}" for rid, w in why.items() if w)
    agreed = tuple(rid for rid in shared if not why[rid])
    added = tuple(sorted(new_runs.keys() - old_runs.keys()))
    carried = tuple(sorted(old_runs.keys() - new_runs.keys()))
    if differing:
        return Merged("", added, carried, agreed, differing)
    both = {**old_runs, **new_runs}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for rid in sorted(both):   # the export's order: by run id, then step as written
        w.writerows(both[rid])
    return Merged(buf.getvalue(), added, carried, agreed, ())


def merge_table_files(new: str | Path, into: str | Path) -> Merged:
    """Fold the table file ``new`` into the file ``into`` (created when missing); ``into`` is
    rewritten whole, and left as it was when a run differs."""
    new_p, into_p = Path(new), Path(into)
    text = new_p.read_text(encoding="utf-8")
    columns = PICK_COLUMNS if text.split("\n", 1)[0] == ",".join(PICK_COLUMNS) else COLUMNS
    empty = table_text([]) if columns == COLUMNS else picks_text([])
    committed = into_p.read_text(encoding="utf-8") if into_p.exists() else empty
    merged = merge_tables(committed, text, committed_name=str(into_p), new_name=str(new_p),
                          columns=columns)
    if not merged.differing:
        write_table_text(into_p, merged.text)
    return merged
