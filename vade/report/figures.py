"""Figures 1, 3 and 4 of the paper from run curves (matplotlib, Agg backend, PNG).

One file per figure, one row of panels per (model, algorithm), one line per run (colour and line
style = method, from the method table's palette: a variant shares its parent's colour with a style
of its own), so every plotted line is a run in the legend (``<method> s<seed>``; the panel
title names model and algorithm). When a panel holds several seeds of a method, the method is drawn
as its mean over seeds with a 95% t-interval band over seeds (``vade.report.stats``), each seed a
thin faint line beneath (legend: ``<method> mean of k seeds``). Validation scores carry a 95% band (binomial standard error over
the ``val/n`` validation items, where the history logs it) and an axis at least
``MIN_SCORE_SPAN`` tall, so noise is not drawn as a trend. A run that should be in a
panel but has no curve is written into the panel as "missing:" and its method and seeds, never
left out silently. Files are written to a temporary name and renamed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from vade.methods import METHODS, names_where
from vade.report.collect import Inputs, RunKey
from vade.report.stats import mean_interval

__all__ = ["COLORS", "MIN_SCORE_SPAN", "STYLES", "VAL_ITEMS", "figure1", "figure3", "figure4",
           "min_span", "save", "seed_band"]

COLORS = {m.name: m.colour for m in METHODS.values()}
STYLES = {m.name: m.linestyle for m in METHODS.values()}
DIVA = names_where(shaping="diva")  # drawn where run: each step pays for originals and variants
PEERS = names_where(chooser="peer")  # Figure 4 draws them where run (docs/methods.md)
VAL_ITEMS = "val/n"      # metric: validation items behind each score (the band's n)
MIN_SCORE_SPAN = 0.1     # smallest y range of a score panel (one tiny score's SE is ~0.04)
_PNG_META = {"Software": None}  # no library version in the file: same inputs, same bytes


def save(fig, path: Path, text: Mapping[str, str] | None = None) -> Path:
    """Write atomically; ``text``: extra PNG text chunks (e.g. what the figure was drawn from)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    fig.savefig(tmp, dpi=110, metadata={**_PNG_META, **(text or {})})
    os.replace(tmp, path)
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    plt.close(fig)
    return path


def _pairs(inputs: Inputs, methods: Sequence[str]) -> list[tuple[str, str]]:
    return sorted({(k.model, k.algorithm) for k in inputs.run_keys() if k.method in methods})


def _label(inputs: Inputs, key) -> str:
    """``<method> s<seed>``: the panel title names model and algorithm, so this is the run id."""
    status = inputs.runs[key.run_id].status
    return f"{key.method} s{key.seed}" + ("" if status == "complete" else f" ({status})")


def _score_band(ax, inputs: Inputs, key, curve, xs, color: str) -> None:
    """±1.96 standard errors of a mean over ``val/n`` items (binomial), where ``val/n`` is logged."""
    items = inputs.runs[key.run_id].curves.get(VAL_ITEMS)
    if items is None:
        return
    n = dict(zip(items.step.tolist(), items.value.tolist()))
    n_at = np.array([n.get(int(s), np.nan) for s in curve.step], float)
    p = np.clip(curve.value, 0.0, 1.0)
    half = 1.96 * np.sqrt(p * (1 - p) / n_at)
    ok = np.isfinite(half) & np.isfinite(xs)
    if ok.any():
        ax.fill_between(xs[ok], (curve.value - half)[ok], (curve.value + half)[ok], color=color,
                        alpha=0.15, linewidth=0)


def seed_band(curves: Sequence, x: str) -> tuple:
    """(x, mean, low, high) over seeds at each step that at least two seeds have (a lone seed:
    its own steps, no band); x = the step, or the mean over seeds of the cumulative rollouts at
    that step."""
    at: dict[int, list[tuple[float, float]]] = {}
    for c in curves:
        for step, value, rollouts in zip(c.step.tolist(), c.value.tolist(), c.rollouts.tolist()):
            at.setdefault(int(step), []).append((value, rollouts))
    steps = sorted(s for s, v in at.items() if len(v) >= min(2, len(curves)))
    ivs = [mean_interval([v for v, _ in at[s]]) for s in steps]
    xs = [float(s) if x == "step" else float(np.nanmean([r for _, r in at[s]])) for s in steps]
    return (np.array(xs), np.array([i.mean for i in ivs]), np.array([i.low for i in ivs]),
            np.array([i.high for i in ivs]))


