"""The results page's figure of a study, drawn from its committed per-run table.

Why from the table and not from the run histories: a figure on the page must be re-drawable
from what is committed (``docs/data/<study>/runs.csv``), like the page's numbers, and must show
what the pre-registered estimators compute, not a different average. So:

* the validation panel puts every run on the pre-registered rollout grid
  (``estimators.on_grid``: linear interpolation between validations, never extrapolated) before
  averaging over seeds: a method validated more often draws no differently;
* the difference panel pairs each method with vanilla seed by seed on that grid: the primary
  comparison (validation at equal rollouts), drawn at every grid point instead of read at one;
* the effective-ratio panel draws, between consecutive validations, the mean share of generated
  groups with a non-zero advantage (solid) and, where a filter makes it differ, of trained
  groups (dashed; DAPO's trained share is 1 by construction): the table keeps running means, so
  each window's mean is recovered from two of them (``export.window_means``).

Each band is a 95% t-interval over seeds, drawn where at least ``BAND_SEEDS`` seeds have the
point (with fewer, t(0.975) of 12.7, 4.3, 3.2 at 2, 3, 4 seeds makes a band wider than the
panel and says nothing); a grid point
or step is drawn only where at least two seeds have it (a method with one seed: its own curve).
The axes are set by the means, not the bands. The rollout axes are logarithmic: DAPO and MMR1
spend up to ten times the rollouts of a 300-step run, and the comparison at equal rollouts lives
in the first tenth of that range (the grid point at 0 rollouts, step 0's score, is left off
them). The PNG records the SHA-256 of
the table(s) it was drawn from, of its options and of the code that computes what it draws
(text chunk ``Source``), so ``vade results check`` can tell a figure that is older than any
of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vade import methods
from vade.report import estimators, export, figures, numbers, stats
from vade.report.estimators import on_grid
from vade.report.export import RunRows, read_tables, window_means
from vade.report.figures import COLORS, MIN_SCORE_SPAN, STYLES, min_span, save
from vade.report.numbers import by_method
from vade.report.stats import mean_interval

__all__ = ["BAND_SEEDS", "REFERENCE", "SOURCE_KEY", "Band", "figure", "grid_band", "paired_band",
           "source_digest", "step_band"]

REFERENCE = "vanilla"   # the method every difference is taken against
BAND_SEEDS = 5          # fewest seeds behind a drawn band
SOURCE_KEY = "Source"   # PNG text chunk: the digest of the table(s) the figure was drawn from


@dataclass(frozen=True)
class Band:
    """Mean over seeds and its 95% t-interval at each x, and how many seeds each point has."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray


def _band(points: Mapping[float, list[float]], seeds: int) -> Band:
    """Aggregate the values at each x, keeping the x that at least min(2, seeds) seeds have."""
    xs = sorted(x for x, v in points.items() if len(v) >= min(2, seeds))
    ivs = [mean_interval(points[x]) for x in xs]
    return Band(np.array(xs, np.float64), np.array([i.mean for i in ivs]),
                np.array([i.low for i in ivs]), np.array([i.high for i in ivs]),
                np.array([i.n for i in ivs], np.int64))


def grid_band(runs: Mapping[int, RunRows], grid_step: float) -> Band:
    """Validation score on the rollout grid (the cost axis), mean over seeds."""
    points: dict[float, list[float]] = {}
    for rows in runs.values():
        for x, y in zip(*on_grid(rows.rollouts, rows.val, grid_step)):
            points.setdefault(float(x), []).append(float(y))
    return _band(points, len(runs))


def paired_band(runs: Mapping[int, RunRows], ref: Mapping[int, RunRows],
                grid_step: float) -> Band:
    """Method minus reference on the rollout grid, paired by seed: at each grid point, the seeds
    whose two runs both reach it."""
    points: dict[float, list[float]] = {}
    seeds = sorted(set(runs) & set(ref))
    for s in seeds:
        xa, ya = on_grid(runs[s].rollouts, runs[s].val, grid_step)
        xb, yb = on_grid(ref[s].rollouts, ref[s].val, grid_step)
        b = dict(zip(xb.tolist(), yb.tolist()))
        for x, y in zip(xa.tolist(), ya.tolist()):
            if x in b:
                points.setdefault(float(x), []).append(y - b[x])
    return _band(points, len(seeds))


def step_band(runs: Mapping[int, RunRows], field: str) -> Band:
    """A running-mean column (``eff_generated``, ``eff_trained``) as the mean over each window
    between validations, plotted at the window's last step; mean over seeds."""
    points: dict[float, list[float]] = {}
    for rows in runs.values():
        for x, y in zip(rows.step.tolist(), window_means(rows.step, getattr(rows, field))):
            if np.isfinite(y):
                points.setdefault(float(x), []).append(float(y))
    return _band(points, len(runs))


# every module whose code decides what the figure shows: drawing, the grid and its
# interpolation, the running-mean windows, the intervals, the method order and colours
_CODE = (__file__, figures.__file__, estimators.__file__, export.__file__, numbers.__file__,
         stats.__file__, methods.__file__)


