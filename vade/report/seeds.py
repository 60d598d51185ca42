"""The report's "Statistics over seeds" section: per method and paired by seed (``stats``).

Per (model, algorithm) and method, over the seeds with a complete run: the final validation
score (the last validated step), the run's mean effective gradient ratio, and the cumulative
rollouts at which the run first reaches ``fraction`` of the same seed's DAPO peak (seeds that
never reach it are counted, not averaged). Each as the mean and 95% t-interval over seeds, and
as the per-seed difference to vanilla (paired: same seed, same model and data) with its own
interval; then VADE against DAPO, the paper's headline. With one seed per method the section
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


def run_numbers(run: RunInfo, val_metric: str, target: float | None) -> RunNumbers:
    """Final validation score, mean effective ratio and rollouts to ``target`` of one run."""
    val = run.curves.get(val_metric)
    ratio = run.curves.get("effective_ratio")
    mean_ratio = (float(np.nanmean(ratio.value))
                  if ratio is not None and np.isfinite(ratio.value).any() else None)
    reach = peak = None
    if val is not None and target is not None:
        reach = first_reaching(val.rollouts, val.value, target)
    if val is not None and _peak(val) is not None:
        peak = first_reaching(val.rollouts, val.value, _peak(val))
    return RunNumbers(_final(val), mean_ratio, reach, peak)


def _fmt(iv: Interval, decimals: int) -> str:
    """A difference's interval; ``*`` when it excludes 0."""
    return iv.text(decimals) + (" *" if iv.excludes_zero() else "")


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _numbers(inputs: Inputs, model: str, algo: str, val_metric: str, fraction: float
             ) -> dict[str, dict[int, RunNumbers]]:
    """method -> seed -> numbers, complete runs only; targets from the same seed's DAPO run."""
    runs = [inputs.runs[k.run_id] for k in inputs.run_keys()
            if (k.model, k.algorithm) == (model, algo) and k.method in ORDER]
    peaks = {r.key.seed: _peak(r.curves.get(val_metric)) for r in runs
             if r.key.method == "dapo" and r.status == "complete"}
    out: dict[str, dict[int, RunNumbers]] = {}
    for r in runs:
        if r.status != "complete":
            continue
        peak = peaks.get(r.key.seed)
        out.setdefault(r.key.method, {})[r.key.seed] = run_numbers(
            r, val_metric, None if peak is None else fraction * peak)
    return out


def _method_rows(nums: dict[str, dict[int, RunNumbers]], d: int) -> list[list[str]]:
    base = nums.get("vanilla", {})
    rows = []
    for method in [m for m in ORDER if m in nums]:
        by_seed = nums[method]
        val = {s: n.final_val for s, n in by_seed.items()}
        ratio = {s: n.mean_ratio for s, n in by_seed.items()}
        reach = [n.rollouts_to_target for n in by_seed.values()]
        reached = [r for r in reach if r is not None]
        vs = method != "vanilla" and base
        rows.append([
            method, str(len(by_seed)),
            mean_interval(list(val.values())).text(d + 1),
            _fmt(paired_interval(val, {s: n.final_val for s, n in base.items()}), d + 1)
            if vs else "-",
            mean_interval(list(ratio.values())).text(d + 1),
            _fmt(paired_interval(ratio, {s: n.mean_ratio for s, n in base.items()}), d + 1)
            if vs else "-",
            f"{mean_interval(reached).text(0)} ({len(reached)}/{len(reach)} reached)",
        ])
    return rows


def _headline_rows(nums: dict[str, dict[int, RunNumbers]], d: int) -> list[list[str]]:
    vade, dapo = nums.get("vade", {}), nums.get("dapo", {})
    seeds = sorted(set(vade) & set(dapo))
    if not seeds:
        return []
    val = paired_interval({s: vade[s].final_val for s in seeds},
                          {s: dapo[s].final_val for s in seeds})
    both = [s for s in seeds if vade[s].rollouts_to_target is not None
            and dapo[s].rollouts_to_peak]
    ratio = mean_interval([vade[s].rollouts_to_target / dapo[s].rollouts_to_peak
                           for s in both])
    return [["final validation, VADE - DAPO", _fmt(val, d + 1), str(val.n)],
            ["VADE's rollouts to target / DAPO's to its peak", ratio.text(d + 1)
             + f" ({len(both)}/{len(seeds)} seeds: VADE reached the target and DAPO peaked"
            " after training began)", str(ratio.n)]]


def seed_statistics(inputs: Inputs, val_metric: str, fraction: float, decimals: int = 2) -> str:
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
    header = ["method", "seeds", "final validation", "Δ vs vanilla (paired)",
              "mean effective ratio", "Δ vs vanilla (paired)", f"rollouts to {target}"]
    for model, algo in pairs:
        nums = _numbers(inputs, model, algo, val_metric, fraction)
        text += [f"### {model} {algo.upper()}", "", _md(header, _method_rows(nums, decimals)), ""]
        head = _headline_rows(nums, decimals)
        if head:
            text += [_md(["VADE vs DAPO (paired by seed)", "mean [95% interval]", "seeds"], head),
                     ""]
    text.append(
        f"Mean over seeds [95% t-interval]; Δ columns: the mean of per-seed differences (same "
        f"seed, model and data) with their own interval; * = the interval excludes 0. Final "
        f"validation = '{val_metric}' at the run's last validated step. Rollouts: cumulative "
        f"rollouts at the first validation point at or above {target} for the same seed "
        "(mean over the seeds that reach it). Complete runs only.")
    return "\n".join(text) + "\n"
