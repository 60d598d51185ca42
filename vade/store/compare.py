"""Are two sets of run histories the same runs? The check behind "no behaviour change".

A refactor of the trainers or the sampler must leave every decision and every logged number as it
was; timings, timestamps and the code version necessarily move. ``compare_histories(before,
after)`` opens each run folder's ``history.duckdb`` in both trees read-only and compares every
table row by row with those columns and the ``timing_s/*`` metrics left out.

    python -m vade.store.compare BEFORE_RUNS AFTER_RUNS   # exit status 1 when anything differs
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

__all__ = ["IGNORED_COLUMNS", "compare_histories"]

# what a rerun of the same code on the same inputs also changes
IGNORED_COLUMNS = frozenset({"sampler_seconds", "code_version", "started_at", "logged_at"})
IGNORED_METRICS = ("timing_s/", "vade/sampler_seconds")


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    cols = [c for (c,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "ORDER BY ordinal_position", [table]).fetchall() if c not in IGNORED_COLUMNS]
    sql = f'SELECT {", ".join(cols)} FROM "{table}"'
    if table == "metrics":
        sql += " WHERE " + " AND ".join(f"name NOT LIKE '{p}%'" for p in IGNORED_METRICS)
    return con.execute(sql + " ORDER BY ALL").fetchall()


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [t for (t,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "ORDER BY table_name").fetchall()]


def compare_histories(before: Path, after: Path) -> dict[str, dict[str, str]]:
    """run -> table -> ``"same (n rows)"`` or what differs; a run or table missing on one side
    is a difference."""
    out: dict[str, dict[str, str]] = {}
    runs = sorted({p.parent.name for root in (before, after)
                   for p in Path(root).glob("*/history.duckdb")})
    for run in runs:
        paths = [Path(root) / run / "history.duckdb" for root in (before, after)]
        if not all(p.is_file() for p in paths):
            out[run] = {"*": "missing in " + ("after" if paths[0].is_file() else "before")}
            continue
        a, b = (duckdb.connect(str(p), read_only=True) for p in paths)
        try:
            result = {}
            for table in sorted(set(_tables(a)) | set(_tables(b))):
                if table not in _tables(a) or table not in _tables(b):
                    result[table] = "table missing on one side"
                    continue
                ra, rb = _rows(a, table), _rows(b, table)
                result[table] = (f"same ({len(ra)} rows)" if ra == rb else
                                 f"DIFFERENT ({len(ra)} vs {len(rb)} rows, "
                                 f"{len(set(ra) ^ set(rb))} rows on one side only)")
            out[run] = result
        finally:
            a.close()
            b.close()
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    result = compare_histories(Path(args[0]), Path(args[1]))
    same = bool(result)
    for run, tables in result.items():
        print(run, " ".join(f"{t}: {v}" for t, v in tables.items()))
        same &= all(v.startswith("same") for v in tables.values())
    print("IDENTICAL" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
