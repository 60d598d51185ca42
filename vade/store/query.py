"""Read-only access to run histories: one run's file, or a catalog over many.

A catalog is an in-memory DuckDB that attaches every run file read-only and exposes the same
tables (as unions over the files) and the same views as a single run file, so every SQL example
works unchanged on one run or a whole sweep.

Read-only means read-only for the machine, not just for the database: a connection is *sealed*
(external access off, no extension install or autoload, no spill files, configuration locked),
so SQL can read the given databases and nothing else, and write nothing anywhere. The seal
leaves one gap: DuckDB keeps an attached file readable, so ``DETACH`` then ``ATTACH`` without
``READ_ONLY`` would reopen it for writing. :func:`check_select_only` closes it (and gives one
clear message): ``vade sql`` and :func:`query` run queries only, never ATTACH/DETACH/SET/COPY.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from vade.store.schema import TABLES, view_sql

__all__ = ["SEALED", "ReadOnlyError", "check_select_only", "connect", "expand_paths",
           "explain_refusal",
           "open_catalog", "open_readonly", "query", "seal"]

# Order matters: the temp directory can only be changed while external access is still on, and
# the lock comes last. An empty temp directory means a query that does not fit in memory fails
# instead of writing spill files next to the run file (DuckDB's default `<db>.tmp`).
SEALED: tuple[tuple[str, str], ...] = (
    ("temp_directory", "''"),
    ("autoinstall_known_extensions", "false"),
    ("autoload_known_extensions", "false"),
    ("allow_community_extensions", "false"),
    ("enable_external_access", "false"),
    ("lock_configuration", "true"),
)

REFUSED_HINT = ("vade sql is read-only: it reads only the given run databases, writes nothing "
                "anywhere (no COPY/EXPORT, no other files), installs or loads no extensions, and "
                "its settings are locked")


class ReadOnlyError(ValueError):
    """A statement that a sealed, read-only connection will not run."""


def _expand(patterns: Iterable[str | Path]) -> dict[Path, bool]:
    """``{file: named explicitly}`` for paths, directories (every ``*.duckdb`` below) or globs."""
    found: dict[Path, bool] = {}
    patterns = list(patterns)
    for pattern in patterns:
        p = Path(pattern)
        if p.is_dir():
            many = sorted(p.rglob("*.duckdb"))
        elif any(ch in str(pattern) for ch in "*?["):
            many = [Path(x) for x in sorted(glob.glob(str(pattern), recursive=True))]
        elif p.is_file():
            found[p.resolve()] = True
            continue
        else:
            raise FileNotFoundError(f"no run database at {p}")
        for f in many:
            found.setdefault(f.resolve(), False)
    if not found:
        raise FileNotFoundError(f"no *.duckdb files match {[str(x) for x in patterns]}")
    return found


def expand_paths(patterns: Iterable[str | Path]) -> list[Path]:
    """Files named by paths, directories (every ``*.duckdb`` below) or glob patterns."""
    return list(_expand(patterns))


def seal(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Switch off everything that reaches beyond the databases already open, then lock it."""
    for name, value in SEALED:
        con.execute(f"SET {name} = {value}")
    return con


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def open_catalog(paths: Sequence[str | Path], *, memory_limit: str | None = None,
                 skipped: list[Path] | None = None) -> duckdb.DuckDBPyConnection:
    """All given files attached read-only to an in-memory DuckDB, then sealed: each table as a
    union over the files that hold it, and the history views when run files are among them.

    A file found through a directory or glob that another process is writing (a run still
    training) is left out and appended to ``skipped``, so a whole-folder query reads the finished
    runs; a file named explicitly is an error. ``memory_limit`` (DuckDB's syntax, ``4GB``) caps
    the query's memory; with no spill files a query over it fails instead of filling the disk.

    In-memory (not the first file as the main database) because DuckDB caches instances per
    file: a second catalog on the same file would get the first one's locked instance.
    """
    con = duckdb.connect(":memory:")
    if memory_limit is not None:
        try:
            con.execute(f"SET memory_limit = '{memory_limit.replace(chr(39), '')}'")
        except duckdb.Error as exc:
            con.close()
            raise ValueError(f"--memory-limit {memory_limit!r}: "
                             f"{str(exc).splitlines()[0]}") from None
    aliases = []
    for path, explicit in _expand(paths).items():
        alias = f"run_file_{len(aliases)}"
        try:
            con.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS {alias} "
                        "(READ_ONLY)")
        except duckdb.Error as exc:
            busy = "lock" in str(exc).lower()
            if busy and not explicit and skipped is not None:
                skipped.append(path)
                continue
            con.close()
            if not busy:
                raise ValueError(f"cannot open {path}: {str(exc).splitlines()[0]}") from None
            raise ValueError(f"cannot open {path}: another process is writing it (a run or "
                             "evaluation still in progress); query it once that process has "
                             "finished, or leave it out of --db") from None
        aliases.append(alias)
    if not aliases:
        con.close()
        raise ValueError("every run database matched is being written by another process: "
                         + ", ".join(map(str, skipped or [])))
    holders: dict[str, list[str]] = {}  # table -> the files that have it
    for alias in aliases:
        for (table,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = ? "
                "AND schema_name = 'main' ORDER BY table_name", [alias]).fetchall():
            holders.setdefault(table, []).append(alias)
    # Run tables, and any other table a file brings (the data catalog's `samples`, evaluation
    # files' `eval_results`, `initial_difficulty`), so one query can join them.
    for table, sources in sorted(holders.items()):
        union = " UNION ALL BY NAME ".join(f"SELECT * FROM {a}.main.{_quote(table)}"
                                           for a in sources)
        con.execute(f"CREATE TEMP VIEW {_quote(table)} AS {union}")
    if all(table in holders for table in TABLES):
        con.execute(view_sql(temporary=True))
    return seal(con)


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """One run file, read-only and sealed: a write raises instead of changing the history."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no run database at {p}")
    return open_catalog([p])


def connect(paths: Sequence[str | Path], **options: Any) -> duckdb.DuckDBPyConnection:
    """The sealed, read-only catalog over the files the paths name (one file or many);
    ``options`` go to :func:`open_catalog`."""
    return open_catalog(paths, **options)


def check_select_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse, naming it, any statement that is not a query (SELECT, WITH, FROM, VALUES,
    DESCRIBE, SHOW, SUMMARIZE all parse as SELECT). The sealed connection would stop file and
    extension access anyway; this also stops ATTACH/DETACH, SET, temp tables and PRAGMAs, and
    gives one clear message for all of them."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise ValueError(str(exc).splitlines()[0]) from exc
    if not statements:
        raise ValueError("no SQL statement given")
    for st in statements:
        if st.type != duckdb.StatementType.SELECT:
            text = " ".join(st.query.split())
            text = text if len(text) <= 60 else text[:57] + "..."
            raise ReadOnlyError(f"refused {st.type.name} statement `{text}`: {REFUSED_HINT}; "
                                "only queries (SELECT/WITH/FROM/DESCRIBE/SHOW) run")


def explain_refusal(exc: duckdb.Error) -> str:
    """DuckDB's message on one line, with why when the seal refused it.

    DuckDB puts its hints on the lines after the first ('Did you mean "step_summary"?',
    'Candidate bindings: ...'): they are kept, joined; the ``LINE n:`` echo of the query and
    its caret, which only line up on a terminal of their own, are left out."""
    kept = []
    for line in str(exc).splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            kept.append(line.strip())
    first = " ".join(kept)
    if isinstance(exc, duckdb.PermissionException) or "configuration has been locked" in first:
        return f"{first} ({REFUSED_HINT})"
    return first


def query(paths: Sequence[str | Path], sql: str) -> duckdb.DuckDBPyConnection:
    """Execute the query ``sql`` read-only; fetch with ``fetchall()``/``fetchone()``/
    ``fetchnumpy()``. Statements other than queries raise :class:`ReadOnlyError`."""
    con = connect(paths)
    check_select_only(con, sql)
    return con.execute(sql)
