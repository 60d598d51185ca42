"""The report's "Statistics over seeds" section: per method and paired by seed (``stats``).

Per (model, algorithm) and method, over the seeds with a complete run: the final validation
score (the last validated step), the run's mean effective gradient ratio, and the cumulative
rollouts at which the run first reaches ``fraction`` of the same seed's DAPO peak (seeds that
never reach it are counted, not averaged). Each as the mean and 95% t-interval over seeds, and
as the per-seed difference to vanilla (paired: same seed, same model and data) with its own
interval; then VADE against DAPO, the paper's headline. A pair of runs of different lengths (DAPO
run on to its plateau beside peers at the study's length) is compared at the last step both
validated, so a longer run's extra steps never count as a method's advantage. With one seed per method the section
says that the report cannot rank methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vade.methods import NAMES
from vade.report.collect import Curve, Inputs, RunInfo
from vade.report.curves import first_reaching
from vade.report.stats import Interval, mean_interval, paired_interval

__all__ = ["RunNumbers", "run_numbers", "seed_statistics"]

ORDER = NAMES  # the method table's order (vade/methods.py)


@dataclass(frozen=True)
class RunNumbers:
    """What one run contributes to the statistics (None: the run has no such number)."""

    final_val: float | None
    mean_ratio: float | None
    rollouts_to_target: float | None  # None: never reached (or no DAPO peak for its seed)
    rollouts_to_peak: float | None    # where the run first reaches its own best score


def _final(curve: Curve | None) -> float | None:
    if curve is None:
        return None
    ok = np.isfinite(curve.value)
    return float(curve.value[ok][-1]) if ok.any() else None


def _peak(curve: Curve | None) -> float | None:
    if curve is None or not np.isfinite(curve.value).any():
        return None
    return float(np.nanmax(curve.value))


def run_numbers(run: RunInfo, val_metric: str, target: float | None,
                inputs: Inputs | None = None, cost_axis: str = "all") -> RunNumbers:
    """Final validation score, mean effective ratio and rollouts to ``target`` of one run;
    with ``inputs``, rollouts on its cost axis (``vade.report.cost``), else the history's."""
    val = run.curves.get(val_metric)
    x = None if val is None else (inputs.cost(run.key, val, cost_axis) if inputs is not None
                                  else val.rollouts)
    ratio = run.curves.get("effective_ratio")
    mean_ratio = (float(np.nanmean(ratio.value))
                  if ratio is not None and np.isfinite(ratio.value).any() else None)
    reach = peak = None
    if val is not None and target is not None:
        reach = first_reaching(x, val.value, target)
    if val is not None and _peak(val) is not None:
        peak = first_reaching(x, val.value, _peak(val))
    return RunNumbers(_final(val), mean_ratio, reach, peak)


def _fmt(iv: Interval, decimals: int) -> str:
    """A difference's interval; ``*`` when it excludes 0."""
    return iv.text(decimals) + (" *" if iv.excludes_zero() else "")


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


@dataclass(frozen=True)
class _Table:
    """One (model, algorithm)'s complete runs and the per-seed rollout targets (DAPO's peak)."""

    runs: dict[str, dict[int, RunInfo]]
    val_metric: str
    targets: dict[int, float]
    inputs: Inputs
    cost_axis: str

    @classmethod
    def of(cls, inputs: Inputs, model: str, algo: str, val_metric: str,
           fraction: float, cost_axis: str) -> _Table:
        runs = inputs.complete_runs(model, algo)
        peaks = {s: _peak(r.curves.get(val_metric)) for s, r in runs.get("dapo", {}).items()}
        return cls(runs, val_metric, {s: fraction * p for s, p in peaks.items() if p is not None},
                   inputs, cost_axis)

    def numbers(self, run: RunInfo) -> RunNumbers:
        return run_numbers(run, self.val_metric, self.targets.get(run.key.seed), self.inputs,
                           self.cost_axis)

    def end(self, run: RunInfo) -> float | None:
        curve = run.curves.get(self.val_metric)
        return None if curve is None else curve.last_valid_step()

    def paired(self, method: str, other: str) -> tuple[dict[int, RunNumbers],
                                                        dict[int, RunNumbers]]:
        """Both methods' numbers per shared seed, each run cut at the pair's common last
        validated step: runs of different lengths (DAPO to its plateau, peers at the study's
        length) are compared where both stood, never a longer run's end against a shorter's."""
        a, b = self.runs.get(method, {}), self.runs.get(other, {})
        out_a: dict[int, RunNumbers] = {}
        out_b: dict[int, RunNumbers] = {}
        for seed in sorted(set(a) & set(b)):
            ends = [self.end(a[seed]), self.end(b[seed])]
            if None in ends:
                continue
            out_a[seed] = self.numbers(a[seed].upto(min(ends)))
            out_b[seed] = self.numbers(b[seed].upto(min(ends)))
        return out_a, out_b


def _steps_text(ends: Sequence[float | None]) -> str:
    got = sorted({int(e) for e in ends if e is not None})
    return "-" if not got else str(got[0]) if len(got) == 1 else f"{got[0]}-{got[-1]}"


