"""``vade demo``: the sampler and its DuckDB history, end to end, in about a minute on 2 cores.

The demo trains against the simulated environment of ``vade.simulate`` (latent pass rates that
move when trained on), not a model: it needs no torch, and ``make demo`` is the pipeline with a
real tiny model. The samplers see only (indices, r, G), as in a real trainer; SEC's arms are
the environment's difficulty levels (its stand-in for a dataset's ``extra_info.difficulty``).
Every sampler is built before any step runs, so a method that cannot run stops the demo before
it writes anything. Every method writes its own run file under ``<out>/runs/``; the demo then
answers its questions with SQL over the catalog of those files (over the finished runs, should
a later one fail) and draws the paper's Figure 1 (effective-gradient ratio per step).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from tqdm import tqdm

from vade.methods import METHODS, names_where
from vade.sampling import make_sampler
from vade.simulate.dynamics import DynamicsParams, PassRateEnv
from vade.store import RunStore, open_catalog

DEMO_METHODS = names_where(shaping=None)  # the methods that are a sampler alone


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="reports/demo",
                        help="output folder: runs/<one file per method>, effective_ratio.png "
                        "(default reports/demo)")
    parser.add_argument("--n-samples", type=int, default=2000, metavar="N",
                        help="simulated training prompts (default 2000)")
    parser.add_argument("--batch-size", type=int, default=64, metavar="B",
                        help="prompts chosen per step (default 64)")
    parser.add_argument("--steps", type=int, default=200,
                        help="training steps per method (default 200)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the environment and of every sampler (default 0)")
    parser.add_argument("--methods", nargs="+", default=list(DEMO_METHODS),
                        choices=DEMO_METHODS, metavar="METHOD",
                        help="methods to run (default: all of them, the methods that are a "
                        f"sampler alone: {', '.join(DEMO_METHODS)})")


@dataclass
class DemoRun:
    """One method's run before its first step: the environment (the same starting policy for
    every method), its sampler, and the initial rollouts (Algorithm 1, lines 1-4)."""

    method: str
    env: PassRateEnv
    sampler: Any
    params: DynamicsParams


def prepare(method: str, args: argparse.Namespace) -> DemoRun:
    """The environment and sampler of ``method``; a ValueError if the method cannot run here.

    Cheap (no step runs): ``run`` prepares every method before it writes anything."""
    params = DynamicsParams(n_samples=args.n_samples)
    env = PassRateEnv(params, seed=args.seed)
    g = params.group_size
    initial = env.rollout(np.arange(args.n_samples)).astype(float)
    sampler = make_sampler(method, args.n_samples, args.batch_size, seed=args.seed,
                           alpha=None if method == "vanilla" else initial,
                           beta=None if method == "vanilla" else g - initial,
                           labels=env.category.tolist())  # SEC's arms: the difficulty levels
    return DemoRun(method, env, sampler, params)


def run_method(demo: DemoRun, runs_dir: Path, steps: int) -> Path:
    """``steps`` select -> rollouts -> train -> observe -> log, into ``demo-<method>.duckdb``."""
    method, env, sampler = demo.method, demo.env, demo.sampler
    g = demo.params.group_size
    path = runs_dir / f"demo-{method}.duckdb"
    path.unlink(missing_ok=True)
    with RunStore(path, f"demo-{method}", snapshot_every=50) as store:
        store.start_run(method=method, sampler_config=sampler.config,
                        config={"dynamics": demo.params.to_dict(), "steps": steps})
        store.log_initial_state(getattr(sampler, "alpha", None), getattr(sampler, "beta", None),
                                n_samples=sampler.n_samples)
        # MMR1 as published re-scores its pool with fresh rollouts every few steps: generated
        # here as the trainer and the sampler lab do, and counted as generated rollouts
        rescore = getattr(sampler, "rescore_request", None)
        bar = tqdm(range(steps), desc=f"{method:>12}", unit="step", mininterval=1.0)
        for _ in bar:
            t0 = time.perf_counter()
            request = rescore() if rescore is not None else None
            rescored = 0
            if request is not None:
                pool, n = request
                sampler.observe_rescore(pool, env.rollout(pool, n), n)
                rescored = int(pool.size) * n
            batch = sampler.select()
            t1 = time.perf_counter()
            correct = env.step(batch)
            t2 = time.perf_counter()
            obs = sampler.observe(batch, correct, g)
            t3 = time.perf_counter()
            store.log_step(obs, sampler_seconds=(t1 - t0) + (t3 - t2), state=sampler,
                           rollouts_generated=obs.n_rollouts + rescored,
                           metrics={"mean_pass_rate": env.mean_pass_rate()})
            bar.set_postfix(eff=f"{obs.effective_ratio:.2f}", acc=f"{obs.mean_accuracy:.2f}",
                            refresh=False)
    return path


SUMMARY_SQL = """
SELECT r.method,
       round(avg(s.effective_ratio) FILTER (WHERE s.step <= 20), 3) AS eff_ratio_first20,
       round(avg(s.effective_ratio) FILTER (WHERE s.step > max_step - 20), 3) AS eff_ratio_last20,
       max(s.rollouts_cumulative) AS rollouts,
       round(max(m.value) FILTER (WHERE m.step = max_step), 4) AS final_mean_pass_rate,
       (SELECT count(*) FROM selection_counts c
         WHERE c.run_id = r.run_id AND c.times_selected = 0) AS never_selected
