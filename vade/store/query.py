"""Read-only access to run histories: one run's file, or a catalog over many.

A catalog is an in-memory DuckDB that attaches every run file read-only and exposes the same
tables (as unions over the files) and the same views as a single run file, so every SQL example
works unchanged on one run or a whole sweep.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from pathlib import Path

import duckdb

from vade.store.schema import TABLES, view_sql

__all__ = ["connect", "expand_paths", "open_catalog", "open_readonly", "query"]


def expand_paths(patterns: Iterable[str | Path]) -> list[Path]:
    """Files named by paths, directories (every ``*.duckdb`` below) or glob patterns."""
    found: list[Path] = []
    for pattern in patterns:
        p = Path(pattern)
        if p.is_dir():
            found.extend(sorted(p.rglob("*.duckdb")))
        elif any(ch in str(pattern) for ch in "*?["):
            found.extend(Path(x) for x in sorted(glob.glob(str(pattern), recursive=True)))
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"no run database at {p}")
    unique = list(dict.fromkeys(f.resolve() for f in found))
    if not unique:
        raise FileNotFoundError(f"no *.duckdb files match {[str(x) for x in patterns]}")
    return unique


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """One run file, read-only: a write raises instead of changing the history."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no run database at {p}")
    return duckdb.connect(str(p), read_only=True)


def open_catalog(paths: Sequence[str | Path]) -> duckdb.DuckDBPyConnection:
    """All given files attached read-only: each table as a union over the files that hold it, and
    the history views when run files are among them."""
    con = duckdb.connect(":memory:")
    aliases = []
    for i, path in enumerate(expand_paths(paths)):
        alias = f"run_file_{i}"
        con.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS {alias} (READ_ONLY)")
        aliases.append(alias)
    holders: dict[str, list[str]] = {}  # table -> the files that have it
    for alias in aliases:
        for (table,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = ? "
                "AND schema_name = 'main' ORDER BY table_name", [alias]).fetchall():
            holders.setdefault(table, []).append(alias)
    # Run tables, and any other table a file brings (the data catalog's `samples`, evaluation
    # files' `eval_results`, `initial_difficulty`), so one query can join them.
    for table, sources in sorted(holders.items()):
        union = " UNION ALL BY NAME ".join(f"SELECT * FROM {a}.{table}" for a in sources)
        con.execute(f'CREATE TEMP VIEW "{table}" AS {union}')
    if all(table in holders for table in TABLES):
        con.execute(view_sql(temporary=True))
    return con


def connect(paths: Sequence[str | Path]) -> duckdb.DuckDBPyConnection:
    """One file opened read-only, or a catalog when the paths name several."""
    files = expand_paths(paths)
    return open_readonly(files[0]) if len(files) == 1 else open_catalog(files)


def query(paths: Sequence[str | Path], sql: str) -> duckdb.DuckDBPyConnection:
    """Execute ``sql`` read-only; fetch with ``fetchall()``/``fetchone()``/``fetchnumpy()``."""
    return connect(paths).execute(sql)
