"""``vade results``: a study's per-run table and the results-page blocks computed from it.

* ``vade results export --runs DIR --difficulty FILE --out docs/data/<study>/runs.csv``: the
  per-run table (``vade.report.export``) from the run histories;
* ``vade results picks --runs DIR --out docs/data/<study>/picks.csv``: what each run trained
  on, by third of its steps (``vade.report.picks``);
* ``vade results merge NEW --into docs/data/<study>/runs.csv`` (or ``picks.csv``): fold a
  sitting's export into the committed table (``vade.report.table_merge``): runs carried, added,
  or refused when they differ;
* ``vade results show TABLE``: the pre-registered section (``vade.report.numbers``) it gives;
* ``vade results plot TABLE ... --out PNG``: the study's figure (``vade.report.table_figure``):
  validation on the rollout grid, the paired difference to vanilla, the effective ratio;
* ``vade results check [DOC ...]``: every ``<!-- numbers: ... -->`` block and
  ``<!-- figure: ... -->`` of the pages (default docs/results.md) against its table; exit 1
  naming each block or figure that differs;
* ``vade results write [DOC ...]``: rewrite those blocks and redraw those figures;
* ``vade results regime --runs DIR``: each run's effective ratio by third and by tenth of its
  steps, and whether it is in the paper's regime (``vade.report.regime``): the calibration of a
  testbed on vanilla alone;
* ``vade results levels --data data/<name>/train.parquet --difficulty .../initial.parquet``: the
  rank correlation between SEC's levels and the base model's pass rate (``vade.report.levels``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vade.config_io import add_config_arguments, load_config, section
from vade.report import docsync
from vade.report.collect import collect
from vade.report.config import ReportConfig
from vade.report.export import read_tables, table_rows, write_table
from vade.report.levels import level_lines
from vade.report.numbers import section as numbers_section
from vade.report.picks import pick_rows, write_picks
from vade.report.regime import trajectories
from vade.report.table_figure import figure
from vade.report.table_merge import merge_table_files

__all__ = ["add_arguments", "run"]

_DOCS = ["docs/results.md"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ex = sub.add_parser("export", help="write a study's per-run table from its histories")
    add_config_arguments(ex, required=False)
    ex.add_argument("--runs", nargs="+", required=True, metavar="PATH",
                    help="history.duckdb files or a runs/ directory")
    ex.add_argument("--difficulty", nargs="*", default=[], metavar="FILE",
                    help="initial difficulty parquet files (their rollouts are on the cost axis)")
    ex.add_argument("--study", help="study name (default: the config's name)")
    ex.add_argument("--out", required=True, metavar="CSV", help="e.g. docs/data/<study>/runs.csv")
    picks = sub.add_parser("picks", help="what each run trained on, by third of its steps")
    add_config_arguments(picks, required=False)
    picks.add_argument("--runs", nargs="+", required=True, metavar="PATH",
                       help="history.duckdb files or a runs/ directory")
    picks.add_argument("--study", help="study name (default: the config's name)")
    picks.add_argument("--out", required=True, metavar="CSV",
                       help="e.g. docs/data/<study>/picks.csv")
    merge = sub.add_parser("merge", help="fold a new export into the committed per-run table")
    merge.add_argument("new", metavar="NEW", help="a table written by `vade results export`")
    merge.add_argument("--into", required=True, metavar="TABLE",
                       help="the committed table (docs/data/<study>/runs.csv), rewritten whole")
    show = sub.add_parser("show", help="print the pre-registered section of a per-run table")
    show.add_argument("tables", nargs="+", metavar="CSV",
                      help="the study's table, then any control studies' (labelled method@study)")
    add_config_arguments(show, required=False)
    plot = sub.add_parser("plot", help="draw a study's figure from its per-run table(s)")
    plot.add_argument("tables", nargs="+", metavar="CSV",
                      help="the study's table, then any control studies' (labelled method@study)")
    plot.add_argument("--out", required=True, metavar="PNG", help="e.g. docs/figures/<study>.png")
    plot.add_argument("--grid-step", type=float, default=3840.0, metavar="ROLLOUTS",
                      help="the rollout grid the validation curves are put on (default 3840)")
    reg = sub.add_parser("regime", help="effective ratio over training, against the regime rule")
    reg.add_argument("--runs", nargs="+", required=True, metavar="PATH",
                     help="history.duckdb files or a runs/ directory (vanilla's)")
    lev = sub.add_parser("levels", help="rank correlation of SEC's levels with base pass rates")
    lev.add_argument("--data", required=True, metavar="PARQUET", help="the training split")
    lev.add_argument("--difficulty", required=True, metavar="PARQUET",
                     help="the initial difficulty rollouts (difficulty/<model>/initial.parquet)")
    for name, text in (("check", "check the generated blocks and figures of results pages"),
                       ("write", "rewrite the generated blocks and figures of results pages")):
        p = sub.add_parser(name, help=text)
        p.add_argument("docs", nargs="*", default=_DOCS, metavar="DOC")
        p.add_argument("--root", default=".", help="where the tables' paths start")


def _report_config(args: argparse.Namespace) -> tuple[dict, ReportConfig]:
    config = load_config(args)
    return config, ReportConfig.from_dict(section(config, "report", required=False))


def run(args: argparse.Namespace) -> int:
    if args.action in ("export", "picks"):
        config, cfg = _report_config(args)
        study = args.study or config.get("name")
        if not study:
            raise ValueError(f"{args.action} needs --study or a config with a name")
    if args.action == "picks":
        rows = pick_rows(args.runs, str(study))
        path = write_picks(args.out, rows)
        print(f"wrote {path}: {len({r['run_id'] for r in rows})} runs, {len(rows)} rows")
        return 0
    if args.action == "export":
        inputs = collect(runs=args.runs, evals=[], expected=[], metric_names=[cfg.val_metric],
                         difficulty=args.difficulty)
        rows = table_rows(inputs, str(study), cfg.val_metric, cfg.cost_axis)
        path = write_table(args.out, rows)
        print(f"wrote {path}: {len({r['run_id'] for r in rows})} runs, {len(rows)} rows")
        return 0
    if args.action == "merge":
        merged = merge_table_files(args.new, args.into)
        for line in merged.differing:
            print(f"differs: {line}")
        if merged.differing:
            print(f"{args.into} left as it was: {len(merged.differing)} run(s) differ from their "
                  "committed rows (another code version or machine? delete the committed rows "
                  "on purpose, or find why)")
            return 1
        print(f"{args.into}: {len(merged.added)} run(s) added, {len(merged.carried)} carried "
              f"over, {len(merged.agreed)} agree with their committed rows")
        return 0
    if args.action == "show":
        _, cfg = _report_config(args)
        print(numbers_section(read_tables(args.tables), fraction=cfg.headline_fraction,
                              grid_step=cfg.rollout_grid, plateau_checks=cfg.plateau_checks,
                              decimals=cfg.decimals, family=cfg.family), end="")
        return 0
    if args.action == "plot":
        if not args.grid_step > 0:
            raise ValueError(f"--grid-step must be > 0, got {args.grid_step}")
        print(f"wrote {figure(args.tables, args.out, grid_step=args.grid_step)}")
        return 0
    if args.action == "regime":
        inputs = collect(runs=args.runs, evals=[], expected=[], metric_names=[])
        curves = {rid: run.curves["effective_ratio"] for rid, run in inputs.runs.items()
                  if "effective_ratio" in run.curves}
        if not curves:
            raise ValueError(f"no run history with steps in {' '.join(args.runs)}")
        for line in trajectories(curves):
            print(line)
        return 0
    if args.action == "levels":
        for line in level_lines(args.data, args.difficulty):
            print(line)
        return 0
    if args.action == "check":
        bad = [line for doc in args.docs for line in docsync.check(doc, args.root)]
        for line in bad:
            print(line)
        n = sum(len(docsync.blocks(d)) + len(docsync.figures(d)) for d in args.docs)
        print(f"{n - len(bad)} of {n} generated blocks and figures agree with their tables")
        return 1 if bad else 0
    changed = sum(docsync.write(Path(doc), args.root) for doc in args.docs)
    print(f"rewrote {changed} block(s) and figure(s)")
    return 0
