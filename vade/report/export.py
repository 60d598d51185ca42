"""The per-run table of a study: the small file under ``docs/data/<study>/runs.csv`` that every
number of its results section is computed from.

Why: the run histories (``results/``) are not committed, so a study's numbers could not be
re-derived once the checkout that ran it was gone (the fair race of 2026-11-27 is lost this
way). This table is small enough to commit (one row per run and validation step) and holds
what the race's estimators need; the report computes its pre-registered section from the same
table read back (``vade.report.numbers``), so the report and the docs cannot diverge.

Columns (one row per run and validation step, step 0 = before training):

* ``study, run_id, method, seed, step``;
* ``val``: the validation score (``report.val_metric``);
* ``rollouts``: cumulative rollouts on the report's cost axis (``vade.report.cost``: initial
  difficulty rollouts for the methods that read them, DAPO's and GRESO's filtered generations,
  MMR1's re-scoring); ``rollouts_generated``: the history's own count;
* ``eff_trained``, ``eff_generated``: the mean over steps 1..step of the informative share of
  the trained groups and of the generated groups (equal except under DAPO's filter, whose
  trained share is 1.0 by construction); empty at step 0.

Written with fixed decimals (6; whole numbers without), sorted by run and step: same histories,
same bytes.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vade.report.collect import Curve, Inputs, parse_run_id

__all__ = ["COLUMNS", "RunRows", "read_table", "read_tables", "table_rows", "table_text",
           "window_means", "write_table", "write_table_text"]

COLUMNS = ("study", "run_id", "method", "seed", "step", "val", "rollouts",
           "rollouts_generated", "eff_trained", "eff_generated")


def _running_mean_at(curve: Curve | None, steps: np.ndarray) -> np.ndarray:
    """Mean of ``curve`` over its steps 1..s, for each s in ``steps`` (NaN: no step <= s)."""
    out = np.full(steps.shape, np.nan)
    if curve is None:
        return out
    ok = np.isfinite(curve.value) & (curve.step >= 1)
    s, v = curve.step[ok], curve.value[ok]
    order = np.argsort(s, kind="stable")
    s, c = s[order], np.cumsum(v[order])
    n = np.searchsorted(s, steps, side="right")
    has = n > 0
    out[has] = c[n[has] - 1] / n[has]
    return out


def window_means(step: np.ndarray, running: np.ndarray) -> np.ndarray:
    """The mean over the steps since the previous row, from the table's running means (mean over
    steps 1..s): (m_k s_k - m_(k-1) s_(k-1)) / (s_k - s_(k-1)), the first window from step 0.
    Assumes what the trainer writes, one value per step; NaN where a running mean is missing."""
    s = np.asarray(step, np.float64)
    total = np.asarray(running, np.float64) * s
    prev_s = np.concatenate([[0.0], s[:-1]])
    prev_total = np.concatenate([[0.0], total[:-1]])
    prev_total[prev_s == 0] = 0.0   # step 0's running mean is empty (no step yet)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > prev_s, (total - prev_total) / (s - prev_s), np.nan)


def table_rows(inputs: Inputs, study: str, val_metric: str,
               cost_axis: str = "all") -> list[dict[str, object]]:
    """One dict per (complete training run, validation step), sorted by run id and step."""
    rows: list[dict[str, object]] = []
    for key in inputs.run_keys():
        run = inputs.runs[key.run_id]
        val = run.curves.get(val_metric)
        if key.method == "base" or run.status != "complete" or val is None:
            continue
        ok = np.isfinite(val.value)
        step, value = val.step[ok], val.value[ok]
        curve = Curve(step, value, val.rollouts[ok], val.source)
        cost = inputs.cost(key, curve, cost_axis)
        trained = _running_mean_at(run.curves.get("effective_ratio"), step)
        generated = _running_mean_at(run.curves.get("effective_ratio_generated"), step)
        for i in range(step.size):
            rows.append({"study": study, "run_id": key.run_id, "method": key.method,
                         "seed": key.seed, "step": int(step[i]), "val": float(value[i]),
                         "rollouts": float(cost[i]), "rollouts_generated": float(curve.rollouts[i]),
                         "eff_trained": float(trained[i]), "eff_generated": float(generated[i])})
    return rows


def _cell(v: object) -> str:
    if isinstance(v, float):
        if not math.isfinite(v):
            return ""
        return f"{v:.0f}" if v.is_integer() else f"{v:.6f}"
    return str(v)


def table_text(rows: Sequence[Mapping[str, object]],
               columns: Sequence[str] = COLUMNS) -> str:
    """The CSV text of ``rows`` (header first, ``\\n`` line ends, fixed decimals)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r[c]) for c in columns])
    return buf.getvalue()