def source_digest(paths: Sequence[str | Path], *, grid_step: float = 3840.0,
                  title: str | None = None) -> str:
    """SHA-256 over the figure's options, the tables' bytes in order and the code that computes
    what it draws (``_CODE``), each length-prefixed: what ``check`` compares a figure's with,
    so a figure is stale when any of them changed."""
    h = hashlib.sha256()
    for part in [repr((float(grid_step), title)).encode(),
                 *(Path(p).read_bytes() for p in [*paths, *_CODE])]:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return "sha256:" + h.hexdigest()


def _style(label: str) -> tuple[str, object]:
    """A control (``method@study``) keeps its method's colour, dotted."""
    method, _, control = label.partition("@")
    return COLORS.get(method, "black"), (":" if control else STYLES.get(method, "-"))


def _draw(ax, band: Band, label: str, legend: str, *, dashed: bool = False,
          log_x: bool = False) -> None:
    """``label``: the method (or ``method@study``), which sets colour and style; ``legend``:
    the line's text; ``log_x``: leave off x <= 0."""
    color, style = _style(label)
    if log_x:
        band = Band(*(a[band.x > 0] for a in (band.x, band.mean, band.low, band.high, band.n)))
    ax.plot(band.x, band.mean, color=color, linestyle="--" if dashed else style, lw=1.6,
            label=legend)
    wide = band.n >= BAND_SEEDS
    if wide.any():
        ax.fill_between(band.x, band.low, band.high, where=wide, color=color, alpha=0.15,
                        linewidth=0)


def _limits(ax, lo: float | None = None, hi: float | None = None, pad: float = 0.1) -> None:
    """y from the plotted means (lines), padded by ``pad`` of their range, clamped to [lo, hi]."""
    ys = np.concatenate([np.asarray(line.get_ydata(), float) for line in ax.get_lines()]
                        or [np.empty(0)])
    ys = ys[np.isfinite(ys)]
    if ys.size == 0:
        return
    margin = pad * max(float(ys.max() - ys.min()), 0.02)
    bottom, top = float(ys.min()) - margin, float(ys.max()) + margin
    ax.set_ylim(bottom if lo is None else max(lo, bottom), top if hi is None else min(hi, top))


def figure(tables: Sequence[str | Path], path: str | Path, *, grid_step: float = 3840.0,
           title: str | None = None) -> Path:
    """Three panels: validation vs rollouts, method minus vanilla at equal rollouts, effective
    ratio vs step. ``tables``: the study's, then any controls' (labelled ``method@study``)."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load
    from matplotlib.ticker import NullFormatter  # lazy: as above

    groups = by_method(read_tables(tables))
    if not groups:
        raise ValueError(f"no runs in {', '.join(map(str, tables))}")
    fig, (val, diff, eff) = plt.subplots(1, 3, figsize=(16.0, 4.6))
    ref = groups.get(REFERENCE)
    for label, runs in groups.items():
        name = f"{label} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
        _draw(val, grid_band(runs, grid_step), label, name, log_x=True)
        if ref is not None and label != REFERENCE:
            _draw(diff, paired_band(runs, ref, grid_step), label, name, log_x=True)
        gen, trained = step_band(runs, "eff_generated"), step_band(runs, "eff_trained")
        _draw(eff, gen, label, name)
        if gen.x.shape != trained.x.shape or not np.allclose(gen.mean, trained.mean):
            _draw(eff, trained, label, f"{label}, trained groups", dashed=True)
    val.set(xlabel="rollouts (cost axis: every rollout generated or charged; log scale)",
            ylabel="validation score", title="validation, mean over seeds (95% band)")
    _limits(val, 0.0, 1.0)
    min_span(val, MIN_SCORE_SPAN)
    diff.axhline(0.0, color="black", lw=0.8)
    _limits(diff)
    diff.set(xlabel="rollouts (cost axis; log scale)", ylabel=f"difference to {REFERENCE}",
             title=f"minus {REFERENCE} at equal rollouts, paired by seed"
             if ref is not None else f"no {REFERENCE} runs: no paired difference")
    eff.set(xlabel="step", ylabel="effective ratio",
            title="share of groups with a non-zero advantage, per window")
    _limits(eff, 0.0, 1.02)   # DAPO's trained share is 1.0: keep its line inside the panel
    for ax in (val, diff):
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    eff.set_xlim(left=0)
    for ax in (val, diff, eff):
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=9)
    val.legend(fontsize=7, loc="lower right")
    eff.legend(fontsize=7, loc="lower left")
    study = Path(tables[0]).parent.name
    fig.suptitle(title or f"{study}: {sum(len(r) for r in groups.values())} runs "
                 f"(grid {grid_step:,.0f} rollouts, linear interpolation)", fontsize=11)
    fig.tight_layout()
    return save(fig, Path(path), {SOURCE_KEY: source_digest(tables, grid_step=grid_step,
                                                             title=title)})
