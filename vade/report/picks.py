"""What each run trained on, by third of its steps: the committed table behind statements about
how a sampler spends its batch (``docs/data/<study>/picks.csv``).

Why a second table: ``runs.csv`` holds what the pre-registered estimators read (validation,
rollouts, effective ratio). Why a method wins or loses is a different question: does it spend
its batch on groups that teach nothing (all right, all wrong), and does it keep coming back to
a few items while others are never seen? A validation gap with 89 of 480 items never trained on
reads differently from one with every item seen. Those answers live in the run histories
(``events``: one row per trained group), which are not committed, so this table keeps them,
small enough to commit and folded in across sittings like ``runs.csv``
(``vade.report.table_merge``).

Columns (one row per run and part; part 0 = the whole run, parts 1-3 = thirds of its steps,
split as ``vade.report.regime.trajectory`` splits them):

* ``study, run_id, method, seed, part, first_step, last_step``;
* ``groups``: the groups the sampler observed (rows of ``events``): the trained groups, except
  at a DAPO step that found none informative before its rollout cap, where ``events`` holds the
  groups generated (all right or all wrong, so they show in the shares below);
* ``all_wrong``, ``all_right``: their shares with no right or no wrong rollout;
* ``pass_rate``: their mean share of right rollouts;
* ``observed_items``: how many pool items are in at least one observed group of the part;
* ``informative_items``: how many are in at least one group with a right and a wrong rollout
  (a non-zero advantage: the only groups a gradient comes from). The same count for every
  method: for DAPO and GRESO, whose trained groups are all informative, it is the items trained
  on, without the generated groups a step that found none informative logs;
* ``pool_items``: the pool's size (``runs.n_samples``), so never learned from = pool -
  informative in part 0.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import duckdb

from vade.report.collect import collect
from vade.report.export import table_text, write_table_text
from vade.report.stats import mean_interval

__all__ = ["PICK_COLUMNS", "pick_rows", "picks_section", "picks_text", "read_picks", "write_picks"]

PICK_COLUMNS = ("study", "run_id", "method", "seed", "part", "first_step", "last_step", "groups",
                "all_wrong", "all_right", "pass_rate", "observed_items", "informative_items",
                "pool_items")
PARTS = 3

_BY_PART = """
SELECT {part} AS part, min(step), max(step), count(*), avg((correct = 0)::INT),
       avg((correct = rollouts)::INT), avg(correct / rollouts), count(DISTINCT sample_id),
       count(DISTINCT sample_id) FILTER (WHERE correct > 0 AND correct < rollouts)
FROM events WHERE run_id = ? AND step >= 1 GROUP BY ALL ORDER BY part
"""


def pick_rows(runs: Sequence[str | Path], study: str) -> list[dict[str, object]]:
    """One dict per (complete training run, part), sorted by run id and part."""
    inputs = collect(runs=runs, evals=[], expected=[], metric_names=[])
    rows: list[dict[str, object]] = []
    for rid in sorted(inputs.runs):
        run = inputs.runs[rid]
        if run.key.method == "base" or run.status != "complete" or run.last_step < PARTS:
            continue
        last = run.last_step
        part = f"least({PARTS}, greatest(1, ceil(step * {PARTS} / {last}))::INT)"
        con = duckdb.connect(run.path, read_only=True)
        try:
            got = (con.execute(_BY_PART.format(part="0"), [rid]).fetchall()
                   + con.execute(_BY_PART.format(part=part), [rid]).fetchall())
        finally:
            con.close()
        for p, first, end, groups, wrong, right, rate, observed, informative in got:
            rows.append({"study": study, "run_id": rid, "method": run.key.method,
                         "seed": run.key.seed, "part": int(p), "first_step": int(first),
                         "last_step": int(end), "groups": int(groups), "all_wrong": float(wrong),
                         "all_right": float(right), "pass_rate": float(rate),
                         "observed_items": int(observed),
                         "informative_items": int(informative),
                         "pool_items": int(run.n_samples)})
    return rows


def picks_text(rows: Sequence[Mapping[str, object]]) -> str:
    """The table as CSV text, written as ``runs.csv`` is: same histories, same bytes."""
    return table_text(rows, PICK_COLUMNS)


def write_picks(path: str | Path, rows: Sequence[Mapping[str, object]]) -> Path:
    return write_table_text(path, picks_text(rows))


def read_picks(path: str | Path) -> dict[str, dict[int, dict[int, dict[str, float]]]]:
    """method -> seed -> part -> the numeric columns; a bad header or cell names file and line,
    and so does a second run of one method and seed (another model or algorithm: a block reads
    one of them, and which would be silent)."""
    p = Path(path)
    out: dict[str, dict[int, dict[int, dict[str, float]]]] = {}
    run_of: dict[tuple[str, int], str] = {}
    with p.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != PICK_COLUMNS:
            raise ValueError(f"{p}: the header is not the picks table's ({', '.join(PICK_COLUMNS)})")
        for line, r in enumerate(reader, start=2):
            try:
                values = {c: float(r[c]) for c in PICK_COLUMNS[5:]}
                seed, part = int(r["seed"]), int(r["part"])
            except ValueError as exc:
                raise ValueError(f"{p}: line {line}: {exc}") from None
            first = run_of.setdefault((r["method"], seed), r["run_id"])
            if first != r["run_id"]:
                raise ValueError(f"{p}: line {line}: run {r['run_id']} is {r['method']} seed "
                                 f"{seed} as {first} is: one table per model and algorithm")
            out.setdefault(r["method"], {}).setdefault(seed, {})[part] = values
    return out


def picks_section(table: Mapping[str, Mapping[int, Mapping[int, Mapping[str, float]]]],
                  order: Sequence[str], decimals: int = 3) -> str:
    """Markdown: per method, mean over seeds [95% t-interval] of the all-right and all-wrong
    shares by third, and of the items never observed and never in an informative group over
    the whole run."""
    def iv(method: str, part: int, fn, places: int = decimals) -> str:
        return mean_interval([fn(parts[part]) for parts in table[method].values()
                              if part in parts]).text(places)

    header = ("| method | seeds | all right, by third | all wrong, by third | items never "
              "observed | items never in an informative group (of the pool) |")
    lines = [header, "|---|---|---|---|---|---|"]
    for m in [m for m in order if m in table] + sorted(set(table) - set(order)):
        pool = {int(parts[0]["pool_items"]) for parts in table[m].values() if 0 in parts}
        thirds = [" / ".join(iv(m, k, lambda r, c=c: r[c]) for k in range(1, PARTS + 1))
                  for c in ("all_right", "all_wrong")]
        never = [iv(m, 0, lambda r, c=c: r["pool_items"] - r[c], 1)
                 for c in ("observed_items", "informative_items")]
        lines.append(f"| {m} | {len(table[m])} | {thirds[0]} | {thirds[1]} | {never[0]} | "
                     f"{never[1]} (of "
                     f"{'/'.join(str(n) for n in sorted(pool))}) |")
    return "\n".join(lines) + (
        "\n\nShares of the groups observed (the history's `events`: the trained groups, or at a "
        "DAPO step that found none informative before its rollout cap, the generated ones) whose "
        "rollouts were all right or all wrong, per third of a run's steps; the pool items a run "
        "never observed, and those never in a group with a right and a wrong rollout (never "
        "learned from: the only groups with a gradient), mean over seeds [95% t-interval]; "
        "from the committed `picks.csv`.\n")
