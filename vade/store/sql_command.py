"""``vade sql``: ask a run's (or many runs') sampler history a question in SQL, read-only.

Read-only for the machine too: only queries run, on a sealed connection that reads the given
databases and nothing else and writes nothing (see :mod:`vade.store.query`). ``-o`` is the one
file written, by this command, not by the SQL; its extension picks the format (``.csv``,
``.json``). A query is bounded: ``--timeout`` seconds (then interrupted) and ``--memory-limit``
(DuckDB's own cap; no spill files), so a runaway join stops with a message instead of running
until killed. A whole folder of runs skips the runs still being written and names them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FORMATS = {".csv": "csv", ".json": "json"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="SQL text, or @FILE to read it from a file")
    parser.add_argument("--db", nargs="+", action="extend", required=True, metavar="PATH",
                        help="run database(s): files, directories or globs (several = a catalog)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default=None,
                        help="default: table, or what -o's extension says")
    parser.add_argument("--max-rows", type=int, default=40,
                        help="rows shown in table format (csv/json print all)")
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


def run(args: argparse.Namespace) -> int:
    import threading

    import duckdb

    from vade.store.query import check_select_only, connect, explain_refusal

    fmt = output_format(args.format, args.output)
    if not args.timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {args.timeout}")
    sql = args.query
    if sql.startswith("@"):
        with open(sql[1:], encoding="utf-8") as fh:
            sql = fh.read()
    skipped: list[Path] = []
    con = connect(args.db, memory_limit=args.memory_limit, skipped=skipped)
    for path in skipped:
        print(f"vade sql: skipped {path}: another process is writing it (a run in progress)",
              file=sys.stderr)
    timer = threading.Timer(args.timeout, con.interrupt)
    timer.start()
    try:
        check_select_only(con, sql)
        rel = con.sql(sql)
        if rel is None:
            raise ValueError("the statement returned no rows (vade sql is read-only)")
        if fmt == "table":
            rel.show(max_rows=args.max_rows, max_width=200)
            return 0
        table = rel.to_arrow_table()
        if fmt == "csv":
            import pyarrow.csv as pacsv
            sink = args.output or sys.stdout.buffer
            pacsv.write_csv(table, sink)
        else:
            import json
            text = json.dumps(table.to_pylist(), default=str, indent=1)
            if args.output:
                with open(args.output, "w", encoding="utf-8") as fh:
                    fh.write(text + "\n")
            else:
                print(text)
    except duckdb.InterruptException:
        raise ValueError(f"the query ran longer than --timeout {args.timeout:g} s and was "
                         "stopped (raise --timeout, or narrow the query)") from None
    except duckdb.OutOfMemoryException as exc:
        raise ValueError(f"{str(exc).splitlines()[0]} (raise --memory-limit, now "
                         f"{args.memory_limit}, or narrow the query)") from None
    except duckdb.Error as exc:
        raise ValueError(explain_refusal(exc)) from exc
    finally:
        timer.cancel()
        con.close()
    return 0
