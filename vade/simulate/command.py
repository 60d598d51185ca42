"""``vade simulate``: compare samplers on the simulated bandit; tables and plots under reports/.

Runs every configured method on several seeds (a tqdm bar counts the (method, seed) runs), the
lambda1 x lambda2 sweep unless ``--no-sweep``, prints the summary table and writes
``simulate.duckdb``, ``sim_*.csv``, ``curves.png``, ``sweep.png`` and ``summary.html`` (the
table with both figures embedded) to ``--out``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tqdm import tqdm

from vade.report.html import write_page
from vade.simulate.compare import compare, lambda_sweep, summarise, with_overrides
from vade.simulate.config import load_config
from vade.simulate.report import (
    format_table,
    plot_curves,
    plot_sweep,
    summary_page,
    write_tables,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=None,
                        help="YAML config (default: built-in defaults = config/simulate.yaml)")
    parser.add_argument("--out", type=Path, default=Path("reports/simulate"),
                        help="output folder (default: reports/simulate)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="number of seeds, 0 .. N-1 (default: the config's, 3)")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps per run (default: the config's, 270)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke-test scale: N/4, B/4, at most 2 seeds, a 3 x 3 sweep")
    parser.add_argument("--no-sweep", action="store_true", help="skip the lambda sweep")


def run(args: argparse.Namespace) -> int:
    cfg = with_overrides(load_config(args.config), seeds=args.seeds, steps=args.steps,
                         quick=args.quick)
    sweep_runs = 0 if args.no_sweep else (
        len(cfg.sweep.lambda1) * len(cfg.sweep.lambda2) * cfg.sweep.seeds)
    total = len(cfg.methods) * cfg.seeds + sweep_runs
    start = time.perf_counter()
    with tqdm(total=total, unit="run", desc="simulate") as bar:
        def progress(label: str) -> None:
            bar.set_postfix_str(label, refresh=False)
            bar.update(1)

        comp = compare(cfg, progress)
        sweep = None if args.no_sweep else lambda_sweep(cfg, comp.targets, progress)
    summary = summarise(comp)
    out = Path(args.out)
    paths = write_tables(out, comp, summary, sweep, cfg.to_dict())
    paths["curves"] = plot_curves(out / "curves.png", comp)
    if sweep is not None:
        paths["sweep"] = plot_sweep(out / "sweep.png", sweep)
    d, r = cfg.dynamics, cfg.run
    setup = (f"N = {d.n_samples}, G = {d.group_size}, B = {r.batch_size}, {r.steps} steps, "
             f"{cfg.seeds} seeds; target = {cfg.target_fraction:g} x DAPO's best mean pass rate "
             f"({comp.targets.mean():.3f}); ratio early/late = first/last 10% of steps")
    print(f"\n{setup}\n{format_table(summary)}")
    paths["summary_html"] = write_page(out / "summary.html",
                                       summary_page(setup, summary, sweep is not None),
                                       "Sampler lab: summary", images_from=out)
    print(f"\nwrote {', '.join(str(p) for p in paths.values())} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0
