"""Figures 1, 3 and 4 of the paper from run curves (matplotlib, Agg backend, PNG).

One file per figure, one row of panels per (model, algorithm), one line per run (colour = method,
line style = seed), so every plotted line is a run in the legend (``<method> s<seed>``; the panel
title names model and algorithm). Validation scores carry a 95% band (binomial standard error over
the ``val/n`` validation items, where the history logs it) and an axis at least
``MIN_SCORE_SPAN`` tall, so noise is not drawn as a trend. A run that should be in a
panel but has no curve is written into the panel as "missing: <run ids>", never left out
silently. Files are written to a temporary name and renamed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from vade.report.collect import Inputs

__all__ = ["COLORS", "MIN_SCORE_SPAN", "VAL_ITEMS", "figure1", "figure3", "figure4", "save"]

COLORS = {"vanilla": "tab:blue", "dapo": "tab:orange", "vade": "tab:red",
          "symmetric": "tab:green", "greedy": "tab:purple", "last-update": "tab:brown",
          "diva": "tab:cyan", "vade-diva": "tab:pink"}
_STYLES = ("-", "--", ":", "-.")
DIVA = ("diva", "vade-diva")  # drawn where run: each step pays for originals and variants
VAL_ITEMS = "val/n"      # metric: validation items behind each score (the band's n)
MIN_SCORE_SPAN = 0.1     # smallest y range of a score panel (one tiny score's SE is ~0.04)
_PNG_META = {"Software": None}  # no library version in the file: same inputs, same bytes


def save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    fig.savefig(tmp, dpi=110, metadata=_PNG_META)
    os.replace(tmp, path)
    import matplotlib.pyplot as plt

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
    import numpy as np

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


def _panel(ax, inputs: Inputs, model: str, algo: str, methods: Sequence[str], metric: str,
           x: str, ylabel: str, score: bool) -> None:
    missing = []
    for key in inputs.run_keys():
        if (key.model, key.algorithm) != (model, algo) or key.method not in methods:
            continue
        curve = inputs.runs[key.run_id].curves.get(metric)
        if curve is None or curve.step.size == 0:
            missing.append(key.run_id)
            continue
        xs = curve.step if x == "step" else curve.rollouts
        color = COLORS.get(key.method, "black")
        ax.plot(xs, curve.value, color=color, linestyle=_STYLES[key.seed % len(_STYLES)],
                marker="." if xs.size < 40 else None, label=_label(inputs, key))
        if score:
            _score_band(ax, inputs, key, curve, xs.astype(float), color)
    ax.set_xlabel("step" if x == "step" else "cumulative rollouts", fontsize=10)
    ax.set_ylabel(ylabel, fontsize=10)
    ax.set_title(f"{model} {algo.upper()}: {ylabel}", fontsize=10)
    ax.tick_params(labelsize=9)
    ax.grid(alpha=0.3)
    ax.set_xlim(left=0)  # curves start at step 0 / no rollouts
    if score and ax.lines:
        _min_span(ax, MIN_SCORE_SPAN)
    if ax.lines:
        ax.legend(fontsize=8, ncol=2 if len(ax.lines) > 4 else 1)
    if missing:
        ax.text(0.02, 0.02, "missing: " + ", ".join(missing), transform=ax.transAxes,
                fontsize=8, color="crimson", va="bottom", wrap=True)


def _min_span(ax, span: float) -> None:
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
          title: str, path: Path, score_metric: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
                   score=metric == score_metric)
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


def figure4(inputs: Inputs, path: Path, val_metric: str) -> Path:
    """Validation score vs cumulative rollouts; cumulative rollouts vs step (paper Figure 4)."""
    return _grid(inputs, ("dapo", "vade", *DIVA),
                 [(val_metric, "rollouts", "validation score"),
                  ("rollouts_cumulative", "step", "cumulative rollouts")],
                 "Figure 4: DAPO vs VADE rollout efficiency", path, score_metric=val_metric)
