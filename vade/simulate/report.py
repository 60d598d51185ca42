"""Write a comparison: CSV files, one DuckDB file, PNG plots (matplotlib, Agg backend).

Tables (same columns in CSV and DuckDB, ``simulate.duckdb``):

* ``sim_steps``    one row per (method, seed, step): the per-step curves.
* ``sim_summary``  one row per method: seed mean/min/max of the headline numbers.
* ``sim_sweep``    one row per (lambda1, lambda2) of the sweep (absent with ``--no-sweep``).
* ``sim_config``   the validated config as JSON, so a table is never read without its model.

DuckDB, pyarrow and matplotlib are imported inside the functions: importing this module is cheap.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from vade.methods import METHODS
from vade.simulate.compare import Comparison, SweepResult
from vade.simulate.runner import CURVES
from vade.store.file_format import connect_for_writing

__all__ = ["format_table", "plot_curves", "plot_sweep", "summary_page", "write_tables"]


def _steps_columns(comp: Comparison) -> dict[str, Any]:
    cols: dict[str, list[Any]] = {"method": [], "seed": [], "step": []}
    arrays: dict[str, list[np.ndarray]] = {k: [] for k in CURVES}
    for method in comp.methods:
        c = comp.curves[method]
        n_seeds, steps = c["effective_ratio"].shape
        cols["method"] += [method] * (n_seeds * steps)
        cols["seed"].append(np.repeat(np.asarray(comp.seeds), steps))
        cols["step"].append(np.tile(np.arange(1, steps + 1), n_seeds))
        for k in CURVES:
            arrays[k].append(c[k].ravel())
    out: dict[str, Any] = {"method": cols["method"],
                           "seed": np.concatenate(cols["seed"]).astype(np.int64),
                           "step": np.concatenate(cols["step"]).astype(np.int64)}
    for k in CURVES:
        v = np.concatenate(arrays[k])
        out[k] = v.astype(np.int64) if k in ("rollouts", "cumulative_rollouts",
                                            "n_trained") else v
    return out


def _sweep_columns(sweep: SweepResult) -> dict[str, Any]:
    l1, l2 = np.meshgrid(sweep.lambda1, sweep.lambda2, indexing="ij")
    return {"method": [sweep.method] * l1.size, "lambda1": l1.ravel(), "lambda2": l2.ravel(),
            "mean_effective_ratio": sweep.mean_ratio.ravel(),
            "final_pass_rate": sweep.final_pass_rate.ravel(),
            "rollouts_to_target": sweep.rollouts_to_target.ravel()}


def write_tables(out_dir: Path, comp: Comparison, summary: list[dict[str, Any]],
                 sweep: SweepResult | None, config: dict[str, Any]) -> dict[str, Path]:
    """Write ``sim_*`` tables to ``out_dir/simulate.duckdb`` and one CSV each."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {
        "sim_steps": pa.table(_steps_columns(comp)),
        "sim_summary": pa.Table.from_pylist(summary),
        "sim_config": pa.table({"config": [json.dumps(config, sort_keys=True)]}),
    }
    if sweep is not None:
        tables["sim_sweep"] = pa.table(_sweep_columns(sweep))
    db = out_dir / "simulate.duckdb"
    paths = {"duckdb": db}
    with connect_for_writing(db) as con:
        con.execute("DROP TABLE IF EXISTS sim_sweep")  # a --no-sweep run leaves none behind
        for name, table in tables.items():
            con.register("incoming", table)
            con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM incoming")
            con.unregister("incoming")
            if name != "sim_config":
                csv = out_dir / f"{name}.csv"
                con.execute(f"COPY {name} TO '{csv.as_posix()}' (HEADER, DELIMITER ',')")
                paths[name] = csv
    return paths


def _band(ax: Any, x: np.ndarray, y: np.ndarray, method: str) -> None:
    """Seed mean as a line, min-max over seeds as a shaded band, in the method's colour and
    line style (the method table's palette, as in the report's figures)."""
    row = METHODS[method]
    ax.plot(x.mean(axis=0), y.mean(axis=0), label=method, color=row.colour,
            linestyle=row.linestyle, lw=1.4)
    ax.fill_between(x.mean(axis=0), y.min(axis=0), y.max(axis=0), color=row.colour, alpha=0.18,
                    lw=0)


