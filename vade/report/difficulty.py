"""The per-sample view: how the posterior of single items moves, and whom each method selects.

* Heatmap: posterior mean p = (alpha+1)/(alpha+beta+2) over steps (view ``sample_history``) for a
  seeded random sample of items of one VADE-family run, sorted by their initial estimate.
* Selection counts by initial difficulty: items bucketed by their initial accuracy r/G (from the
  initial-difficulty file, else from a VADE run's step-0 snapshot, alpha=r, beta=G-r, which is
  the same for every run of a model), and the mean number of times each method selected an
  item of the bucket. All-wrong (r=0) and all-right (r=G) items are buckets of their own: they
  are the items that give no gradient at the start.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np

from vade.methods import names_where
from vade.report.collect import Inputs
from vade.report.figures import COLORS, save
from vade.report.tables import METHOD_LABELS, _md

__all__ = ["bucket_labels", "bucketize", "heatmap", "selection_counts"]

_VADE_FAMILY = names_where(uses_posterior=True, shaping=None)  # VADE and its ablations


def bucket_labels(edges: Sequence[float]) -> list[str]:
    inner = [0.0, *edges, 1.0]
    return (["r/G = 0"] + [f"{a:g} < r/G <= {b:g}" if b < 1 else f"{a:g} < r/G < 1"
                           for a, b in pairwise(inner)] + ["r/G = 1"])


def bucketize(acc: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """Bucket index of each initial accuracy: 0 for exactly 0, len(edges)+2 for exactly 1."""
    a = np.asarray(acc, dtype=np.float64)
    inner = np.searchsorted(np.asarray(edges, float), a, side="left") + 1
    return np.where(a <= 0, 0, np.where(a >= 1, len(edges) + 2, inner))


def _heatmap_run(inputs: Inputs, wanted: str | None) -> str | None:
    if wanted is not None:
        if wanted not in inputs.runs or inputs.runs[wanted].path is None:
            raise ValueError(f"report.heatmap_run {wanted!r} has no run history")
        return wanted
    for method in _VADE_FAMILY:
        for key in inputs.run_keys():
            if key.method == method and inputs.runs[key.run_id].path is not None:
                return key.run_id
    return None


def heatmap(inputs: Inputs, path: Path, n_items: int, seed: int,
            run: str | None = None) -> tuple[Path, str]:
    """Write the heatmap; return (path, a Markdown note naming the run and the items)."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    rid = _heatmap_run(inputs, run) if inputs.catalog is not None else None
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.24 * n_items + 1.4)))  # ~8 pt row labels
    if rid is None:
        ax.text(0.5, 0.5, "no VADE-family run history", ha="center", va="center")
        ax.set_axis_off()
        return save(fig, path), "No VADE-family run history: heatmap empty."
    con = inputs.catalog
    ids = np.array([r[0] for r in con.execute(
        "SELECT sample_id FROM snapshots WHERE run_id = ? AND step = 0 ORDER BY sample_id",
        [rid]).fetchall()], np.int64)
    chosen = np.sort(np.random.default_rng(seed).choice(ids, size=min(n_items, ids.size),
                                                        replace=False))
    rows = con.execute(
        "SELECT sample_id, step, p_mean FROM sample_history WHERE run_id = ? AND sample_id IN "
        "(SELECT unnest(?)) ORDER BY sample_id, step", [rid, chosen.tolist()]).fetchall()
    steps = np.array(sorted({r[1] for r in rows}), np.int64)
    grid = np.full((chosen.size, steps.size), np.nan)
    where = {int(s): i for i, s in enumerate(chosen)}
    col = {int(s): j for j, s in enumerate(steps)}
    for sid, step, p in rows:
        grid[where[int(sid)], col[int(step)]] = np.nan if p is None else p
    order = np.lexsort((chosen, grid[:, 0]))  # by initial estimate, ties by id
    grid, chosen = grid[order], chosen[order]
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest",
                   extent=(steps[0] - 0.5, steps[-1] + 0.5, chosen.size - 0.5, -0.5))
    ax.set_yticks(range(chosen.size))
    ax.set_yticklabels([f"{s} {inputs.sample_labels.get(int(s), '')}".strip() for s in chosen],
                       fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel("sample id")
    ax.set_title(f"posterior mean p over steps, run {rid}", fontsize=10)
    fig.colorbar(im, ax=ax, label="posterior mean of solve rate")
    fig.tight_layout()
    note = (f"Heatmap: run {rid}, {chosen.size} of {ids.size} items drawn with seed {seed} "
            f"(ids {', '.join(map(str, np.sort(chosen)))}); rows sorted by initial estimate.")
    return save(fig, path), note


def _initial(inputs: Inputs, model: str) -> dict[int, float]:
    if model in inputs.initial_accuracy:
        return inputs.initial_accuracy[model]
    if "*" in inputs.initial_accuracy:
        return inputs.initial_accuracy["*"]
    if inputs.catalog is None:
        return {}
    for key in inputs.run_keys():
        if key.model == model and key.method in _VADE_FAMILY and inputs.runs[key.run_id].path:
            rows = inputs.catalog.execute(
                "SELECT sample_id, alpha / (alpha + beta) FROM snapshots WHERE run_id = ? AND "
                "step = 0 AND alpha + beta > 0", [key.run_id]).fetchall()
            if rows:
                return {int(i): float(a) for i, a in rows}
    return {}


def selection_counts(inputs: Inputs, path: Path, edges: Sequence[float],
                     decimals: int = 2) -> tuple[Path, str]:
    """Mean times selected per item, by initial-difficulty bucket and method (seed mean)."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    labels = bucket_labels(edges)
    sections: list[str] = []
    groups = sorted({(k.model, k.algorithm) for k in inputs.run_keys() if k.method != "base"})
    fig, axes = plt.subplots(max(1, len(groups)), 1, figsize=(9, 3.2 * max(1, len(groups))),
                             squeeze=False)
    for g, (model, algo) in enumerate(groups):
        ax = axes[g][0]
        init = _initial(inputs, model)
        keys = [k for k in inputs.run_keys() if (k.model, k.algorithm) == (model, algo)]
        methods = [m for m in METHOD_LABELS if any(k.method == m for k in keys)]
        if not init:
            sections.append(f"{model} {algo.upper()}: no initial difficulty available "
                            "(no initial.parquet given and no VADE-family snapshot).")
            ax.set_axis_off()
            continue
        sid = np.array(sorted(init), np.int64)
        bucket = bucketize(np.array([init[i] for i in sid]), edges)
        n_per = np.bincount(bucket, minlength=len(labels))
        table: dict[str, list[str]] = {}
        width = 0.8 / max(1, len(methods))
        for j, method in enumerate(methods):
            per_run, used, lacking = [], [], []
            for k in keys:
                if k.method != method:
                    continue
                if inputs.catalog is None or inputs.runs[k.run_id].path is None:
                    lacking.append(f"{k.run_id} ({inputs.runs[k.run_id].status})")
                    continue
                counts = dict(inputs.catalog.execute(
                    "SELECT sample_id, times_selected FROM selection_counts WHERE run_id = ?",
                    [k.run_id]).fetchall())
                c = np.array([counts.get(int(i), 0) for i in sid], float)
                per_run.append(np.bincount(bucket, weights=c, minlength=len(labels))
                               / np.maximum(n_per, 1))
                used.append(k.run_id + ("" if inputs.runs[k.run_id].status == "complete"
                                        else f" ({inputs.runs[k.run_id].status})"))
            name = f"{METHOD_LABELS[method]} [{', '.join(used + lacking)}]"
            if not per_run:
                table[name] = ["missing"] * len(labels)
                continue
            mean = np.mean(per_run, axis=0)
            table[name] = [f"{v:.{decimals}f}" if n else "-" for v, n in zip(mean, n_per)]
            ax.bar(np.arange(len(labels)) + (j - (len(methods) - 1) / 2) * width, mean, width,
                   color=COLORS.get(method, "gray"), label=f"{METHOD_LABELS[method]} "
                   f"({len(used)} run{'s' if len(used) != 1 else ''})")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("mean times selected")
        ax.set_title(f"{model} {algo.upper()}: selections by initial difficulty", fontsize=9)
        if ax.patches:
            ax.legend(fontsize=7)
        header = ["initial difficulty", "items", *table]
        body = [[lab, str(int(n)), *[table[m][b] for m in table]]
                for b, (lab, n) in enumerate(zip(labels, n_per))]
        sections.append(f"**{model} {algo.upper()}** (mean times selected per item; runs in "
                        f"brackets)\n\n{_md(header, body)}")
    if not groups:
        axes[0][0].text(0.5, 0.5, "no training runs", ha="center", va="center")
        axes[0][0].set_axis_off()
    fig.tight_layout()
    return save(fig, path), "\n\n".join(sections)
