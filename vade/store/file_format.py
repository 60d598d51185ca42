"""One way to open a DuckDB file for writing, so every file the project writes is readable by
DuckDB 1.x as well as 2.x.

DuckDB 2.0 writes its own storage format by default, which DuckDB 1.x (the command-line shell
most machines have) refuses to open. Writing with ``storage_compatibility_version = 'v1.0.0'``
keeps run histories, data catalogs, difficulty and evaluation files readable by every DuckDB from
1.0 on; the features that format lacks (newer compressions) do not matter at these sizes.

The format is fixed when a file is created: an existing file keeps the format it was created
with, so a run resumed on a file that an older checkout wrote in 2.0's format stays unreadable
by 1.x (recreate it, or read it with DuckDB 2.x).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

__all__ = ["STORAGE_VERSION", "connect_for_writing", "storage_version"]

STORAGE_VERSION = "v1.0.0"


def connect_for_writing(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open (or create) the database file ``path`` read-write in the v1.0.0 storage format."""
    return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})


def storage_version(con: duckdb.DuckDBPyConnection) -> str:
    """The storage format of ``con``'s main database file, as DuckDB reports it (``v1.0.0+``)."""
    row = con.execute("SELECT tags['storage_version'] FROM duckdb_databases() "
                      "WHERE database_name = current_database()").fetchone()
    if row is None or row[0] is None:
        raise ValueError("the connection's main database reports no storage version "
                         "(in-memory database?)")
    return str(row[0])
