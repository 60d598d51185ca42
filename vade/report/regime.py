"""Is a testbed in the paper's regime? Vanilla's effective ratio over training, and the rule
fixed before any other method runs there (docs/results.md, "Pre-registration, 2026-11-28").

The paper's Figure 1: under uniform sampling the share of a batch whose rollouts are neither all
right nor all wrong falls as training goes on, to about 10% late in training. The tiny study is
far from that (vanilla's mean effective ratio 0.636 over 300 steps, 2026-11-27), so "VADE level
with vanilla" there cannot test the paper's claims. A testbed is in the regime when vanilla's
mean effective ratio over the last third of its steps lies in [0.10, 0.20] and is below its
first third's (it *falls* there, rather than starting low).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vade.report.collect import Curve
from vade.report.export import RunRows, window_means
from vade.report.stats import mean_interval

__all__ = ["REGIME", "Trajectory", "regime_section", "table_trajectory", "trajectories",
           "trajectory"]

REGIME = (0.10, 0.20)  # vanilla's last-third mean effective ratio (fixed before calibrating)


@dataclass(frozen=True)
class Trajectory:
    """Mean effective ratio of one run per part of its steps (first part first)."""

    parts: tuple[float, ...]

    @property
    def in_regime(self) -> bool:
        last, first = self.parts[-1], self.parts[0]
        return REGIME[0] <= last <= REGIME[1] and last < first

    def text(self) -> str:
        got = " -> ".join(f"{p:.3f}" for p in self.parts)
        verdict = "in" if self.in_regime else "not in"
        return (f"{got}: {verdict} the regime (last part in [{REGIME[0]:.2f}, {REGIME[1]:.2f}] "
                "and below the first)")


def trajectory(curve: Curve, parts: int = 3) -> Trajectory:
    """The run's per-step effective ratio averaged over ``parts`` equal runs of steps (steps
    1..T split at T/parts, 2T/parts, ...; a step belongs to the part whose end it does not
    pass)."""
    ok = np.isfinite(curve.value) & (curve.step >= 1)
    step, value = curve.step[ok].astype(float), curve.value[ok]
    if step.size < parts:
        raise ValueError(f"{step.size} steps cannot be split into {parts} parts")
    last = step.max()
    which = np.minimum(np.ceil(step * parts / last).astype(int), parts) - 1
    return Trajectory(tuple(float(value[which == k].mean()) for k in range(parts)))


def trajectories(curves: dict[str, Curve], parts: Sequence[int] = (3, 10)) -> list[str]:
    """One line per run and split: ``run: a -> b -> c: (not) in the regime``."""
    return [f"{rid} ({n} parts): {trajectory(c, n).text()}" for rid, c in sorted(curves.items())
            for n in parts]


def table_trajectory(rows: RunRows, parts: int = 3, field: str = "eff_generated") -> Trajectory:
    """``trajectory`` from a committed table's running means (``vade.report.export``): part k
    runs from one cut to the next, the cut being the validation step nearest k T / parts (the
    earlier on a tie; T/3, 2T/3 and T themselves when the run validates there, as a 300-step run
    every 25 steps does; DAPO stopped by its rollout cap at step 314 cuts at 100, 200, 314 when
    it validates every 25 steps: its parts differ by a few steps), and its mean is
    (s_k m_k - s_(k-1) m_(k-1)) / (s_k - s_(k-1)), with m the running mean at step s."""
    running = {s: v for s, v in zip(rows.step.tolist(), getattr(rows, field).tolist()) if s >= 1}
    last = max(running, default=0)
    steps = sorted(running)
    cuts = [0] + [min(steps, key=lambda s, k=k: (abs(s - last * k / parts), s))
                  for k in range(1, parts + 1)] if steps else [0]
    if len(set(cuts)) != parts + 1:
        raise ValueError(f"{rows.run_id}: {len(steps)} validation step(s) after step 0 cannot "
                         f"split its {last} steps into {parts} parts (cuts at "
                         f"{', '.join(str(c) for c in cuts[1:])})")
    at_cuts = np.array([np.nan] + [running[c] for c in cuts[1:]])
    means = window_means(np.array(cuts, float), at_cuts)
    return Trajectory(tuple(float(v) for v in means[1:]))


def regime_section(groups: Mapping[str, Mapping[int, RunRows]], decimals: int = 3) -> str:
    """Markdown: each method's effective ratio of generated groups by third of its steps, mean
    over seeds [95% t-interval], and for vanilla how many seeds meet the regime rule."""
    lines = ["| method | seeds | first third | second third | last third | seeds in the regime |",
             "|---|---|---|---|---|---|"]
    for label, runs in groups.items():
        paths = [table_trajectory(r) for _, r in sorted(runs.items())]
        cells = [mean_interval([t.parts[k] for t in paths]).text(decimals) for k in range(3)]
        regime = (f"{sum(t.in_regime for t in paths)} of {len(paths)}" if label == "vanilla"
                  else "-")
        lines.append(f"| {label} | {len(paths)} | {' | '.join(cells)} | {regime} |")
    return "\n".join(lines) + (
        "\n\nThe share of generated groups with a non-zero advantage, averaged over each third "
        "of a run's steps (from the table's running means at the validations nearest T/3, 2T/3 "
        "and T), mean over seeds "
        f"[95% t-interval]. The regime rule (fixed before calibration): vanilla's last third in "
        f"[{REGIME[0]:.2f}, {REGIME[1]:.2f}] and below its first.\n")