def _method_rows(table: _Table, d: int) -> list[list[str]]:
    rows = []
    for method in [m for m in ORDER if m in table.runs]:
        runs = table.runs[method]
        by_seed = {s: table.numbers(r) for s, r in runs.items()}
        val = {s: n.final_val for s, n in by_seed.items()}
        ratio = {s: n.mean_ratio for s, n in by_seed.items()}
        # out of the seeds with a DAPO peak to aim at (a method may run more seeds than DAPO)
        reach = [n.rollouts_to_target for s, n in by_seed.items() if s in table.targets]
        reached = [r for r in reach if r is not None]
        vs = method != "vanilla" and "vanilla" in table.runs
        mine, base = table.paired(method, "vanilla") if vs else ({}, {})
        rows.append([
            method, str(len(by_seed)), _steps_text([table.end(r) for r in runs.values()]),
            mean_interval(list(val.values())).text(d + 1),
            _fmt(paired_interval({s: n.final_val for s, n in mine.items()},
                                 {s: n.final_val for s, n in base.items()}), d + 1)
            if vs else "-",
            mean_interval(list(ratio.values())).text(d + 1),
            _fmt(paired_interval({s: n.mean_ratio for s, n in mine.items()},
                                 {s: n.mean_ratio for s, n in base.items()}), d + 1)
            if vs else "-",
            f"{mean_interval(reached).text(0)} ({len(reached)}/{len(reach)} reached)",
        ])
    return rows


def _headline_rows(table: _Table, d: int) -> list[list[str]]:
    vade, dapo = table.paired("vade", "dapo")
    seeds = sorted(vade)
    if not seeds:
        return []
    val = paired_interval({s: vade[s].final_val for s in seeds},
                          {s: dapo[s].final_val for s in seeds})
    # the rollout ratio reads each run whole: VADE's first reaching DAPO's peak, DAPO's peak
    whole_vade = {s: table.numbers(table.runs["vade"][s]) for s in seeds}
    whole_dapo = {s: table.numbers(table.runs["dapo"][s]) for s in seeds}
    both = [s for s in seeds if whole_vade[s].rollouts_to_target is not None
            and whole_dapo[s].rollouts_to_peak]
    ratio = mean_interval([whole_vade[s].rollouts_to_target / whole_dapo[s].rollouts_to_peak
                           for s in both])
    return [["final validation, VADE - DAPO", _fmt(val, d + 1), str(val.n)],
            ["VADE's rollouts to target / DAPO's to its peak", ratio.text(d + 1)
             + f" ({len(both)}/{len(seeds)} seeds: VADE reached the target and DAPO peaked"
            " after training began)", str(ratio.n)]]


def seed_statistics(inputs: Inputs, val_metric: str, fraction: float, decimals: int = 2,
                    cost_axis: str = "all") -> str:
    """The Markdown section (one table per model and algorithm, plus the VADE-DAPO pair)."""
    pairs = sorted({(k.model, k.algorithm) for k in inputs.run_keys() if k.method in ORDER})
    text = ["## Statistics over seeds", ""]
    if not pairs:
        return "\n".join(text + ["No training runs.", ""])
    seeds = {k.seed for k in inputs.run_keys() if k.method in ORDER}
    if len(seeds) < 2:
        return "\n".join(text + [(
            f"One seed per method (seed {min(seeds)}): this report cannot rank methods. A "
            "single validation score carries its own sampling error (the figures' bands) and "
            "the seed-to-seed spread is unknown; differences between methods here are not "
            "evidence either way. Run several seeds (`experiments.seeds`, e.g. "
            "config/tiny-study.yaml) for intervals."), ""])
    target = f"{fraction * 100:g}% of DAPO's peak"
    header = ["method", "seeds", "steps", "final validation", "Δ vs vanilla (paired)",
              "mean effective ratio", "Δ vs vanilla (paired)", f"rollouts to {target}"]
    for model, algo in pairs:
        table = _Table.of(inputs, model, algo, val_metric, fraction, cost_axis)
        text += [f"### {model} {algo.upper()}", "", _md(header, _method_rows(table, decimals)),
                 ""]
        head = _headline_rows(table, decimals)
        if head:
            text += [_md(["VADE vs DAPO (paired by seed)", "mean [95% interval]", "seeds"], head),
                     ""]
    text.append(
        f"Mean over seeds [95% t-interval]; Δ columns: the mean of per-seed differences (same "
        f"seed, model and data) with their own interval, both runs taken at the pair's common "
        f"last validated step; * = the interval excludes 0. Steps: the runs' last validated "
        f"step. Final validation = '{val_metric}' at that step. Rollouts (cost axis "
        f"'{cost_axis}', report.cost_axis): cumulative rollouts at the first validation point "
        f"at or above {target} for the same seed (mean over the seeds that reach it, of the "
        "seeds with a DAPO run). Complete runs only.")
    return "\n".join(text) + "\n"
