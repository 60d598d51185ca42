"""``vade sql``: ask a run's (or many runs') sampler history a question in SQL, read-only.

Read-only for the machine too: only queries run, on a sealed connection that reads the given
databases and nothing else and writes nothing (see :mod:`vade.store.query`). ``-o`` is the one
file written, by this command, not by the SQL.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="SQL text, or @FILE to read it from a file")
    parser.add_argument("--db", nargs="+", action="extend", required=True, metavar="PATH",
                        help="run database(s): files, directories or globs (several = a catalog)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--max-rows", type=int, default=40,
                        help="rows shown in table format (csv/json print all)")
    parser.add_argument("-o", "--output", help="write csv/json here instead of stdout")


def run(args: argparse.Namespace) -> int:
    import duckdb

    from vade.store.query import check_select_only, connect, explain_refusal

    sql = args.query
    if sql.startswith("@"):
        with open(sql[1:], encoding="utf-8") as fh:
            sql = fh.read()
    con = connect(args.db)
    try:
        check_select_only(con, sql)
        rel = con.sql(sql)
        if rel is None:
            raise ValueError("the statement returned no rows (vade sql is read-only)")
        if args.format == "table":
            rel.show(max_rows=args.max_rows, max_width=200)
            return 0
        table = rel.to_arrow_table()
        if args.format == "csv":
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
    except duckdb.Error as exc:
        raise ValueError(explain_refusal(exc)) from exc
    finally:
        con.close()
    return 0