def write_table(path: str | Path, rows: Sequence[dict[str, object]]) -> Path:
    """Write ``rows`` to ``path`` (whole file at once: a failed write leaves the old one)."""
    return write_table_text(path, table_text(rows))


def write_table_text(path: str | Path, text: str) -> Path:
    """Write a table's ``text`` to ``path`` whole: a failed write leaves the old file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)
    return p


@dataclass(frozen=True)
class RunRows:
    """One run's rows of the table, as arrays in step order. ``label`` names its row in the
    section: the method, or ``method@study`` for a control study read beside the main one."""

    run_id: str
    method: str
    seed: int
    label: str
    step: np.ndarray
    val: np.ndarray
    rollouts: np.ndarray
    rollouts_generated: np.ndarray
    eff_trained: np.ndarray
    eff_generated: np.ndarray

    def curve(self) -> Curve:
        """The validation curve, x = the cost axis (for ``vade.report.peers.plateau``)."""
        return Curve(self.step, self.val, self.rollouts, "table")

    def upto(self, step: float) -> RunRows:
        keep = self.step <= step
        return RunRows(self.run_id, self.method, self.seed, self.label, *(
            getattr(self, f)[keep] for f in (
            "step", "val", "rollouts", "rollouts_generated", "eff_trained", "eff_generated")))


def _number(path: Path, line: int, column: str, text: str) -> float:
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}, column {column}: {text!r} is not a number"
                         ) from None


def read_tables(paths: Sequence[str | Path]) -> dict[str, RunRows]:
    """The first table's runs under their method's name, the others' (controls: another batch
    size, another learning rate) as ``method@study``; keys ``study/run_id``."""
    out: dict[str, RunRows] = {}
    for k, path in enumerate(paths):
        for rows in read_table(path, control=k > 0).values():
            out[f"{rows.label}/{rows.run_id}"] = rows
    return out


def read_table(path: str | Path, *, control: bool = False) -> dict[str, RunRows]:
    """run id -> its rows; a missing column or a bad cell is one error naming file and line.
    ``control``: label the runs ``method@study``."""
    p = Path(path)
    with p.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{p}: missing column(s) {', '.join(missing)} (expected "
                             f"{', '.join(COLUMNS)})")
        by_run: dict[str, list[tuple[float, ...]]] = {}
        study: dict[str, str] = {}
        for line, r in enumerate(reader, start=2):
            try:
                key = parse_run_id(r["run_id"])
            except ValueError as exc:
                raise ValueError(f"{p}: line {line}: {exc}") from None
            if key.method != r["method"] or str(key.seed) != r["seed"]:
                raise ValueError(f"{p}: line {line}: method/seed {r['method']}/{r['seed']} "
                                 f"disagree with run id {r['run_id']}")
            by_run.setdefault(r["run_id"], []).append(tuple(
                _number(p, line, c, r[c]) for c in COLUMNS[4:]))
            study[r["run_id"]] = r["study"]
    out: dict[str, RunRows] = {}
    for rid, vals in sorted(by_run.items()):
        a = np.array(sorted(vals), np.float64)
        key = parse_run_id(rid)
        label = f"{key.method}@{study[rid]}" if control else key.method
        out[rid] = RunRows(rid, key.method, key.seed, label, a[:, 0].astype(np.int64),
                           *(a[:, i] for i in range(1, 6)))
    return out