FROM runs r
JOIN (SELECT *, max(step) OVER (PARTITION BY run_id) AS max_step FROM step_summary) s
  USING (run_id)
JOIN metrics m ON m.run_id = r.run_id AND m.step = s.step AND m.name = 'mean_pass_rate'
GROUP BY r.run_id, r.method ORDER BY r.method
"""


def plot_effective_ratio(con: duckdb.DuckDBPyConnection, out: Path) -> Path:
    """Figure 1 of the paper: effective-gradient ratio per step, one line per method (the
    method table's colour and line style)."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    rows = con.execute("SELECT r.method, s.step, s.effective_ratio FROM step_summary s"
                       " JOIN runs r USING (run_id) ORDER BY r.method, s.step").fetchall()
    fig, ax = plt.subplots(figsize=(7, 4))
    for method in sorted({m for m, _, _ in rows}):
        steps = [t for m, t, _ in rows if m == method]
        ratio = [v for m, _, v in rows if m == method]
        ax.plot(steps, ratio, label=method, color=METHODS[method].colour,
                linestyle=METHODS[method].linestyle,
                lw=1.5 if method in ("vanilla", "vade") else 0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel("effective gradient ratio (0 < r < G)")
    ax.set_ylim(0, 1)
    ax.set_title("Share of groups with a non-zero advantage (simulated environment)")
    ax.legend()
    fig.tight_layout()
    path = out / "effective_ratio.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def summarise(paths: list[Path], out: Path) -> Path:
    """Print the per-method table (SQL over the catalog of ``paths``) and draw Figure 1."""
    con = open_catalog(paths)
    try:
        print("\nPer method (SQL over the catalog of run files):")
        con.sql(SUMMARY_SQL).show(max_width=200)
        return plot_effective_ratio(con, out)
    finally:
        con.close()


def run(args: argparse.Namespace) -> int:
    for flag, value in (("--n-samples", args.n_samples), ("--batch-size", args.batch_size),
                        ("--steps", args.steps)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    # every sampler first: a method that cannot run stops the demo before anything is written
    demos = [prepare(method, args) for method in dict.fromkeys(args.methods)]
    out = Path(args.out)
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    done: list[Path] = []
    try:
        for demo in demos:
            done.append(run_method(demo, runs_dir, args.steps))
    except BaseException as exc:  # a crash or Ctrl-C: the finished runs still get their summary
        stopped = demos[len(done)].method
        print(f"\nvade demo: stopped during method {stopped} ({type(exc).__name__}); "
              f"summary of the {len(done)} finished method(s) follows, "
              f"{runs_dir}/demo-{stopped}.duckdb holds its steps so far", file=sys.stderr)
        if done:
            summarise(done, out)
        raise
    figure = summarise(done, out)
    example = runs_dir / "demo-vade.duckdb" if "vade" in args.methods else done[-1]
    print(f"run files: {runs_dir}/  figure: {figure}")
    print(f"try: vade sql \"SELECT step, selected, correct, round(p_mean, 3) AS p_mean FROM "
          f"sample_history WHERE sample_id = 42 ORDER BY step\" --db {example}")
    return 0
