"""Figures 1, 3 and 4 of the paper from run curves (matplotlib, Agg backend, PNG).

One file per figure, one row of panels per (model, algorithm), one line per run (colour = method,
line style = seed), so every plotted line is a run id in the legend. A run that should be in a
panel but has no curve is written into the panel as "missing: <run ids>", never left out
silently. Files are written to a temporary name and renamed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from vade.report.collect import Inputs

__all__ = ["COLORS", "figure1", "figure3", "figure4", "save"]

COLORS = {"vanilla": "tab:blue", "dapo": "tab:orange", "vade": "tab:red",
          "symmetric": "tab:green", "greedy": "tab:purple", "last-update": "tab:brown"}
_STYLES = ("-", "--", ":", "-.")
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


def _panel(ax, inputs: Inputs, model: str, algo: str, methods: Sequence[str], metric: str,
           x: str, ylabel: str) -> None:
    missing = []
    for key in inputs.run_keys():
        if (key.model, key.algorithm) != (model, algo) or key.method not in methods:
            continue
        curve = inputs.runs[key.run_id].curves.get(metric)
        if curve is None or curve.step.size == 0:
            missing.append(key.run_id)
            continue
        xs = curve.step if x == "step" else curve.rollouts
        ax.plot(xs, curve.value, color=COLORS.get(key.method, "black"),
                linestyle=_STYLES[key.seed % len(_STYLES)], marker="." if xs.size < 40 else None,
                label=key.run_id + ("" if inputs.runs[key.run_id].status == "complete"
                                    else f" ({inputs.runs[key.run_id].status})"))
    ax.set_xlabel("step" if x == "step" else "cumulative rollouts")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{model} {algo.upper()}: {ylabel}", fontsize=9)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=6)
    if missing:
        ax.text(0.02, 0.02, "missing: " + ", ".join(missing), transform=ax.transAxes,
                fontsize=6, color="crimson", va="bottom", wrap=True)


def _grid(inputs: Inputs, methods: Sequence[str], panels: Sequence[tuple[str, str, str]],
          title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = _pairs(inputs, methods)
    nrows = max(1, len(pairs))
    fig, axes = plt.subplots(nrows, len(panels), figsize=(4.2 * len(panels), 3.2 * nrows),
                             squeeze=False)
    if not pairs:
        for ax in axes[0]:
            ax.text(0.5, 0.5, f"no runs of {', '.join(methods)}", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
    for row, (model, algo) in enumerate(pairs):
        for col, (metric, x, ylabel) in enumerate(panels):
            _panel(axes[row][col], inputs, model, algo, methods, metric, x, ylabel)
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
    return _grid(inputs, ("vanilla", "vade"),
                 [(val_metric, "step", "validation score"),
                  ("effective_ratio", "step", "effective gradient ratio"),
                  (grad_metric, "step", "actor grad norm")],
                 "Figure 3: training dynamics, vanilla vs VADE", path)


def figure4(inputs: Inputs, path: Path, val_metric: str) -> Path:
    """Validation score vs cumulative rollouts; cumulative rollouts vs step (paper Figure 4)."""
    return _grid(inputs, ("dapo", "vade"),
                 [(val_metric, "rollouts", "validation score"),
                  ("rollouts_cumulative", "step", "cumulative rollouts")],
                 "Figure 4: DAPO vs VADE rollout efficiency", path)
