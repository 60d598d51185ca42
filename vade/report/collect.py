"""Gather what a report needs from run histories, evaluation files and (optionally) MLflow.

Everything a report may show is loaded here into plain arrays and dicts, so the table and figure
modules are pure functions of this ``Inputs`` value. Nothing is dropped: a run the config expects
but no file holds is listed as ``missing``; a run file without ``done.json`` beside it is
``partial``; a file that cannot be opened (a job still writing it) is ``unreadable``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vade import methods
from vade.eval.store import average_at_k, open_eval_catalog
from vade.grid import RunKey, parse_run_id
from vade.report.cost import overhead
from vade.report.paper import BENCHMARKS
from vade.store.query import open_catalog

__all__ = ["Curve", "Inputs", "RunInfo", "RunKey", "collect", "history_files", "parse_run_id"]

@dataclass(frozen=True)
class Curve:
    """One metric of one run against step (and cumulative rollouts at that step)."""

    step: np.ndarray
    value: np.ndarray
    rollouts: np.ndarray  # cumulative rollouts at each step (NaN where unknown)
    source: str           # "duckdb" or "mlflow"

    def upto(self, step: float) -> Curve:
        """The curve through ``step``: what it was when the run stood there."""
        keep = self.step <= step
        return Curve(self.step[keep], self.value[keep], self.rollouts[keep], self.source)

    def last_valid_step(self) -> float | None:
        """The last step with a value (None: the curve has none)."""
        ok = np.isfinite(self.value)
        return float(self.step[ok].max()) if ok.any() else None


@dataclass
class RunInfo:
    key: RunKey
    status: str                     # complete | partial | missing | unreadable
    path: str | None = None
    last_step: int = 0
    curves: dict[str, Curve] = field(default_factory=dict)
    n_samples: int | None = None    # training rows (the history's runs.n_samples)

    def upto(self, step: float) -> RunInfo:
        """The run as it stood at ``step``: comparing runs of different lengths at a step both
        reached (a 300-step run against a 150-step one at step 150)."""
        return RunInfo(self.key, self.status, self.path, min(self.last_step, int(step)),
                       {name: c.upto(step) for name, c in self.curves.items()},
                       self.n_samples)


@dataclass
class Inputs:
    runs: dict[str, RunInfo]                      # training runs and base models, by run id
    evals: dict[tuple[str, str], dict[str, Any]]  # (run_id, benchmark) -> eval_average row
    benchmarks: list[str]
    catalog: duckdb.DuckDBPyConnection | None     # history catalog (sample views), or None
    initial_accuracy: dict[str, dict[int, float]]  # model -> sample_id -> r/G
    sample_labels: dict[int, str]
    notes: list[str]
    initial_rollouts: dict[str, int] = field(default_factory=dict)  # model (or "*") -> sum G

    def run_keys(self) -> list[RunKey]:
        return sorted(r.key for r in self.runs.values())

    def complete_runs(self, model: str, algorithm: str) -> dict[str, dict[int, RunInfo]]:
        """method -> seed -> run: the complete training runs of one (model, algorithm)."""
        out: dict[str, dict[int, RunInfo]] = {}
        for k in self.run_keys():
            run = self.runs[k.run_id]
            if (k.model, k.algorithm) == (model, algorithm) and k.method != "base" \
                    and run.status == "complete":
                out.setdefault(k.method, {})[k.seed] = run
        return out

    def initial_rollouts_of(self, key: RunKey) -> int | None:
        """Rollouts of the initial difficulty estimate (Algorithm 1, lines 1-2: G per sample,
        about one epoch) that run ``key`` started from: 0 for methods that do not read it
        (``vade.methods``: not ``needs_difficulty``, e.g. vanilla, DAPO, MoPPS, GRESO, SEC; base
        models); None when no difficulty file of its model was given."""
        if key.method == "base" or not methods.get(key.method).needs_difficulty:
            return 0
        got = self.initial_rollouts.get(key.model, self.initial_rollouts.get("*"))
        return None if got is None else int(got)

    def cost(self, key: RunKey, curve: Curve, axis: str = "all") -> np.ndarray:
        """The rollouts at each point of ``curve`` on the report's cost axis: the history's
        cumulative count plus, on axis ``all``, what the method consumed or needed besides
        (``vade.report.cost``)."""
        if axis == "generated":
            return curve.rollouts
        run = self.runs.get(key.run_id)
        return curve.rollouts + overhead(key.method, curve.step,
                                         initial=self.initial_rollouts_of(key),
                                         n_samples=run.n_samples if run else None)


def history_files(paths: Iterable[str | Path]) -> list[Path]:
    """Run histories: files as given; a directory means every ``*/history.duckdb`` in it."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*/history.duckdb")))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"no run history at {p}")
    return list(dict.fromkeys(f.resolve() for f in out))


