"""``vade sql``: ask a run's (or many runs') sampler history a question in SQL, read-only.

Read-only for the machine too: only queries run, on a sealed connection that reads the given
databases and nothing else and writes nothing (see :mod:`vade.store.query`). ``-o`` is the one
file written, by this command, not by the SQL; its extension picks the format (``.csv``,
``.json``). A query is bounded, and so is what it returns (:mod:`vade.store.sql_output`):
``--timeout`` seconds and ``--memory-limit`` (DuckDB's own cap, no spill files, and the whole
process's growth while the rows are written) stop it with a message instead of running until
killed; csv/json output is streamed in batches and capped at ``--max-rows`` rows (default
``ROW_CAP``; 0 lifts the cap on purpose), with a message and exit status 1 when rows were left
out. A whole folder of runs skips the runs still being written and names them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import IO

import duckdb

from vade.store import sql_output
from vade.store.query import check_select_only, connect, explain_refusal
from vade.store.sql_output import BATCH_ROWS, Stopped, Watch, memory_cap, parse_size

FORMATS = {".csv": "csv", ".json": "json"}
TABLE_ROWS = 40
ROW_CAP = 1_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="SQL text, or @FILE to read it from a file")
    parser.add_argument("--db", nargs="+", action="extend", required=True, metavar="PATH",
                        help="run database(s): files, directories or globs (several = a catalog)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default=None,
                        help="default: table, or what -o's extension says")
    parser.add_argument("--max-rows", type=int, default=None, metavar="N",
                        help=f"rows shown in table format (default {TABLE_ROWS}) or written as "
                        f"csv/json (default {ROW_CAP:,}; 0 = no cap)")
    parser.add_argument("-o", "--output", help="write csv/json here (.csv or .json) instead of "
                        "stdout")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="stop a query that runs longer (default 120)")
    parser.add_argument("--memory-limit", default="4GB", metavar="SIZE",
                        help="DuckDB memory cap, e.g. 500MB, 8GB (default 4GB)")


def output_format(fmt: str | None, output: str | None) -> str:
    """The format: as given, else implied by ``-o``'s extension; a mismatch is an error."""
    if output is None:
        return fmt or "table"
    implied = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        if implied is None:
            raise ValueError(f"-o {output}: give a .csv or .json file, or --format csv|json")
        return implied
    if fmt == "table":
        raise ValueError("-o writes csv or json; the table format prints to the terminal")
    if implied is not None and implied != fmt:
        raise ValueError(f"-o {output} says {implied} but --format is {fmt}")
    return fmt


def _sink(output: str | None) -> IO[bytes]:
    return open(output, "wb") if output else sys.stdout.buffer  # closed by run


def run(args: argparse.Namespace) -> int:
    fmt = output_format(args.format, args.output)
    if not args.timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {args.timeout}")
    if args.max_rows is not None and args.max_rows < 0:
        raise ValueError(f"--max-rows must be >= 0 (0 = no cap), got {args.max_rows}")
    budget = parse_size(args.memory_limit)
    sql = args.query
    if sql.startswith("@"):
        with open(sql[1:], encoding="utf-8") as fh:
            sql = fh.read()
    skipped: list[Path] = []
    con = connect(args.db, memory_limit=args.memory_limit, skipped=skipped)
    for path in skipped:
        print(f"vade sql: skipped {path}: another process is writing it (a run in progress)",
              file=sys.stderr)
    too_long = (f"the query ran longer than --timeout {args.timeout:g} s and was stopped "
                "(raise --timeout, or narrow the query)")
    too_big = (f"the query and its output grew past --memory-limit {args.memory_limit} and were "
               f"stopped (raise --memory-limit, now {args.memory_limit}, or narrow the query)")

    def stuck(reason: str) -> None:
        """The query ignored the interrupt: say so and end the process (``Watch``)."""
        print(f"vade sql: error: {too_big if reason == 'memory' else too_long}", file=sys.stderr,
              flush=True)
        if args.output:
            Path(args.output).unlink(missing_ok=True)   # a partial file is not a result
        os._exit(2)

    watch = Watch(con, args.timeout, budget, on_stuck=stuck)
    try:
        with watch, memory_cap(budget):
            check_select_only(con, sql)
            rel = con.sql(sql)
            if rel is None:
                raise ValueError("the statement returned no rows (vade sql is read-only)")
            if fmt == "table":
                rel.show(max_rows=args.max_rows or TABLE_ROWS, max_width=200)
                return 0
            cap = ROW_CAP if args.max_rows is None else args.max_rows
            reader = rel.to_arrow_reader(BATCH_ROWS)  # streamed: one batch in memory at a time
            sink = _sink(args.output)
            try:
                written, more = sql_output.write_rows(reader, fmt, sink, cap, watch)
            finally:
                sink.flush()
                if args.output:
                    sink.close()
        if more:
            print(f"vade sql: stopped after {written:,} rows (--max-rows {cap}): the result has "
                  "more; raise --max-rows (0 = no cap) or narrow the query", file=sys.stderr)
            return 1
    except (duckdb.InterruptException, Stopped):
        raise ValueError(too_big if watch.reason == "memory" else too_long) from None
    except MemoryError:
        raise ValueError(too_big) from None
    except duckdb.OutOfMemoryException as exc:
        raise ValueError(f"{str(exc).splitlines()[0]} (raise --memory-limit, now "
                         f"{args.memory_limit}, or narrow the query)") from None
    except (duckdb.Error, OSError) as exc:
        # An interrupt that lands while pyarrow pulls a batch from DuckDB's stream comes back
        # as pyarrow's OSError ("INTERRUPT Error: Interrupted!"), not DuckDB's exception.
        if watch.reason is not None:
            raise ValueError(too_big if watch.reason == "memory" else too_long) from None
        if isinstance(exc, OSError):
            raise  # a real I/O error (a full disk, a closed pipe): not ours to rename
        raise ValueError(explain_refusal(exc)) from exc
    finally:
        con.close()
    return 0
