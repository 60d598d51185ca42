"""Evaluation results in DuckDB: one file per evaluated checkpoint, one tidy row per repeat.

Why one file per checkpoint: evaluation jobs run in parallel (one SLURM job per checkpoint) and
DuckDB allows one writer per file, exactly like the run histories. A report attaches them all
read-only (``open_eval_catalog``) and sees one ``eval_results`` table.

``eval_results`` holds one row per (run, benchmark, repeat): the score of one seeded sampling
pass, in percent (0-100, the paper's unit). average@k is never stored, only derived (view
``eval_average``), so it cannot disagree with its repeats. The base model's rows use run id
``<model>-base``, method ``base`` and NULL algorithm and seed. A judged benchmark's row names its
judge (``judge``); a benchmark's companion numbers (another prompt setting, another scorer) ride
in ``extras`` as JSON, beside the score and never a column of the tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import duckdb

from vade.store.file_format import connect_for_writing

__all__ = ["CREATE_TABLE", "EvalRow", "average_at_k", "eval_files", "merge_repeats",
           "open_eval_catalog", "read_eval_rows", "write_eval_results"]

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS eval_results (
    run_id      VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    algorithm   VARCHAR,
    method      VARCHAR NOT NULL,
    seed        BIGINT,
    benchmark   VARCHAR NOT NULL,
    repeat      INTEGER NOT NULL,
    seed_eval   BIGINT  NOT NULL,
    score       DOUBLE,
    n           BIGINT  NOT NULL,
    checkpoint  VARCHAR NOT NULL,
    task        VARCHAR NOT NULL,
    metric      VARCHAR,
    judge       VARCHAR,
    extras      VARCHAR,
    created_at  TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, benchmark, repeat)
);
"""

# average@k: the mean over a checkpoint's k seeded repeats of one benchmark.
CREATE_VIEW = """
CREATE OR REPLACE {temp} VIEW eval_average AS
SELECT run_id, any_value(model) AS model, any_value(algorithm) AS algorithm,
       any_value(method) AS method, any_value(seed) AS seed, benchmark,
       any_value(task) AS task, any_value(metric) AS metric, any_value(judge) AS judge,
       any_value(checkpoint) AS checkpoint,
       CAST(count(score) AS INTEGER) AS k, avg(score) AS score, stddev_samp(score) AS score_std,
       min(n) AS n, list(seed_eval ORDER BY repeat) AS seeds_eval
FROM eval_results
GROUP BY run_id, benchmark;
"""


@dataclass(frozen=True)
class EvalRow:
    """One repeat of one benchmark on one checkpoint."""

    run_id: str
    model: str
    algorithm: str | None
    method: str
    seed: int | None
    benchmark: str
    repeat: int
    seed_eval: int
    score: float | None   # percent; None when the task produced no score
    n: int                # items scored
    checkpoint: str
    task: str
    metric: str | None = None
    judge: str | None = None   # the judge model of a judged benchmark (printed beside it)
    extras: str | None = None  # JSON: companion numbers (vade.eval.runner.companion_scores)


def write_eval_results(path: str | Path, rows: Sequence[EvalRow]) -> Path:
    """Write ``rows`` as the whole content of ``path`` (replaced atomically, never half-written)."""
    if not rows:
        raise ValueError("no evaluation rows to write")
    keys = [(r.run_id, r.benchmark, r.repeat) for r in rows]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate (run_id, benchmark, repeat) in evaluation rows")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    cols = list(asdict(rows[0]))
    try:
        con = connect_for_writing(tmp)
        try:
            con.execute(CREATE_TABLE)
            con.execute(CREATE_VIEW.format(temp=""))
            con.executemany(
                f"INSERT INTO eval_results ({', '.join(cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})",
                [list(asdict(r).values()) for r in rows])
        finally:
            con.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return out


def read_eval_rows(path: str | Path) -> list[EvalRow]:
    """Every row of one evaluation file, ordered by benchmark and repeat."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        have = {r[0] for r in con.execute("DESCRIBE eval_results").fetchall()}
        cols = [f.name if f.name in have else f"NULL AS {f.name}" for f in fields(EvalRow)]
        got = con.execute(f"SELECT {', '.join(cols)} FROM eval_results "
                          "ORDER BY benchmark, repeat").fetchall()
    finally:
        con.close()
    return [EvalRow(*row) for row in got]


def merge_repeats(paths: Sequence[str | Path], run_id: str, repeats: int) -> list[EvalRow]:
    """The rows of the per-repeat files of one checkpoint, checked complete: each of repeats
    0..k-1 present exactly once, with the same benchmarks, all of run ``run_id``. An error
    names the file or the missing repeat (a partial average@k is never written)."""
    rows: list[EvalRow] = []
    by_repeat: dict[int, set[str]] = {}
    file_of: dict[int, str] = {}
    for path in map(str, paths):
        got = read_eval_rows(path)
        if not got:
            raise ValueError(f"{path}: no evaluation rows")
        for r in got:
            if r.run_id != run_id:
                raise ValueError(f"{path}: rows of run {r.run_id}, not {run_id}")
            if file_of.setdefault(r.repeat, path) != path:
                raise ValueError(f"{path}: repeat {r.repeat} is also in {file_of[r.repeat]}")
            by_repeat.setdefault(r.repeat, set()).add(r.benchmark)
        rows.extend(got)
    found = sorted(by_repeat)
    if found != list(range(repeats)):
        missing = sorted(set(range(repeats)) - set(found))
        raise ValueError(f"run {run_id}: repeats {found} given, evaluate.repeats is {repeats}"
                         + (f" (missing {missing})" if missing else ""))
    benches = {frozenset(by_repeat[k]) for k in found}
    if len(benches) != 1:
        raise ValueError(f"run {run_id}: the repeats scored different benchmarks "
                         f"{sorted(map(sorted, benches))}")
    return rows


def eval_files(paths: Iterable[str | Path]) -> list[Path]:
    """Evaluation files named by paths or directories (every ``*.duckdb`` directly inside)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(x for x in p.glob("*.duckdb") if not x.name.startswith(".")))
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"no evaluation results at {p}")
    return list(dict.fromkeys(f.resolve() for f in found))


def open_eval_catalog(paths: Iterable[str | Path]) -> duckdb.DuckDBPyConnection:
    """All evaluation files attached read-only: table ``eval_results`` and view ``eval_average``.

    With no files the table exists and is empty, so a report over runs without evaluations
    shows every cell as missing instead of failing.
    """
    con = duckdb.connect(":memory:")
    files = eval_files(paths)
    # an empty table of today's columns first, so older files (no judge, extras) still union
    con.execute(CREATE_TABLE.replace("CREATE TABLE IF NOT EXISTS eval_results",
                                     "CREATE TEMP TABLE eval_columns"))
    aliases = []
    for i, f in enumerate(files):
        con.execute(f"ATTACH '{str(f).replace(chr(39), chr(39) * 2)}' AS eval_file_{i} "
                    "(READ_ONLY)")
        aliases.append(f"eval_file_{i}")
    union = " UNION ALL BY NAME ".join(["SELECT * FROM eval_columns",
                                        *(f"SELECT * FROM {a}.eval_results" for a in aliases)])
    con.execute(f"CREATE TEMP VIEW eval_results AS {union}")
    con.execute(CREATE_VIEW.format(temp="TEMP"))
    return con


def average_at_k(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Rows of ``eval_average`` as dicts, ordered by run and benchmark."""
    cur = con.execute("SELECT * FROM eval_average ORDER BY run_id, benchmark")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]
