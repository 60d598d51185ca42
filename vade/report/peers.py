"""The report's "VADE vs each peer" table and DAPO's plateau, paired by seed.

Why a table of its own: a user picks a sampler by asking whether VADE beats the simpler peer
they could adopt instead, on the same seed (same model, data and seed stream), so each peer
(the ``peer`` rows of ``vade.methods``, published methods and named variants) is compared with
VADE seed by seed, side by side at equal steps (the last step both runs validated) and at equal
rollouts (each run's last validation at or under the smaller of the two runs' total cost, on the
report's cost axis: ``vade.report.cost``). A peer under DAPO's filter (GRESO) spends several
times the rollouts per step, so it is compared by rollouts only.

The target is 99.5% of DAPO's *plateau*, not its best point. The rule is fixed before the runs:
the plateau level is the mean of DAPO's validation scores in the last third of its curve, and
the plateau is reached when that mean lies within one standard error (of the difference of the
two means) of the second third's. With ``report.plateau_checks`` (e.g. 300, 450, 600) the rule
is checked on the curve as it stood at each of those steps, in order, and the first where it
holds gives the plateau, as if DAPO had stopped there. Only seeds where the rule holds set a
target; the headline ratio is over those seeds, and says how many.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vade import methods
from vade.report.collect import Curve, Inputs, RunInfo
from vade.report.curves import first_reaching
from vade.report.estimators import geometric_interval
from vade.report.stats import Interval, mean_interval, paired_interval

__all__ = ["Plateau", "at_cost", "at_step", "peer_statistics", "plateau", "plateau_by"]

PEERS = methods.names_where(chooser="peer")


@dataclass(frozen=True)
class Plateau:
    """DAPO's plateau level (mean of the last third's scores) and whether the rule holds."""

    level: float
    second: float      # mean of the second third's scores
    se: float          # standard error of (last third's mean - second third's mean)
    reached: bool


def plateau(curve: Curve) -> Plateau | None:
    """The plateau of one validation curve; None with fewer than 2 scores in either third."""
    ok = np.isfinite(curve.value) & (curve.step > 0)
    step, value = curve.step[ok], curve.value[ok]
    if step.size == 0:
        return None
    last = float(step.max())
    second = value[(step > last / 3) & (step <= 2 * last / 3)]
    third = value[step > 2 * last / 3]
    if second.size < 2 or third.size < 2:
        return None
    se = math.sqrt(second.var(ddof=1) / second.size + third.var(ddof=1) / third.size)
    level, mid = float(third.mean()), float(second.mean())
    return Plateau(level, mid, se, abs(level - mid) <= se)


def plateau_by(curve: Curve, checks: Sequence[int] = ()) -> tuple[Plateau | None, float]:
    """The plateau at the first of ``checks`` (steps the curve reached, ascending) where the
    rule holds on the curve as it stood there, and that step; else the rule on the whole curve
    and its last step."""
    last = curve.last_valid_step() or 0.0
    for check in sorted(checks):
        if check >= last:
            break
        pl = plateau(curve.upto(check))
        if pl is not None and pl.reached:
            return pl, float(check)
    return plateau(curve), last


def at_step(curve: Curve | None, step: float) -> float | None:
    """The curve's value at ``step`` exactly (None: not validated there)."""
    if curve is None:
        return None
    hit = np.flatnonzero((curve.step == step) & np.isfinite(curve.value))
    return float(curve.value[hit[0]]) if hit.size else None


def at_cost(value: np.ndarray, cost: np.ndarray, budget: float) -> float | None:
    """The last finite value whose cost is at most ``budget`` (None: none is)."""
    ok = np.flatnonzero(np.isfinite(value) & np.isfinite(cost) & (cost <= budget))
    return float(value[ok[-1]]) if ok.size else None


@dataclass(frozen=True)
class _Pair:
    """One seed's VADE-vs-peer numbers: at their common last step, at equal rollouts, and the
    rollouts each needs to reach the target."""

    vade_val: float | None
    peer_val: float | None
    vade_eq: float | None      # validation at equal rollouts
    peer_eq: float | None
    vade_ratio: float | None
    peer_ratio: float | None
    vade_reach: float | None   # rollouts to the target (None: never)
    peer_reach: float | None


