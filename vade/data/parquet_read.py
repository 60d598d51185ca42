"""Reading a parquet file the pipeline did not just write: every failure names the file.

pyarrow's errors do not: a truncated file gives "Parquet magic bytes not found in footer" and
garbled pages a 30-line ``OSError: ZSTD decompression failed``. Here each is one ValueError
line naming the path and what to do (the CLI prints it and exits 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["num_rows", "read_table"]


def _refuse(path: Path, exc: Exception) -> ValueError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ValueError(f"{path} cannot be read as parquet ({first}): the file is truncated or "
                      "corrupt; rebuild it (rerun the rule that writes it)")


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"parquet file not found: {path}")
    return path


def read_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """``pyarrow.parquet.read_table`` with the file named in every error."""
    path = _existing(path)
    try:
        return pq.read_table(path, columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError) as exc:
        raise _refuse(path, exc) from None


def num_rows(path: str | Path) -> int:
    """Rows of a parquet file from its footer (cheap: no data is read)."""
    path = _existing(path)
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise _refuse(path, exc) from None
