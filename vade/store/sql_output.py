"""What ``vade sql`` returns, bounded: rows streamed out in batches, a row cap, and a watch on
time and memory that covers the conversion to CSV/JSON, not only DuckDB's own work.

Why: DuckDB's ``memory_limit`` and an interrupt bound the query, but turning a whole result
into an Arrow table, then Python objects, then one JSON string happens outside DuckDB. A
``SELECT * FROM range(3000000)`` as JSON under ``--timeout 1 --memory-limit 100MB`` ran for
7 s at 1.9 GB. Here the result is read ``BATCH_ROWS`` rows at a time (DuckDB's streaming
record-batch reader) and each batch is written before the next is fetched, so memory is one
batch, not the result; at most ``--max-rows`` rows are written; and a watch thread samples the
process's resident memory and the clock, interrupting DuckDB (and stopping the writer between
batches) once either passes its limit. The memory limit is one budget for the whole command:
the process may grow by at most ``--memory-limit`` over what it held when the query started.
One DuckDB function call can allocate far more before it looks at an interrupt
(``length(repeat('x', 1500000000))`` took 3 GB), so the command also lowers the process's
``RLIMIT_DATA`` to what it holds plus the limit plus ``SLACK_BYTES`` (thread stacks, allocator
arenas) for the duration of the query (``memory_cap``): such an allocation then fails inside
DuckDB as its own out-of-memory error.
"""

from __future__ import annotations

import json
import os
import re
import resource
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import pyarrow.csv as pacsv

__all__ = ["BATCH_ROWS", "SLACK_BYTES", "Watch", "memory_cap", "parse_size", "write_rows"]

BATCH_ROWS = 8192
SLACK_BYTES = 256 * 2**20
_POLL_S = 0.02
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes of a DuckDB-style size (``500MB`` = 500 * 10^6, ``1GiB`` = 2^30)."""
    m = _SIZE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise ValueError(f"--memory-limit {text!r}: give a size such as 500MB or 8GB")
    return int(float(m.group(1)) * _UNITS[unit])


def _rss() -> int | None:
    """This process's resident memory in bytes (Linux ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _data_bytes() -> int | None:
    """The process's data segment size (``VmData``: what ``RLIMIT_DATA`` counts), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


@contextmanager
def memory_cap(budget: int) -> Iterator[None]:
    """Lower ``RLIMIT_DATA`` to the current data size + ``budget`` + ``SLACK_BYTES`` inside the
    block, and restore it after (the command may run inside a longer-lived process)."""
    now = _data_bytes()
    old = resource.getrlimit(resource.RLIMIT_DATA)
    cap = None if now is None else now + budget + SLACK_BYTES
    if cap is not None and (old[0] == resource.RLIM_INFINITY or cap < old[0]):
        resource.setrlimit(resource.RLIMIT_DATA, (cap, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, old)


class Watch:
    """Interrupt ``con`` once ``timeout_s`` has passed or resident memory has grown by more than
    ``memory_bytes`` since the watch started; ``reason`` says which ("timeout" / "memory").

    Some work does not look at DuckDB's interrupt flag (one huge value: ``list_sort`` of a
    10-million-element list ran 15.9 s past ``--timeout 5``, issue 49 item 9), and converting a
    result to Python cannot be interrupted at all. So if the watched work has not ended
    ``GRACE_S`` after the interrupt, ``on_stuck(reason)`` is called from the watch's thread
    (``vade sql`` prints its message and ends the process there)."""

    GRACE_S = 2.0

    def __init__(self, con: Any, timeout_s: float, memory_bytes: int,
                 on_stuck: Callable[[str], None] | None = None) -> None:
        self.con = con
        self.on_stuck = on_stuck
        self.deadline = time.monotonic() + timeout_s
        base = _rss()
        self.ceiling = None if base is None else base + memory_bytes
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vade-sql-watch", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(_POLL_S):
            rss = _rss()
            if self.ceiling is not None and rss is not None and rss > self.ceiling:
                self.reason = "memory"
            elif time.monotonic() > self.deadline:
                self.reason = "timeout"
            if self.reason is not None:
                self.con.interrupt()
                if not self._stop.wait(self.GRACE_S) and self.on_stuck is not None:
                    self.on_stuck(self.reason)
                return

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Stopped(Exception):
    """The watch stopped the output between batches (``Watch.reason``)."""


def _check(watch: Watch) -> None:
    if watch.reason is not None:
        raise Stopped(watch.reason)


def write_rows(reader: Any, fmt: str, sink: IO[bytes], cap: int, watch: Watch) -> tuple[int, bool]:
    """Write the batches of ``reader`` (a ``pyarrow.RecordBatchReader``) to ``sink`` as ``fmt``
    (``csv`` or ``json``, a JSON array with one row per line), at most ``cap`` rows (0: no cap).
    Returns the rows written and whether more were left unwritten because of the cap. The
    output is complete and well-formed up to where it stopped."""
    written, more = 0, False
    csv_writer = pacsv.CSVWriter(sink, reader.schema) if fmt == "csv" else None
    if fmt == "json":
        sink.write(b"[")
    try:
        for batch in reader:
            _check(watch)
            if cap and written + batch.num_rows > cap:
                batch, more = batch.slice(0, cap - written), True
            if csv_writer is not None:
                csv_writer.write_batch(batch)
            else:
                lines = [json.dumps(row, default=str) for row in batch.to_pylist()]
                if lines:
                    sink.write(((",\n" if written else "\n") + ",\n".join(lines)).encode())
            written += batch.num_rows
            _check(watch)
            if more:
                break
    finally:
        if csv_writer is not None:
            csv_writer.close()
        elif fmt == "json":
            sink.write(b"\n]\n")
    return written, more