def _ratio(run: RunInfo) -> float | None:
    curve = run.curves.get("effective_ratio")
    if curve is None or not np.isfinite(curve.value).any():
        return None
    return float(np.nanmean(curve.value))


def _reach(inputs: Inputs, run: RunInfo, curve: Curve | None, target: float | None,
           axis: str) -> float | None:
    if curve is None or target is None:
        return None
    return first_reaching(inputs.cost(run.key, curve, axis), curve.value, target)


def _equal_rollouts(inputs: Inputs, a: RunInfo, b: RunInfo, val_metric: str,
                    axis: str) -> tuple[float | None, float | None]:
    """Each run's validation at the smaller of the two runs' last validated cost."""
    ca, cb = a.curves[val_metric], b.curves[val_metric]
    xa, xb = inputs.cost(a.key, ca, axis), inputs.cost(b.key, cb, axis)
    ends = [float(np.nanmax(x[np.isfinite(c.value)])) for x, c in ((xa, ca), (xb, cb))
            if np.isfinite(x[np.isfinite(c.value)]).any()]
    if len(ends) < 2:
        return None, None
    budget = min(ends)
    return at_cost(ca.value, xa, budget), at_cost(cb.value, xb, budget)


def _pair(inputs: Inputs, vade: RunInfo, peer: RunInfo, val_metric: str,
          target: float | None, axis: str) -> _Pair | None:
    v, p = vade.curves.get(val_metric), peer.curves.get(val_metric)
    lv = None if v is None else v.last_valid_step()
    lp = None if p is None else p.last_valid_step()
    if lv is None or lp is None:
        return None
    eq = _equal_rollouts(inputs, vade, peer, val_metric, axis)
    common = min(lv, lp)
    vade, peer = vade.upto(common), peer.upto(common)
    v, p = vade.curves[val_metric], peer.curves[val_metric]
    return _Pair(at_step(v, common), at_step(p, common), *eq, _ratio(vade), _ratio(peer),
                 _reach(inputs, vade, v, target, axis), _reach(inputs, peer, p, target, axis))


def _fmt(iv: Interval, decimals: int) -> str:
    return iv.text(decimals) + (" *" if iv.excludes_zero() else "")


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _reach_text(values: Sequence[float | None]) -> str:
    got = [v for v in values if v is not None]
    return f"{mean_interval(got).text(0)} ({len(got)}/{len(values)})"


def _plateau_rows(inputs: Inputs, dapo: dict[int, RunInfo], vade: dict[int, RunInfo],
                  val_metric: str, fraction: float, d: int, checks: Sequence[int],
                  axis: str) -> tuple[list[str], dict[int, float]]:
    """DAPO's plateau per seed (text lines) and the targets of the seeds where it holds."""
    targets: dict[int, float] = {}
    lines: list[str] = []
    ratios: dict[int, float] = {}
    for seed in sorted(dapo):
        curve = dapo[seed].curves.get(val_metric)
        pl, at = (None, 0.0) if curve is None else plateau_by(curve, checks)
        if pl is None:
            lines.append(f"seed {seed}: too few validation points for a plateau")
            continue
        state = f"reached by step {at:.0f}" if pl.reached else f"still moving at step {at:.0f}"
        line = (f"seed {seed}: plateau {pl.level:.{d + 1}f} (second third "
                f"{pl.second:.{d + 1}f}, standard error {pl.se:.{d + 1}f}: {state})")
        if pl.reached:
            targets[seed] = fraction * pl.level
            own = _reach(inputs, dapo[seed].upto(at), curve.upto(at), targets[seed], axis)
            v = (_reach(inputs, vade[seed], vade[seed].curves.get(val_metric), targets[seed],
                        axis) if seed in vade else None)
            if own and v is not None:
                ratios[seed] = v / own
            if own is not None:
                line += f"; DAPO reaches {fraction * 100:g}% of it at {own:,.0f} rollouts"
        lines.append(line)
    when = (f"checked at steps {', '.join(map(str, sorted(checks)))} and at the last step"
            if checks else "checked on the whole curve")
    rule = (f"DAPO's plateau rule (fixed before the runs: the last third's mean within one "
            f"standard error of the second third's; {when}) holds in {len(targets)}/"
            f"{len(dapo)} seeds; only those seeds set a target. Headline, on those seeds: "
            f"VADE's rollouts to {fraction * 100:g}% of DAPO's plateau / DAPO's own: "
            f"{geometric_interval(ratios).text(d + 1)} ({len(ratios)} of {len(targets)} "
            "seeds where both reach it; geometric mean, interval on the log scale).")
    return [rule, "", *[f"- {line}" for line in lines]], targets