def _curves(con: duckdb.DuckDBPyConnection, names: Sequence[str]) -> dict[str, dict[str, Curve]]:
    steps = con.execute("SELECT run_id, step, effective_ratio, rollouts_cumulative, "
                        "effective_ratio_generated FROM step_summary ORDER BY run_id, step"
                        ).fetchall()
    out: dict[str, dict[str, Curve]] = {}
    cum: dict[str, dict[int, float]] = {}
    by_run: dict[str, list[tuple[int, float, float, float]]] = {}
    for run, step, ratio, rc, generated in steps:
        by_run.setdefault(run, []).append((step, ratio, rc, generated))
        cum.setdefault(run, {})[step] = float(rc)
    for run, rows in by_run.items():
        s = np.array([r[0] for r in rows], np.int64)
        rc_run = np.array([r[2] for r in rows], float)
        # trained groups' informative share, and generated groups' (they differ under DAPO's
        # filter only: the schema's step_summary)
        for name, col in (("effective_ratio", 1), ("effective_ratio_generated", 3)):
            out.setdefault(run, {})[name] = Curve(
                s, np.array([r[col] for r in rows], float), rc_run, "duckdb")
        out[run]["rollouts_cumulative"] = Curve(
            s, np.array([r[2] for r in rows], float), np.array([r[2] for r in rows], float),
            "duckdb")
    metric_rows = con.execute(
        "SELECT run_id, name, step, value FROM metrics WHERE name IN ("
        + ", ".join("?" for _ in names) + ") AND value IS NOT NULL AND NOT isnan(value) "
        "ORDER BY run_id, name, step", list(names)).fetchall()
    grouped: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for run, name, step, value in metric_rows:
        grouped.setdefault((run, name), []).append((step, value))
    for (run, name), rows in grouped.items():
        s = np.array([r[0] for r in rows], np.int64)
        # step 0 (validation before training) comes before any training rollout
        rc = np.array([cum.get(run, {}).get(int(x), 0.0 if x == 0 else np.nan) for x in s],
                      float)
        out.setdefault(run, {})[name] = Curve(s, np.array([r[1] for r in rows], float), rc,
                                              "duckdb")
    return out