def _panel(ax, inputs: Inputs, model: str, algo: str, methods: Sequence[str], metric: str,
           x: str, ylabel: str, score: bool, cost_axis: str = "generated") -> None:
    """``cost_axis``: what the rollouts count (``vade.report.cost``; x = rollouts, or the
    cumulative-rollouts curve itself): ``all`` adds what each method consumed or needed
    besides its generated rollouts."""
    missing = []
    by_method: dict[str, list] = {}
    for key in inputs.run_keys():
        if (key.model, key.algorithm) != (model, algo) or key.method not in methods:
            continue
        curve = inputs.runs[key.run_id].curves.get(metric)
        if curve is None or curve.step.size == 0:
            missing.append(key)
            continue
        if cost_axis != "generated":
            cost = inputs.cost(key, curve, cost_axis)
            curve = replace(curve, rollouts=cost,
                            value=cost if metric == "rollouts_cumulative" else curve.value)
        by_method.setdefault(key.method, []).append((key, curve))
    over_seeds = any(len(v) > 1 for v in by_method.values())
    for method, runs in by_method.items():
        color, style = COLORS.get(method, "black"), STYLES.get(method, "-")
        for key, curve in runs:
            xs = curve.step if x == "step" else curve.rollouts
            if over_seeds:  # each seed faint; the mean and its band carry the legend
                ax.plot(xs, curve.value, color=color, linestyle=style, lw=0.6, alpha=0.3)
                continue
            ax.plot(xs, curve.value, color=color, linestyle=style,
                    marker="." if xs.size < 40 else None, label=_label(inputs, key))
            if score:
                _score_band(ax, inputs, key, curve, xs.astype(float), color)
        if over_seeds:
            bx, mean, low, high = seed_band([c for _, c in runs], x)
            ax.plot(bx, mean, color=color, linestyle=style, lw=1.8,
                    marker="." if bx.size < 40 else None,
                    label=f"{method} mean of {len(runs)} seeds")
            ax.fill_between(bx, low, high, color=color, alpha=0.2, linewidth=0)
    ax.set_xlabel("step" if x == "step" else "cumulative rollouts", fontsize=10)
    ax.set_ylabel(ylabel, fontsize=10)
    ax.set_title(f"{model} {algo.upper()}: {ylabel}", fontsize=10)
    ax.tick_params(labelsize=9)
    ax.grid(alpha=0.3)
    ax.set_xlim(left=0)  # curves start at step 0 / no rollouts
    if score and ax.lines:
        min_span(ax, MIN_SCORE_SPAN)
    handles = ax.get_legend_handles_labels()[0]
    if len(handles) > 4:  # many methods: beside the panel, not over the curves
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    elif handles:
        ax.legend(fontsize=8)
    if missing:
        ax.text(0.02, 0.02, missing_text(missing), transform=ax.transAxes, fontsize=8,
                color="crimson", va="bottom")


def missing_text(keys: Sequence[RunKey]) -> str:
    """'missing:' and one line per method with its seeds as ranges ('vade s12-s15'): a long
    study's unfinished runs stay readable inside a panel."""
    seeds: dict[str, list[int]] = {}
    for key in keys:
        seeds.setdefault(key.method, []).append(key.seed)
    lines = []
    for method, got in seeds.items():
        runs: list[list[int]] = []
        for s in sorted(got):
            if runs and s == runs[-1][-1] + 1:
                runs[-1].append(s)
            else:
                runs.append([s])
        text = ", ".join(f"s{r[0]}" if len(r) == 1 else f"s{r[0]}-s{r[-1]}" for r in runs
                         if r[0] >= 0)
        lines.append(f"{method} {text}".strip())
    return "missing: " + "\n".join(lines)


def min_span(ax, span: float) -> None:
    """Keep a score axis at least ``span`` tall (within [0, 1]): differences far below one score's
    standard error must not fill the panel."""
    lo, hi = ax.get_ylim()
    if hi - lo >= span:
        return
    mid = (lo + hi) / 2
    lo, hi = max(0.0, mid - span / 2), min(1.0, mid + span / 2)
    if hi - lo < span:  # pressed against 0 or 1
        lo, hi = (0.0, span) if lo == 0.0 else (1.0 - span, 1.0)
    ax.set_ylim(lo, hi)


def _grid(inputs: Inputs, methods: Sequence[str], panels: Sequence[tuple[str, str, str]],
          title: str, path: Path, score_metric: str | None = None,
          cost_axis: str = "generated") -> Path:
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    pairs = _pairs(inputs, methods)
    nrows = max(1, len(pairs))
    fig, axes = plt.subplots(nrows, len(panels), figsize=(5.0 * len(panels), 3.8 * nrows),
                             squeeze=False)
    if not pairs:
        for ax in axes[0]:
            ax.text(0.5, 0.5, f"no runs of {', '.join(methods)}", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
    for row, (model, algo) in enumerate(pairs):
        for col, (metric, x, ylabel) in enumerate(panels):
            _panel(axes[row][col], inputs, model, algo, methods, metric, x, ylabel,
                   score=metric == score_metric, cost_axis=cost_axis)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return save(fig, path)


def figure1(inputs: Inputs, path: Path) -> Path:
    """Effective-gradient ratio per step, vanilla vs VADE (paper Figure 1)."""
    return _grid(inputs, ("vanilla", "vade"),
                 [("effective_ratio", "step", "effective gradient ratio")],
                 "Figure 1: share of the batch with non-zero advantage", path)


def figure3(inputs: Inputs, path: Path, val_metric: str, grad_metric: str) -> Path:
    """Validation score, effective ratio and actor grad norm vs step (paper Figure 3)."""
    return _grid(inputs, ("vanilla", "vade", *DIVA),
                 [(val_metric, "step", "validation score"),
                  ("effective_ratio", "step", "effective gradient ratio"),
                  (grad_metric, "step", "actor grad norm")],
                 "Figure 3: training dynamics, vanilla vs VADE", path, score_metric=val_metric)


def figure4(inputs: Inputs, path: Path, val_metric: str, cost_axis: str = "all") -> Path:
    """Validation score vs cumulative rollouts; cumulative rollouts vs step (paper Figure 4),
    on the report's cost axis (the title says which)."""
    title = "Figure 4: rollout efficiency of DAPO, VADE and the others run" + (
        " (every rollout consumed or needed)" if cost_axis == "all"
        else " (generated rollouts only)")
    return _grid(inputs, ("dapo", "vade", *DIVA, *PEERS),
                 [(val_metric, "rollouts", "validation score"),
                  ("rollouts_cumulative", "step", "cumulative rollouts")],
                 title, path, score_metric=val_metric, cost_axis=cost_axis)