def _row(inputs: Inputs, peer: str, runs: dict[int, RunInfo], vade: dict[int, RunInfo],
         val_metric: str, targets: dict[int, float], d: int, axis: str) -> list[str] | None:
    seeds = sorted(set(runs) & set(vade))
    got = {s: _pair(inputs, vade[s], runs[s], val_metric, targets.get(s), axis) for s in seeds}
    got = {s: g for s, g in got.items() if g is not None}
    if not got:
        return None
    aimed = [g for s, g in got.items() if s in targets]  # seeds whose DAPO plateau set a target
    both = {s: g.vade_reach / g.peer_reach for s, g in got.items() if s in targets
            and g.vade_reach is not None and g.peer_reach}

    def diff(a: str, b: str) -> str:
        return _fmt(paired_interval({s: getattr(g, a) for s, g in got.items()},
                                    {s: getattr(g, b) for s, g in got.items()}), d + 1)

    equal_steps = ("by rollouts (filtered)" if methods.get(peer).filters
                   else diff("vade_val", "peer_val"))
    return [peer, str(len(got)), equal_steps, diff("vade_eq", "peer_eq"),
            diff("vade_ratio", "peer_ratio"),
            _reach_text([g.vade_reach for g in aimed]) if targets else "no DAPO plateau",
            _reach_text([g.peer_reach for g in aimed]) if targets else "no DAPO plateau",
            f"{geometric_interval(both).text(d)}" if targets else "-"]


def peer_statistics(inputs: Inputs, val_metric: str, fraction: float = 0.995,
                    decimals: int = 2, cost_axis: str = "all",
                    plateau_checks: Sequence[int] = ()) -> str:
    """Markdown: per (model, algorithm) DAPO's plateau and one row per peer against VADE."""
    pairs = sorted({(k.model, k.algorithm) for k in inputs.run_keys() if k.method in PEERS})
    if not pairs:
        return ""
    d = decimals
    text = ["## VADE vs each peer", ""]
    header = ["peer", "seeds", "validation at equal steps, VADE - peer",
              "validation at equal rollouts, VADE - peer", "mean effective ratio, VADE - peer",
              f"rollouts to {fraction * 100:g}% of DAPO's plateau: VADE", "peer",
              "VADE / peer (seeds both reach)"]
    shown: list[str] = []
    for model, algo in pairs:
        complete = inputs.complete_runs(model, algo)
        vade, dapo = complete.get("vade", {}), complete.get("dapo", {})
        text += [f"### {model} {algo.upper()}", ""]
        targets: dict[int, float] = {}
        if dapo:
            head, targets = _plateau_rows(inputs, dapo, vade, val_metric, fraction, d,
                                          plateau_checks, cost_axis)
            text += [*head, ""]
        rows = [r for peer in PEERS if (r := _row(inputs, peer, complete.get(peer, {}), vade,
                                                  val_metric, targets, d, cost_axis))]
        shown += [r[0] for r in rows if r[0] not in shown]
        text += [_md(header, rows) if rows else "No peer run shares a seed with VADE.", ""]
    text.append(
        "Paired by seed: each difference is VADE minus the peer, mean [95% t-interval]; * = "
        "the interval excludes 0. Equal steps: at the last step both validated (the effective "
        "ratio averaged up to it). Equal rollouts: each run's last validation at or under the "
        f"smaller of the two runs' total rollouts. Rollouts are on the cost axis '{cost_axis}' "
        "(report.cost_axis; 'all': every rollout consumed or needed, initial difficulty "
        "rollouts and MMR1's re-scoring included). Rollouts to target: cumulative rollouts at "
        f"the first validation point at or above {fraction * 100:g}% of the same seed's DAPO "
        "plateau, over the seeds where the plateau rule holds (reached / seeds of the pair "
        "with a target).")
    text += ["", "How each row differs from its published method:", ""]
    text += [f"- {p}: {methods.get(p).published}" for p in shown]
    return "\n".join(text) + "\n"
