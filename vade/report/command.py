"""``vade report``: Tables 1, 2, 5, Figures 1, 3, 4, the rollout headline and the per-sample view.

Reads run histories and evaluation files (as named: the workflow names the grid's files, never a
folder, so stale files are not read; a folder given by hand means every file in it) and, for
metrics a history lacks (e.g. verl metrics other than the pooled ``val/acc``), MLflow. Writes
``<out>/report.md``, the same as one self-contained ``<out>/report.html`` (figures embedded),
``<out>/tables/*.html`` (one page per table) and ``<out>/figures/*.png``: fixed names, the items
of ``snakemake --report``. Same inputs give the same files, byte for byte: nothing
time-dependent is printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from vade.config_io import add_config_arguments, load_config, section
from vade.report import difficulty as diff
from vade.report import figures, tables
from vade.report.collect import collect
from vade.report.config import ReportConfig, expected_runs, table_columns
from vade.report.export import read_table, table_rows, write_table
from vade.report.figures import VAL_ITEMS
from vade.report.html import write_page
from vade.report.numbers import section as numbers_section
from vade.report.peers import peer_statistics
from vade.report.seeds import seed_statistics

__all__ = ["FIGURES", "TABLES", "add_arguments", "build_report", "run"]

FIGURES = ("figure1.png", "figure3.png", "figure4.png", "difficulty_heatmap.png",
           "selection_counts.png")
TABLES = ("runs.html", "table1.html", "table2.html", "table5.html", "headline.html",
          "seeds.html", "preregistered.html", "per_run.csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, required=False)
    parser.add_argument("--runs", nargs="+", default=[], metavar="PATH",
                        help="run histories: history.duckdb files or the runs/ directory")
    parser.add_argument("--evals", nargs="*", default=[], metavar="PATH",
                        help="evaluation DuckDB files or the eval/ directory")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="report directory (report.md, figures/)")
    parser.add_argument("--samples", metavar="FILE", help="samples.duckdb (item domains)")
    parser.add_argument("--difficulty", nargs="*", default=[], metavar="FILE",
                        help="initial difficulty parquet files "
                             "(difficulty/<model>/initial.parquet)")
    parser.add_argument("--expect", nargs="*", default=[], metavar="RUN_ID",
                        help="run ids that must appear (shown as missing when absent); added to "
                             "those of the config's experiments section")
    parser.add_argument("--mlflow-uri", default=os.environ.get("MLFLOW_TRACKING_URI"),
                        help="read metrics a history lacks from MLflow (default: "
                             "$MLFLOW_TRACKING_URI; unset = DuckDB only)")
    parser.add_argument("--mlflow-experiment", default=os.environ.get("MLFLOW_EXPERIMENT_NAME"),
                        help="MLflow experiment (default: $MLFLOW_EXPERIMENT_NAME, else name)")


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def build_report(*, name: str, cfg, runs, evals, out: Path, samples=None, difficulty=(),
                 expected=(), mlflow_uri=None, mlflow_experiment=None,
                 sampler_lab: bool = False) -> Path:
    """Collect, render and write the report; return the Markdown path. ``sampler_lab``: the
    workflow also writes the sampler lab (``simulate.enabled``) beside the report, under
    ``simulate/``, and the report links its page."""
    inputs = collect(runs=runs, evals=evals, expected=expected,
                     metric_names=[cfg.val_metric, cfg.grad_norm_metric, VAL_ITEMS],
                     mlflow_uri=mlflow_uri, mlflow_experiment=mlflow_experiment or name,
                     difficulty=difficulty, samples=samples, benchmarks=cfg.benchmarks)
    fig_dir = out / "figures"
    figures.figure1(inputs, fig_dir / "figure1.png")
    figures.figure3(inputs, fig_dir / "figure3.png", cfg.val_metric, cfg.grad_norm_metric)
    figures.figure4(inputs, fig_dir / "figure4.png", cfg.val_metric, cost_axis=cfg.cost_axis)
    _, heat_note = diff.heatmap(inputs, fig_dir / "difficulty_heatmap.png",
                                cfg.heatmap_samples, cfg.seed, cfg.heatmap_run)
    _, sel_text = diff.selection_counts(inputs, fig_dir / "selection_counts.png",
                                        cfg.difficulty_buckets, cfg.decimals)
    d, paper_on = cfg.decimals, cfg.paper_comparison
    table_md = {
        "runs.html": ("Runs", tables.inventory(inputs)),
        "table1.html": ("Table 1", tables.table1(inputs, d, paper_on)),
        "table2.html": ("Table 2", tables.table2(inputs, d, paper_on)),
        "table5.html": ("Table 5", tables.table5(inputs, d, paper_on)),
        "headline.html": ("Headline", tables.headline(inputs, cfg.val_metric,
                                                      cfg.headline_fraction, d)),
        "seeds.html": ("Statistics over seeds", seed_statistics(
            inputs, cfg.val_metric, cfg.headline_fraction, d, cfg.cost_axis)
            + "\n" + peer_statistics(inputs, cfg.val_metric, cfg.headline_fraction, d,
                                     cfg.cost_axis, cfg.plateau_checks)),
    }
    # the per-run table (docs/data/<study>/runs.csv once committed) and the pre-registered
    # section computed from it read back: the numbers the docs quote, by the same code
    per_run = write_table(out / "tables" / "per_run.csv",
                          table_rows(inputs, name, cfg.val_metric, cfg.cost_axis))
    table_md["preregistered.html"] = ("Pre-registered estimators", "## Pre-registered "
                                      "estimators (from tables/per_run.csv)\n\n" + numbers_section(
        read_table(per_run), fraction=cfg.headline_fraction, grid_step=cfg.rollout_grid,
        plateau_checks=cfg.plateau_checks, decimals=d, family=cfg.family))
    for file, (title, text) in table_md.items():
        write_page(out / "tables" / file, text, f"{name}: {title}")
    parts = [
        f"# VADE report: {name}",
        "",
        "Generated by `vade report` from the run histories (DuckDB), the evaluation files "
        "(average@k over seeded repeats) and, for metrics a history lacks, MLflow. Every row "
        "names the run ids it comes from; runs that are expected but absent are shown as "
        "missing." + (" Paper numbers are printed beside ours ('↳ paper' rows)." if paper_on
                      else ""),
        "",
        table_md["runs.html"][1],
        "## Tables",
        "",
        table_md["table1.html"][1],
        table_md["table2.html"][1],
        table_md["table5.html"][1],
        table_md["headline.html"][1],
        table_md["seeds.html"][1],
        table_md["preregistered.html"][1],
        "## Figures",
        "",
        "![Figure 1](figures/figure1.png)",
        "",
        ("Figure 1: effective-gradient ratio per step (share of the batch whose rollouts are "
         "neither all right nor all wrong), vanilla vs VADE."),
        "",
        "![Figure 3](figures/figure3.png)",
        "",
        (f"Figure 3: validation score ('{cfg.val_metric}'; band: 95% interval of one score "
         f"where the history logs its item count), effective-gradient ratio and actor "
         f"gradient norm ('{cfg.grad_norm_metric}') against step; vanilla vs VADE (and "
         "DIVA-GRPO where run)."),
        "",
        "![Figure 4](figures/figure4.png)",
        "",
        ("Figure 4: (a) validation score against cumulative rollouts (from 0: validation "
         "before training); (b) cumulative rollouts against step, DAPO vs VADE (and DIVA-GRPO, "
         "whose variants count as rollouts, and the peer samplers, where run). Cost axis "
         f"'{cfg.cost_axis}' (report.cost_axis): "
         + ("every rollout a method consumed or needed: generated (filtered ones included), "
            "the initial difficulty rollouts (G per training sample, Algorithm 1 lines 1-2) of "
            "the methods that start from them, and MMR1's published re-scoring (8 rollouts per "
            "prompt every 4 steps)" if cfg.cost_axis == "all"
            else "the rollouts each training run generated")
         + "; the headline gives VADE's ratio both ways."),
        "",
        "## Per-sample difficulty",
        "",
        "![posterior heatmap](figures/difficulty_heatmap.png)",
        "",
        heat_note,
        "",
        "![selection counts](figures/selection_counts.png)",
        "",
        sel_text or "No training runs.",
        "",
    ]
    if sampler_lab:
        parts += ["## Sampler lab", "",
                  ("The samplers compared on a simulated environment, without training "
                   "(`vade simulate`): [its summary, with its figures](simulate/summary.html) "
                   "(in Snakemake's HTML report: the 'Sampler lab' items)."), ""]
    if inputs.notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in inputs.notes] + [""]
    md = out / "report.md"
    _write_text(md, "\n".join(parts))
    write_page(out / "report.html", "\n".join(parts), f"VADE report: {name}", images_from=out)
    if inputs.catalog is not None:
        inputs.catalog.close()
    return md


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    cfg = ReportConfig.from_dict(section(config, "report", required=False))
    cfg = dataclasses.replace(cfg, benchmarks=table_columns(config, cfg))
    name = str(config.get("name") or Path(args.out).name)
    expected = list(dict.fromkeys([*expected_runs(config), *args.expect]))
    md = build_report(name=name, cfg=cfg, runs=args.runs, evals=args.evals, out=Path(args.out),
                      samples=args.samples, difficulty=args.difficulty, expected=expected,
                      mlflow_uri=args.mlflow_uri, mlflow_experiment=args.mlflow_experiment,
                      sampler_lab=bool((config.get("simulate") or {}).get("enabled")))
    print(f"wrote {md}, {md.with_suffix('.html')}, {len(TABLES)} tables under "
          f"{md.parent / 'tables'} and {len(FIGURES)} figures under {md.parent / 'figures'}")
    return 0