def _mlflow_curves(uri: str, experiment: str, run_ids: Sequence[str],
                   names: Sequence[str]) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Metric histories by MLflow run name; an absent store or experiment yields nothing."""
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        return {}
    from mlflow.tracking import MlflowClient  # lazy: the cpu/workflow extra, seconds to load

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return {}
    out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for run in client.search_runs([exp.experiment_id], max_results=50000):
        name = run.info.run_name
        if name not in run_ids or name in out:
            continue
        for metric in names:
            hist = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id,
                                                                               metric))
            if hist:
                out.setdefault(name, {})[metric] = (np.array([h[0] for h in hist], np.int64),
                                                    np.array([h[1] for h in hist], float))
    return out


def _initial_accuracy(paths: Sequence[str | Path]) -> dict[str, dict[int, float]]:
    """``.../difficulty/<model>/initial.parquet`` -> {model: {sample_id: r/G}}; a file directly
    in ``difficulty/`` applies to every model (key "*")."""
    out: dict[str, dict[int, float]] = {}
    for p in map(Path, paths):
        table = pq.read_table(p, columns=["sample_id", "correct", "rollouts"]).to_pydict()
        model = "*" if p.parent.name == "difficulty" else p.parent.name
        out[model] = {int(i): c / g for i, c, g in zip(table["sample_id"], table["correct"],
                                                       table["rollouts"]) if g}
    return out


def _initial_rollouts(paths: Sequence[str | Path]) -> dict[str, int]:
    """Total rollouts in each initial difficulty file (same keys as :func:`_initial_accuracy`)."""
    out: dict[str, int] = {}
    for p in map(Path, paths):
        total = pc.sum(pq.read_table(p, columns=["rollouts"]).column("rollouts")).as_py()
        out["*" if p.parent.name == "difficulty" else p.parent.name] = int(total or 0)
    return out


def collect(*, runs: Sequence[str | Path], evals: Sequence[str | Path],
            expected: Sequence[str], metric_names: Sequence[str],
            mlflow_uri: str | None = None, mlflow_experiment: str | None = None,
            difficulty: Sequence[str | Path] = (), samples: str | Path | None = None,
            benchmarks: Sequence[str] | None = None) -> Inputs:
    notes: list[str] = []
    infos: dict[str, RunInfo] = {}
    readable: list[Path] = []
    for f in history_files(runs):
        status = "complete" if (f.parent / "done.json").is_file() else "partial"
        try:
            con = duckdb.connect(str(f), read_only=True)
            try:
                sizes = dict(con.execute("SELECT run_id, n_samples FROM runs").fetchall())
                ids = list(sizes)
                last = dict(con.execute("SELECT run_id, max(step) FROM steps GROUP BY run_id")
                            .fetchall())
            finally:
                con.close()
        except duckdb.Error as exc:
            rid = f.parent.name
            infos[rid] = RunInfo(parse_run_id(rid), "unreadable", str(f))
            notes.append(f"{rid}: history {f} could not be read ({type(exc).__name__}); "
                         "shown as unreadable")
            continue
        readable.append(f)
        for rid in ids:
            infos[rid] = RunInfo(parse_run_id(rid), status, str(f), int(last.get(rid) or 0),
                                 n_samples=int(sizes[rid]))
    catalog = open_catalog(readable) if readable else None
    if catalog is not None:
        for rid, curves in _curves(catalog, metric_names).items():
            if rid in infos:
                infos[rid].curves = curves
    if mlflow_uri:
        lacking = sorted(r for r, i in infos.items() if i.key.method != "base"
                         and any(n not in i.curves for n in metric_names))
        if lacking:
            got = _mlflow_curves(mlflow_uri, mlflow_experiment or "", lacking, metric_names)
            for rid, metrics in got.items():
                cum = infos[rid].curves.get("rollouts_cumulative")
                for name, (s, v) in metrics.items():
                    if name in infos[rid].curves:
                        continue
                    lookup = dict(zip(cum.step.tolist(), cum.value.tolist())) if cum else {}
                    rc = np.array([lookup.get(int(x), np.nan) for x in s], float)
                    infos[rid].curves[name] = Curve(s, v, rc, "mlflow")
    eval_con = open_eval_catalog(evals)
    rows = average_at_k(eval_con)
    eval_con.close()
    ev = {(r["run_id"], r["benchmark"]): r for r in rows}
    for rid in sorted({r["run_id"] for r in rows}):
        if rid not in infos:
            key = parse_run_id(rid)
            # a base model has no history; a trained run evaluated without its history is partial
            infos[rid] = RunInfo(key, "complete" if key.method == "base" else "partial")
            if key.method != "base":
                notes.append(f"{rid}: evaluated, but no training history was given")
    for rid in expected:
        if rid not in infos:
            infos[rid] = RunInfo(parse_run_id(rid), "missing")
    found = sorted({r["benchmark"] for r in rows})
    if benchmarks:
        order = list(benchmarks) + [b for b in found if b not in benchmarks]
    else:
        order = [b for b in BENCHMARKS if b in found] + [b for b in found if b not in BENCHMARKS]
    labels: dict[int, str] = {}
    if samples:
        con = duckdb.connect(str(samples), read_only=True)
        try:
            labels = {int(i): str(d) for i, d in con.execute(
                "SELECT sample_id, domain FROM samples").fetchall()}
        finally:
            con.close()
    return Inputs(runs=dict(sorted(infos.items())), evals=ev, benchmarks=order, catalog=catalog,
                  initial_accuracy=_initial_accuracy(difficulty), sample_labels=labels,
                  notes=notes, initial_rollouts=_initial_rollouts(difficulty))
