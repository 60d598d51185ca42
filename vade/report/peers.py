"""The report's "VADE vs each peer" table and DAPO's plateau (issue 26), paired by seed.

Why a table of its own: a user picks a sampler by asking whether VADE beats the simpler peer
they could adopt instead, on the same seed (same model, data and seed stream), so each peer
(the ``peer`` rows of ``vade.methods``) is compared with VADE seed by seed, at equal steps (the
last step both runs validated: a peer run for fewer steps than VADE is compared with VADE's score
at the peer's last step, not VADE's later one).

The target is 99.5% of DAPO's *plateau*, not its best point: the plateau level is the mean of
DAPO's validation scores in the last third of its run, and the plateau is declared reached when
that mean lies within one standard error (of the difference of the two means) of the second
third's. A DAPO still rising fails the rule, and the table says in how many seeds it held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vade.methods import names_where
from vade.report.collect import Curve, Inputs, RunInfo
from vade.report.curves import first_reaching
from vade.report.stats import Interval, mean_interval, paired_interval

__all__ = ["Plateau", "at_step", "peer_statistics", "plateau"]

PEERS = names_where(chooser="peer")


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


def at_step(curve: Curve | None, step: float) -> float | None:
    """The curve's value at ``step`` exactly (None: not validated there)."""
    if curve is None:
        return None
    hit = np.flatnonzero((curve.step == step) & np.isfinite(curve.value))
    return float(curve.value[hit[0]]) if hit.size else None


@dataclass(frozen=True)
class _Pair:
    """One seed's VADE-vs-peer numbers at their common last step."""

    vade_val: float | None
    peer_val: float | None
    vade_ratio: float | None
    peer_ratio: float | None
    vade_reach: float | None   # rollouts to the target (None: never)
    peer_reach: float | None


def _ratio(run: RunInfo) -> float | None:
    curve = run.curves.get("effective_ratio")
    if curve is None or not np.isfinite(curve.value).any():
        return None
    return float(np.nanmean(curve.value))


def _reach(curve: Curve | None, target: float | None) -> float | None:
    if curve is None or target is None:
        return None
    return first_reaching(curve.rollouts, curve.value, target)


def _pair(vade: RunInfo, peer: RunInfo, val_metric: str, target: float | None) -> _Pair | None:
    v, p = vade.curves.get(val_metric), peer.curves.get(val_metric)
    lv = None if v is None else v.last_valid_step()
    lp = None if p is None else p.last_valid_step()
    if lv is None or lp is None:
        return None
    vade, peer = vade.upto(min(lv, lp)), peer.upto(min(lv, lp))
    v, p = vade.curves[val_metric], peer.curves[val_metric]
    return _Pair(at_step(v, min(lv, lp)), at_step(p, min(lv, lp)), _ratio(vade), _ratio(peer),
                 _reach(v, target), _reach(p, target))


def _fmt(iv: Interval, decimals: int) -> str:
    return iv.text(decimals) + (" *" if iv.excludes_zero() else "")


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _reach_text(values: Sequence[float | None]) -> str:
    got = [v for v in values if v is not None]
    return f"{mean_interval(got).text(0)} ({len(got)}/{len(values)})"


def _plateau_rows(dapo: dict[int, RunInfo], vade: dict[int, RunInfo], val_metric: str,
                  fraction: float, d: int) -> tuple[list[str], dict[int, float]]:
    """DAPO's plateau per seed (text lines) and the targets it sets."""
    targets: dict[int, float] = {}
    lines, held, ratios = [], 0, []
    for seed in sorted(dapo):
        curve = dapo[seed].curves.get(val_metric)
        pl = None if curve is None else plateau(curve)
        if pl is None:
            lines.append(f"seed {seed}: too few validation points for a plateau")
            continue
        held += pl.reached
        targets[seed] = fraction * pl.level
        own = _reach(curve, targets[seed])
        v = _reach(vade[seed].curves.get(val_metric), targets[seed]) if seed in vade else None
        if own and v is not None:
            ratios.append(v / own)
        state = "reached" if pl.reached else "still moving"
        line = (f"seed {seed}: plateau {pl.level:.{d + 1}f} (second third "
                f"{pl.second:.{d + 1}f}, standard error {pl.se:.{d + 1}f}: {state})")
        if own is not None:
            line += f"; DAPO reaches {fraction * 100:g}% of it at {own:,.0f} rollouts"
        lines.append(line)
    rule = ("DAPO's plateau rule (last third's mean within one standard error of the second "
            f"third's) holds in {held}/{len(dapo)} seeds. VADE's rollouts to "
            f"{fraction * 100:g}% of DAPO's plateau / DAPO's own: "
            f"{mean_interval(ratios).text(d + 1)} ({len(ratios)} seeds where both reach it).")
    head = [rule, "", *[f"- {line}" for line in lines]]
    return head, targets


def peer_statistics(inputs: Inputs, val_metric: str, fraction: float = 0.995,
                    decimals: int = 2) -> str:
    """Markdown: per (model, algorithm) DAPO's plateau and one row per peer against VADE."""
    pairs = sorted({(k.model, k.algorithm) for k in inputs.run_keys() if k.method in PEERS})
    if not pairs:
        return ""
    d = decimals
    text = ["## VADE vs each peer", ""]
    header = ["peer", "seeds", "final validation, VADE - peer",
              "mean effective ratio, VADE - peer",
              f"rollouts to {fraction * 100:g}% of DAPO's plateau: VADE", "peer",
              "VADE / peer (seeds both reach)"]
    for model, algo in pairs:
        complete = inputs.complete_runs(model, algo)
        vade, dapo = complete.get("vade", {}), complete.get("dapo", {})
        text += [f"### {model} {algo.upper()}", ""]
        targets: dict[int, float] = {}
        if dapo:
            head, targets = _plateau_rows(dapo, vade, val_metric, fraction, d)
            text += [*head, ""]
        rows = []
        for peer in PEERS:
            runs = complete.get(peer, {})
            seeds = sorted(set(runs) & set(vade))
            if not seeds:
                continue
            got = {s: _pair(vade[s], runs[s], val_metric, targets.get(s)) for s in seeds}
            got = {s: g for s, g in got.items() if g is not None}
            both = [g.vade_reach / g.peer_reach for g in got.values()
                    if g.vade_reach is not None and g.peer_reach]
            rows.append([
                peer, str(len(got)),
                _fmt(paired_interval({s: g.vade_val for s, g in got.items()},
                                     {s: g.peer_val for s, g in got.items()}), d + 1),
                _fmt(paired_interval({s: g.vade_ratio for s, g in got.items()},
                                     {s: g.peer_ratio for s, g in got.items()}), d + 1),
                _reach_text([g.vade_reach for g in got.values()]) if targets else "no DAPO",
                _reach_text([g.peer_reach for g in got.values()]) if targets else "no DAPO",
                f"{mean_interval(both).text(d)} ({len(both)})" if targets else "-",
            ])
        text += [_md(header, rows) if rows else "No peer run shares a seed with VADE.", ""]
    text.append(
        "Paired by seed, at equal steps: each difference is VADE minus the peer at the last step "
        "both validated (the effective ratio averaged up to that step), mean [95% t-interval]; "
        "* = the interval excludes 0. Rollouts: cumulative rollouts at the first validation "
        f"point at or above {fraction * 100:g}% of the same seed's DAPO plateau, mean over the "
        "seeds that reach it (reached/seeds).")
    return "\n".join(text) + "\n"
