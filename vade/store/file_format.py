"""One way to open a DuckDB file for writing, so every file the project writes is readable by
DuckDB 1.1 and newer, not only by 2.x.

DuckDB 2.0 writes its own storage format by default, which DuckDB 1.x (the command-line shell
most machines have) refuses to open. Writing with ``storage_compatibility_version = 'v1.0.0'``
keeps run histories, data catalogs, difficulty, evaluation and simulator files readable by
DuckDB 1.1.0 and newer: checked by reading every table and view of each kind with 1.1.0, 1.1.3
and 1.5.6 (same rows as 2.0.0). DuckDB 1.0.0 itself cannot read tables with a PRIMARY KEY that
2.0 writes this way (its index metadata), so 1.1.0 is the floor. The features the format lacks
(newer compressions) do not matter at these sizes.

The format is fixed when a file is created: an existing file keeps the format it was created
with, so a run resumed on a file that an older checkout wrote in 2.0's format stays unreadable
by 1.x (recreate it, or read it with DuckDB 2.x).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

__all__ = ["STORAGE_VERSION", "connect_for_reading", "connect_for_writing", "storage_version"]

STORAGE_VERSION = "v1.0.0"


def _refuse(path: str | Path, exc: duckdb.Error) -> ValueError:
    """One line naming ``path``: held by another process, or not a readable database."""
    first = str(exc).strip().splitlines()[0]
    if "lock" in first.lower():
        return ValueError(f"{path} is open in another process ({first.split(': ', 1)[-1]}): "
                          "let it finish or close it (a vade sql query, a DuckDB shell), "
                          "then rerun")
    return ValueError(f"{path} is not a readable DuckDB database ({first}): move it away "
                      "and rerun the step that writes it")


def connect_for_writing(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open (or create) the database file ``path`` read-write in the v1.0.0 storage format.

    A file another process holds (a training, ``vade sql``, an open DuckDB shell) or a file that
    is not a readable DuckDB database is a ValueError naming the file and what to do, not
    DuckDB's traceback."""
    try:
        return duckdb.connect(str(path),
                              config={"storage_compatibility_version": STORAGE_VERSION})
    except duckdb.Error as exc:
        raise _refuse(path, exc) from None


def connect_for_reading(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open the existing database file ``path`` read-only (nothing in it changes), with the
    same one-line errors as :func:`connect_for_writing`."""
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise _refuse(path, exc) from None


def storage_version(con: duckdb.DuckDBPyConnection) -> str:
    """The storage format of ``con``'s main database file, as DuckDB reports it (``v1.0.0+``)."""
    row = con.execute("SELECT tags['storage_version'] FROM duckdb_databases() "
                      "WHERE database_name = current_database()").fetchone()
    if row is None or row[0] is None:
        raise ValueError("the connection's main database reports no storage version "
                         "(in-memory database?)")
    return str(row[0])