def plot_curves(path: Path, comp: Comparison) -> Path:
    """Effective ratio per step (Fig. 1), pass rate per rollout (Fig. 4a), rollouts (Fig. 4b)."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), constrained_layout=True)
    for method in comp.methods:
        c = comp.curves[method]
        _band(axes[0], c["step"], c["effective_ratio"], method)
        _band(axes[1], c["cumulative_rollouts"] / 1e6, c["mean_pass_rate"], method)
        _band(axes[2], c["step"], c["cumulative_rollouts"] / 1e6, method)
    axes[1].axhline(float(comp.targets.mean()), color="k", ls=":", lw=1,
                    label="target (99.5% of DAPO best)")
    titles = ("effective-gradient ratio", "mean pass rate vs rollouts", "cumulative rollouts")
    xlabels = ("training step", "rollouts (millions)", "training step")
    ylabels = ("share of groups with 0 < r < G", "mean true pass rate", "rollouts (millions)")
    for ax, title, xl, yl in zip(axes, titles, xlabels, ylabels):
        ax.set_title(title)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, 1.02)
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"simulated samplers: mean and min-max over {len(comp.seeds)} seeds")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sweep(path: Path, sweep: SweepResult) -> Path:
    """Heatmaps over (lambda1, lambda2): mean effective ratio and rollouts to target."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    panels = (("mean effective ratio", sweep.mean_ratio, "{:.2f}", 1.0),
              ("rollouts to target (millions)", sweep.rollouts_to_target, "{:.2f}", 1e-6))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
    for ax, (title, values, fmt, scale) in zip(axes, panels):
        shown = values * scale
        im = ax.imshow(shown, origin="lower", aspect="auto", cmap="viridis")
        fig.colorbar(im, ax=ax)
        mid = np.nanmean(shown) if np.isfinite(shown).any() else 0.0
        for (i, j), v in np.ndenumerate(shown):
            ax.text(j, i, "n/r" if math.isnan(v) else fmt.format(v), ha="center", va="center",
                    color="k" if v > mid else "w", fontsize=8)  # readable on light and dark
        ax.set_xticks(range(len(sweep.lambda2)), [f"{v:g}" for v in sweep.lambda2])
        ax.set_yticks(range(len(sweep.lambda1)), [f"{v:g}" for v in sweep.lambda1])
        ax.set_xlabel("lambda2 (unselected samples)")
        ax.set_ylabel("lambda1 (selected samples)")
        ax.set_title(title)
    fig.suptitle(f"{sweep.method}: lambda1 x lambda2 (n/r: target not reached)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _fmt(v: float, scale: float = 1.0, digits: int = 2) -> str:
    return "n/r" if math.isnan(v) else f"{v * scale:.{digits}f}"


SUMMARY_COLUMNS = ("method", "ratio early", "ratio late", "final pass", "rollouts M",
                   "to target M [min, max]", "reached")


def _summary_cells(r: dict[str, Any]) -> list[str]:
    """One summary row's cells (rollouts in millions; [min, max] over seeds)."""
    span = (f"{_fmt(r['rollouts_to_target'], 1e-6)} "
            f"[{_fmt(r['rollouts_to_target_min'], 1e-6)}, "
            f"{_fmt(r['rollouts_to_target_max'], 1e-6)}]")
    return [r["method"], f"{r['ratio_early']:.2f}", f"{r['ratio_late']:.2f}",
            f"{r['final_pass_rate']:.3f}", f"{r['total_rollouts'] / 1e6:.2f}", span,
            f"{r['seeds_reached']}/{r['seeds']}"]


def format_table(summary: list[dict[str, Any]]) -> str:
    """The summary as a fixed-width text table, for the terminal."""
    widths = (12, 11, 10, 10, 10, 24, 7)
    head = " ".join(f"{c:<{w}}" if k == 0 else f"{c:>{w}}"
                    for k, (c, w) in enumerate(zip(SUMMARY_COLUMNS, widths)))
    lines = [head, "-" * len(head)]
    for r in summary:
        lines.append(" ".join(f"{c:<{w}}" if k == 0 else f"{c:>{w}}"
                              for k, (c, w) in enumerate(zip(_summary_cells(r), widths))))
    return "\n".join(lines)


def summary_page(setup: str, summary: list[dict[str, Any]], sweep: bool) -> str:
    """``summary.html``'s Markdown: the summary as a table, then the figures (``curves.png``,
    and ``sweep.png`` when the sweep ran), which ``write_page`` embeds as the report does."""
    rows = [SUMMARY_COLUMNS, ["---"] + ["---:"] * 4 + ["---", "---:"],
            *(_summary_cells(r) for r in summary)]
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    parts = ["# Sampler lab: summary", "", setup, "", table, "",
             "Rollouts in millions; [min, max] over seeds; n/r: the target was not reached.", "",
             "![curves](curves.png)", "",
             ("Effective-gradient ratio per step, mean pass rate against rollouts and "
              "cumulative rollouts per step: seed mean as a line, min-max over seeds as a band.")]
    if sweep:
        parts += ["", "![sweep](sweep.png)", "",
                  "VADE over lambda1 x lambda2: mean effective ratio and rollouts to target."]
    return "\n".join(parts) + "\n"
