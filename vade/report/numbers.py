"""The race's pre-registered section, computed from a study's per-run table alone.

Every number of a results section comes from here, reading ``docs/data/<study>/runs.csv``
(``vade.report.export``): the report computes it from the table it just wrote, and
``vade results check`` recomputes the blocks of docs/results.md from the committed tables, so
the two cannot diverge. What is computed, and why, is fixed in docs/results.md ("Pre-registration,
2026-11-28") before the rerun; in short:

* per method: final validation, the validation difference to vanilla paired by seed at the last
  step both validated, the mean effective ratio of the trained and of the generated groups, the
  area under the validation curve (mean score from step 0 to the last step both validated,
  paired with vanilla) and the step-equivalence factor k against vanilla (method(t) ~
  vanilla(k t)), k summarised geometrically;
* DAPO's plateau per seed (``vade.report.peers.plateau_by``), and two handlings of the seeds where
  the rule fails, both reported: (A) only the seeds where it holds set a target; (B) every seed
  sets one, 99.5% of the mean of the last third of its curve, a lower bound on its plateau;
* rollouts to the target on the smoothed, common-cadence curve (``vade.report.estimators``),
  per method over DAPO's, as geometric means with the per-seed ratios; a run that never reaches
  it counts the larger of its last rollouts and the other run's rollouts to the target, so a
  censored run is never the faster of the pair (both censored: ratio 1), and is counted;
* the primary family: VADE / DAPO rollouts to target (handling B), VADE - vanilla and VADE -
  each published peer at equal rollouts; two-sided paired t-tests, Holm's correction over the
  family (scipy). ``family`` names the pre-registered comparisons (``dapo`` for H1, then the
  methods VADE is compared with at equal rollouts): a test the table cannot make yet (fewer
  than 2 seeds) counts in Holm's m at p = 1, so a missing peer never loosens the correction.
  Without it the family is whatever the table holds (a report of a study that declares none);
* the controls (another study's runs, labelled ``method@study``): VADE minus each, paired by
  seed, at equal steps, at equal rollouts and in area (secondary; added 2026-11-28 before any
  control ran: the pre-registration compares them with vanilla, and the question they answer,
  whether vanilla at B = 24 matches VADE, is this difference);
* beside each equal-rollouts test, a sensitivity (added 2026-11-28, after an interim look, not
  pre-registered): both runs linearly interpolated at the budget instead of read at their last
  validation under it, which depends on how often each method is validated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from vade import methods
from vade.grid import parse_run_id
from vade.report.estimators import (
    area_under_curve,
    geometric_interval,
    reach_smoothed,
    step_equivalence,
)
from vade.report.export import RunRows
from vade.report.peers import at_cost, plateau_by
from vade.report.stats import Interval, mean_interval

__all__ = ["PRIMARY_PEERS", "by_method", "holm", "section"]

PRIMARY_PEERS = ("mopps", "greso", "mmr1", "sec")  # the published peers of the primary family


def by_method(table: Mapping[str, RunRows]) -> dict[str, dict[int, RunRows]]:
    """label -> seed -> rows, in the method table's order (a control ``method@study`` after
    its method)."""
    out: dict[str, dict[int, RunRows]] = {}
    for name in methods.NAMES:
        for label in sorted({r.label for r in table.values() if r.method == name},
                            key=lambda x: (x != name, x)):
            runs = sorted((r for r in table.values() if r.label == label), key=lambda r: r.seed)
            seen: dict[int, RunRows] = {}
            for r in runs:
                if r.seed in seen:
                    raise ValueError(f"runs {seen[r.seed].run_id} and {r.run_id} are both "
                                     f"{label} seed {r.seed}: one model and algorithm per "
                                     "comparison (section() splits a table by them)")
                seen[r.seed] = r
            out[label] = seen
    return out


def _at_or_before(rows: RunRows, step: float) -> float | None:
    ok = np.flatnonzero((rows.step <= step) & np.isfinite(rows.val))
    return float(rows.val[ok[-1]]) if ok.size else None


def _last(a: np.ndarray) -> float:
    ok = a[np.isfinite(a)]
    return float(ok[-1]) if ok.size else math.nan


def _paired(a: Mapping[int, RunRows], b: Mapping[int, RunRows], fn) -> dict[int, float]:
    """fn(a_rows, b_rows) per seed both have, finite results only."""
    out = {}
    for s in sorted(set(a) & set(b)):
        v = fn(a[s], b[s])
        if v is not None and math.isfinite(v):
            out[s] = float(v)
    return out


def _common_step(x: RunRows, y: RunRows) -> float:
    return float(min(x.step.max(), y.step.max()))


def _delta_steps(x: RunRows, y: RunRows) -> float | None:
    t = _common_step(x, y)
    a, b = _at_or_before(x, t), _at_or_before(y, t)
    return None if a is None or b is None else a - b


def _delta_rollouts(x: RunRows, y: RunRows) -> float | None:
    budget = min(np.nanmax(x.rollouts), np.nanmax(y.rollouts))
    a, b = at_cost(x.val, x.rollouts, budget), at_cost(y.val, y.rollouts, budget)
    return None if a is None or b is None else a - b


def _delta_interpolated(x: RunRows, y: RunRows) -> float | None:
    """The sensitivity to ``_delta_rollouts``: both curves interpolated at the budget."""
    budget = min(np.nanmax(x.rollouts), np.nanmax(y.rollouts))
    got = []
    for r in (x, y):
        ok = np.isfinite(r.val) & np.isfinite(r.rollouts)
        if not ok.any() or r.rollouts[ok][0] > budget:
            return None
        got.append(float(np.interp(budget, r.rollouts[ok], r.val[ok])))
    return got[0] - got[1]


def _delta_auc(x: RunRows, y: RunRows) -> float | None:
    t = _common_step(x, y)
    a, b = area_under_curve(x.step, x.val, t), area_under_curve(y.step, y.val, t)
    return None if a is None or b is None else a - b


def _k(x: RunRows, y: RunRows) -> float | None:
    return step_equivalence(x.step, x.val, y.step, y.val)


def _paired_cell(a: Mapping[int, RunRows], b: Mapping[int, RunRows], fn, d: int) -> str:
    """mean [95% t-interval] of fn(a, b) over the seeds both have."""
    return _fmt(mean_interval(list(_paired(a, b, fn).values())), d + 1)


def _fmt(iv: Interval, d: int) -> str:
    return iv.text(d) + (" *" if iv.excludes_zero() else "")


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def _t_p(values: Sequence[float]) -> float:
    """Two-sided one-sample t-test p of mean 0 (NaN with fewer than 2 values)."""
    x = np.asarray(values, float)
    if x.size < 2:
        return math.nan
    if np.all(x == x[0]):
        return 0.0 if x[0] != 0 else 1.0
    from scipy import stats  # lazy: scipy (about 0.5 s), only when a family is tested

    return float(stats.ttest_1samp(x, 0.0).pvalue)


def _method_table(ms: Mapping[str, Mapping[int, RunRows]], d: int) -> str:
    van = ms.get("vanilla", {})
    rows = []
    for name, runs in ms.items():
        ends = [float(np.nanmax(r.rollouts)) for r in runs.values()]
        steps = sorted({int(r.step.max()) for r in runs.values()})
        vs = name != "vanilla" and van
        rows.append([
            name, str(len(runs)),
            str(steps[0]) if len(steps) == 1 else f"{steps[0]}-{steps[-1]}",
            f"{min(ends):,.0f}" + (f"-{max(ends):,.0f}" if max(ends) > min(ends) else ""),
            mean_interval([_last(r.val) for r in runs.values()]).text(d + 1),
            _paired_cell(runs, van, _delta_steps, d) if vs else "-",
            _paired_cell(runs, van, _delta_rollouts, d) if vs else "-",
            mean_interval([_last(r.eff_trained) for r in runs.values()]).text(d + 1),
            mean_interval([_last(r.eff_generated) for r in runs.values()]).text(d + 1),
            _paired_cell(runs, van, _delta_auc, d) if vs else "-",
            geometric_interval(_paired(runs, van, _k)).text(d) if vs else "-"])
    return _md(["method", "seeds", "steps", "rollouts (cost axis)", "final validation",
                "Δ vs vanilla, equal steps", "Δ vs vanilla, equal rollouts",
                "effective ratio, trained",
                "effective ratio, generated", "AUC Δ vs vanilla", "k vs vanilla"], rows)


def _targets(dapo: Mapping[int, RunRows], fraction: float, checks: Sequence[int],
             d: int) -> tuple[list[str], dict[int, float], dict[int, float]]:
    """Lines per seed, targets of handling A (rule holds) and B (every seed)."""
    lines: list[str] = []
    held: dict[int, float] = {}
    every: dict[int, float] = {}
    for seed, rows in dapo.items():
        pl, at = plateau_by(rows.curve(), checks)
        if pl is None:
            lines.append(f"- seed {seed}: too few validation points for a plateau")
            continue
        every[seed] = fraction * pl.level
        if pl.reached:
            held[seed] = fraction * pl.level
        state = "holds" if pl.reached else "fails"
        lines.append(f"- seed {seed}: the rule {state} at step {at:.0f}: last third "
                     f"{pl.level:.{d + 2}f}, second {pl.second:.{d + 2}f}, standard error "
                     f"{pl.se:.{d + 2}f}")
    return lines, held, every


def _reach(rows: RunRows, target: float, grid: float) -> tuple[float, bool]:
    """Rollouts to ``target`` (smoothed, on the grid) and whether reached; never: the run's
    last rollouts (a lower bound; ``_ratios`` makes it count against the run)."""
    got = reach_smoothed(rows.rollouts, rows.val, target, grid)
    return (float(np.nanmax(rows.rollouts)), False) if got is None else (got, True)


def _ratios(runs: Mapping[int, RunRows], ref: Mapping[int, RunRows],
            targets: Mapping[int, float], grid: float) -> tuple[dict[int, float], int, int]:
    """Per seed (with a target): rollouts to it, this method over ``ref``; seeds where this
    method reached it; seeds where ``ref`` did. A run that never reached it counts at least
    what the other run needed: its last rollouts alone are a lower bound, which for the
    numerator would make a censored method look faster (amended 2026-11-28)."""
    out, hit, ref_hit = {}, 0, 0
    for s in sorted(set(runs) & set(ref) & set(targets)):
        mine, ok = _reach(runs[s], targets[s], grid)
        theirs, ref_ok = _reach(ref[s], targets[s], grid)
        hit, ref_hit = hit + ok, ref_hit + ref_ok
        if not ok:
            mine = max(mine, theirs)
        if not ref_ok:
            theirs = max(theirs, mine)
        if theirs > 0:
            out[s] = mine / theirs
    return out, hit, ref_hit


def section(table: Mapping[str, RunRows], *, fraction: float = 0.995, grid_step: float = 3840.0,
            plateau_checks: Sequence[int] = (), decimals: int = 2,
            family: Sequence[str] | None = None) -> str:
    """Markdown: the per-method table, DAPO's plateau, rollouts to target under both handlings
    and the primary family with Holm's correction; one such part per (model, algorithm) when
    the table holds several (the demo trains GRPO and GSPO of each method on the same seeds:
    runs are compared only within their model and algorithm)."""
    groups: dict[tuple[str, str], dict[str, RunRows]] = {}
    for key, rows in table.items():
        run = parse_run_id(rows.run_id)
        groups.setdefault((run.model, run.algorithm), {})[key] = rows
    kwargs = {"fraction": fraction, "grid_step": grid_step, "plateau_checks": plateau_checks,
              "decimals": decimals, "family": family}
    if len(groups) <= 1:
        return _section(table, **kwargs)
    return "\n".join(f"### {model} {algorithm.upper()}\n\n" + _section(runs, **kwargs)
                     for (model, algorithm), runs in sorted(groups.items()))


def _section(table: Mapping[str, RunRows], *, fraction: float, grid_step: float,
             plateau_checks: Sequence[int], decimals: int,
             family: Sequence[str] | None) -> str:
    ms = by_method(table)
    d = decimals
    if not ms:
        return "No run in the table.\n"
    out = [_method_table(ms, d), ""]
    dapo, vade = ms.get("dapo", {}), ms.get("vade", {})
    every: dict[int, float] = {}
    if dapo:
        lines, held, every = _targets(dapo, fraction, plateau_checks, d)
        out += [f"DAPO's plateau rule holds in {len(held)}/{len(dapo)} seeds:", "", *lines, ""]
        rows = []
        for name, runs in ms.items():
            if name == "dapo":
                continue
            cells = [name]
            for targets in (held, every):
                r, hit, ref_hit = _ratios(runs, dapo, targets, grid_step)
                cells += [f"{hit}/{len(r)} (DAPO {ref_hit}/{len(r)})",
                          geometric_interval(r).text(d)]
            rows.append(cells)
        head = f"A: rollouts to {fraction * 100:g}% of DAPO's plateau, method / DAPO"
        out += [_md(["method", "A: reached", head, "B: reached", "B: method / DAPO"], rows), ""]
    methods.check_compared(family or (), "family")
    partners = (list(family) if family is not None else
                [p for p in ("dapo", "vanilla", *PRIMARY_PEERS) if p in ms])
    tests = [_test(p, vade, ms.get(p, {}), every, grid_step, d) for p in partners] if vade else []
    if tests:
        out += [_family_table(tests, fixed=family is not None), ""]
    controls = _controls_table(ms, d)
    if controls:
        out += [controls, ""]
    out.append(f"Rollouts to target: the validation curve on a common grid of {grid_step:,.0f} "
               "rollouts (linear interpolation), a trailing mean of 3 grid points, the first at "
               f"or above {fraction * 100:g}% of the seed's DAPO plateau (a grid point between "
               "two validations reads the later one too: a method validated rarely gains up to "
               "one interval); never reached: the larger of the run's last rollouts and the "
               "other run's rollouts to the target count (both never: ratio 1). A: seeds where "
               "DAPO's plateau rule holds; B: every seed, target from the last third's mean. "
               "Equal rollouts: each run at its last validation at or under the smaller of the "
               "pair's final rollouts (sensitivity: both interpolated at it). Ratios: geometric "
               "mean [log-scale 95% t-interval] (per-seed ratios). Differences: mean [95% "
               "t-interval], paired by seed; * = excludes 0.")
    return "\n".join(out) + "\n"


def _test(partner: str, vade: Mapping[int, RunRows], runs: Mapping[int, RunRows],
          targets: Mapping[int, float], grid: float, d: int) -> tuple[str, list[float], str, str]:
    """One test of the family: its name, per-seed values, estimate, sensitivity."""
    if partner == "dapo":
        r, _, _ = _ratios(vade, runs, targets, grid)
        return ("VADE / DAPO, rollouts to target (B), log ratio", [math.log(v) for v in r.values()],
                geometric_interval(r).text(d), "-")
    diffs = list(_paired(vade, runs, _delta_rollouts).values())
    interp = list(_paired(vade, runs, _delta_interpolated).values())
    return (f"VADE - {partner}, validation at equal rollouts", diffs,
            _fmt(mean_interval(diffs), d + 1), _fmt(mean_interval(interp), d + 1))


def _control_pairs(ms: Mapping[str, Mapping[int, RunRows]]) -> list[tuple[str, str]]:
    """(VADE's label, the control's) for each control run label ``method@study`` other than
    VADE's: the control study's own VADE when it ran one (VADE - vanilla at another learning
    rate), else the main study's (VADE - vanilla at B = 24: does vanilla given VADE's
    informative groups per step match it)."""
    pairs = []
    for label in ms:
        method, _, study = label.partition("@")
        if study and method != "vade":
            own = f"vade@{study}"
            vade = own if own in ms else "vade"
            if vade in ms:
                pairs.append((vade, label))
    return pairs


def _controls_table(ms: Mapping[str, Mapping[int, RunRows]], d: int) -> str:
    """VADE minus each control, paired by seed (secondary: no test, no correction)."""
    rows = []
    for vade, other in _control_pairs(ms):
        a, b = ms[vade], ms[other]
        rows.append([f"{vade} - {other}", str(len(set(a) & set(b))),
                     *(_paired_cell(a, b, fn, d)
                       for fn in (_delta_steps, _delta_rollouts, _delta_auc))])
    if not rows:
        return ""
    return ("Controls (secondary: paired by seed, no correction; each against the VADE of its "
            "own study where it ran one, else the main study's):\n\n"
            + _md(["comparison", "seeds", "Δ, equal steps", "Δ, equal rollouts", "AUC Δ"], rows))


def _family_table(tests: Sequence[tuple[str, list[float], str, str]], *, fixed: bool) -> str:
    """The family with Holm's correction; ``fixed``: a test without 2 seeds counts at p = 1."""
    ps = [_t_p(v) for _, v, _, _ in tests]
    counted = [i for i, p in enumerate(ps) if fixed or math.isfinite(p)]
    adj = dict(zip(counted, holm([ps[i] if math.isfinite(ps[i]) else 1.0 for i in counted])))
    rows = [[name, str(len(v)), text, "-" if not math.isfinite(ps[i]) else f"{ps[i]:.3f}",
             "-" if i not in adj or not math.isfinite(ps[i]) else f"{adj[i]:.3f}", sens]
            for i, (name, v, text, sens) in enumerate(tests)]
    ready = sum(math.isfinite(p) for p in ps)
    if fixed:
        intro = (f"Primary family ({len(tests)} pre-registered tests, {ready} with 2+ seeds; "
                 f"Holm's correction over all {len(tests)}, a test without 2 seeds counted at "
                 "p = 1; two-sided paired t):")
    else:
        intro = (f"Primary family ({ready} tests with 2+ seeds; Holm's correction over them, "
                 "two-sided paired t):")
    return intro + "\n\n" + _md(["comparison", "seeds", "estimate", "p", "p (Holm)",
                                 "sensitivity: interpolated at the budget"], rows)
