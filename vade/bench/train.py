"""Training curves of the local trainer: methods x algorithms on one config, written as JSON/CSV.

    python -m vade.bench.train --config config/tiny.yaml --data-dir data/tiny \\
        --model results/tiny/models/base --difficulty results/tiny/difficulty/tiny/initial.parquet

Runs ``vade train --backend local`` (in-process) for each (algorithm, method), each into its own
run folder under ``--out-dir``, then reads the runs' DuckDB histories and writes, per run and
step, the effective gradient ratio, cumulative rollouts, mean reward and validation accuracy
(``curves.csv``, drawn in ``curves.png``), plus a summary per run (``summary.json``: mean
effective ratio over the run and over its first and last ``window`` steps, rollouts, validation
accuracy, seconds per step). It measures; it asserts nothing. ``--toy`` swaps
the model for the toy policy (``vade.train.local.toy``) to time the loop's own overhead.

Step time by phase (``phases.csv``, ``phases`` in ``summary.json``, and a table on stdout):
per run, the median over steps of each phase's seconds (``vade.train.local.timing.PHASES``:
sampler, generate, reward, ref_logprob, actor, log; validate and checkpoint happen on some
steps only, so their per-step mean is given) and of the whole step. ``--repeats k`` runs each
configuration k times (a shared machine is noisy) and reports the median over the repeats.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from vade.config_io import load_config
from vade.models.policy import token_logprobs
from vade.train.config import TrainConfig
from vade.train.local import RunPaths, train_local
from vade.train.local.policy import LocalPolicy
from vade.train.local.timing import PHASES
from vade.train.local.toy import ToyPolicy

CURVE_SQL = """
SELECT s.step, s.effective_ratio, s.rollouts, s.mean_accuracy,
       max(m.value) FILTER (WHERE m.name = 'vade/rollouts_cumulative') AS rollouts_cumulative,
       max(m.value) FILTER (WHERE m.name = 'critic/score/mean') AS reward_mean,
       max(m.value) FILTER (WHERE m.name = 'val/acc') AS val_acc,
       max(m.value) FILTER (WHERE m.name = 'timing_s/step') AS seconds
FROM steps s LEFT JOIN metrics m USING (run_id, step)
GROUP BY s.step, s.effective_ratio, s.rollouts, s.mean_accuracy ORDER BY s.step
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m vade.bench.train", description=__doc__)
    p.add_argument("--config", required=True, help="YAML config (train/sampler/dapo sections)")
    p.add_argument("--data-dir", required=True, type=Path)
    p.add_argument("--model", default="toy")
    p.add_argument("--difficulty", type=Path, default=None)
    p.add_argument("--out-dir", type=Path, default=Path("reports/bench/train"))
    p.add_argument("--methods", nargs="+", default=["vanilla", "dapo", "vade"])
    p.add_argument("--algorithms", nargs="+", default=["grpo", "gspo"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=None, help="override train.steps")
    p.add_argument("--toy", action="store_true", help="the toy policy instead of the model")
    p.add_argument("--no-share-prompts", action="store_true",
                   help="baseline: every rollout row runs its full prompt (generation and "
                        "log-probs), as before prompt sharing; for before/after timings")
    p.add_argument("--window", type=int, default=20,
                   help="steps averaged for the first/last effective ratio")
    p.add_argument("--no-tracking", action="store_true", help="skip MLflow")
    p.add_argument("--repeats", type=int, default=1,
                   help="run each configuration this many times; phases are medians over them")
    return p.parse_args(argv)


def run_one(config: dict[str, Any], args: argparse.Namespace, algorithm: str,
            method: str) -> tuple[Path, float]:
    cfg = TrainConfig.from_config(config, algorithm=algorithm, method=method, seed=args.seed,
                                  steps=args.steps)
    if args.no_tracking:
        cfg = cfg.with_overrides(tracking=type(cfg.tracking)(enabled=False))
    model_name = "toy" if args.toy else "tiny"
    out = args.out_dir / "runs" / f"{model_name}-{algorithm}-{method}-s{args.seed}"
    if out.exists():
        shutil.rmtree(out)  # a benchmark measures a fresh run, never a resume
    paths = RunPaths(args.data_dir, args.model, out, args.difficulty)
    t = time.perf_counter()
    load = ToyPolicy.load if args.toy else _unshared if args.no_share_prompts else None
    train_local(cfg, paths, progress=True, load_policy=load)
    return out, time.perf_counter() - t


def _unshared(path: str, cfg: Any) -> Any:
    """``LocalPolicy`` with prompt sharing off (``share_prompts=False`` in both passes)."""
    policy = LocalPolicy.load(path, cfg)
    policy.engine.share_prompts = False
    policy.token_logprobs = functools.partial(token_logprobs, temperature=cfg.temperature,
                                              share_prompts=False)
    return policy


def phase_medians(timing: dict[str, list[float]]) -> dict[str, float]:
    """Per-step seconds of each phase (median over steps; validate/checkpoint: mean, as they
    run on a few steps) and ``step`` (median of the per-step totals)."""
    sparse = {"validate", "checkpoint"}
    out = {k: float(np.mean(v) if k in sparse else np.median(v)) for k, v in timing.items() if v}
    totals = np.sum([v for v in timing.values() if v], axis=0)
    out["step"] = float(np.median(totals)) if np.size(totals) else float("nan")
    return out


def ratio_window(curve: list[dict[str, Any]], window: int) -> tuple[float, float]:
    """Mean effective ratio over the first and the last ``window`` steps of one run."""
    eff = [float(r["effective_ratio"]) for r in curve]
    w = max(1, min(window, len(eff)))
    return sum(eff[:w]) / w, sum(eff[-w:]) / w


def plot_curves(rows: list[dict[str, Any]], path: Path) -> Path:
    """Effective ratio per step and cumulative rollouts, one line per (algorithm, method)."""
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    runs = sorted({(r["algorithm"], r["method"]) for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for algorithm, method in runs:
        mine = [r for r in rows if (r["algorithm"], r["method"]) == (algorithm, method)]
        steps = [r["step"] for r in mine]
        label = f"{algorithm} {method}"
        axes[0].plot(steps, [r["effective_ratio"] for r in mine], label=label, lw=1)
        axes[1].plot(steps, [r["rollouts_cumulative"] for r in mine], label=label, lw=1)
    axes[0].set(xlabel="step", ylabel="effective gradient ratio", ylim=(0, 1.05))
    axes[1].set(xlabel="step", ylabel="rollouts generated (cumulative)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def print_phases(summary: list[dict[str, Any]]) -> None:
    """Seconds per step by phase, one row per run (medians; see the module docstring)."""
    cols = [*PHASES, "step"]
    print(f"\nseconds per step by phase\n{'run':>18} " + " ".join(f"{c[:9]:>9}" for c in cols))
    for s in summary:
        ph = s["phases"]
        print(f"{s['algorithm'] + ' ' + s['method']:>18} "
              + " ".join(f"{ph.get(c, 0.0):>9.3f}" for c in cols))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_config(argparse.Namespace(config=args.config, config_json=None))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    phase_rows: list[dict[str, Any]] = []
    for algorithm in args.algorithms:
        for method in args.methods:
            repeats = []
            for _ in range(max(1, args.repeats)):
                out, seconds = run_one(config, args, algorithm, method)
                repeats.append((phase_medians(
                    json.loads((out / "done.json").read_text())["timing_s"]), seconds))
            phases = {k: float(np.median([r[0][k] for r in repeats])) for k in repeats[0][0]}
            seconds = float(np.median([r[1] for r in repeats]))
            phase_rows.extend({"algorithm": algorithm, "method": method, "phase": k,
                               "seconds_per_step": v} for k, v in phases.items())
            con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
            cur = con.execute(CURVE_SQL)
            names = [d[0] for d in cur.description]
            curve = [dict(zip(names, r)) for r in cur.fetchall()]
            con.close()
            done = json.loads((out / "done.json").read_text())
            for r in curve:
                rows.append({"algorithm": algorithm, "method": method, **r})
            first, last = ratio_window(curve, args.window)
            summary.append({
                "algorithm": algorithm, "method": method, "run": out.name,
                "steps": done["steps"], "rollouts": done["rollouts_cumulative"],
                "effective_ratio_mean": done["effective_ratio_mean"],
                "effective_ratio_first": first, "effective_ratio_last": last,
                "val_acc": done["val_acc"], "wall_seconds": seconds,
                "seconds_per_step": seconds / max(done["steps"], 1), "phases": phases,
                "repeats": max(1, args.repeats),
            })
    csv_path = args.out_dir / "curves.csv"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with (args.out_dir / "phases.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(phase_rows[0]))
        writer.writeheader()
        writer.writerows(phase_rows)
    (args.out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    png = plot_curves(rows, args.out_dir / "curves.png")
    print(f"\n{'algorithm':>9} {'method':>8} {'eff ratio':>9} {'first -> last':>14} "
          f"{'rollouts':>9} {'val acc (first -> last)':>24} {'s/step':>7}")
    for s in summary:
        vals = list(s["val_acc"].values())
        va = f"{vals[0]:.3f} -> {vals[-1]:.3f}" if vals else "n/a"
        fl = f"{s['effective_ratio_first']:.2f} -> {s['effective_ratio_last']:.2f}"
        print(f"{s['algorithm']:>9} {s['method']:>8} {s['effective_ratio_mean']:>9.3f} {fl:>14} "
              f"{s['rollouts']:>9} {va:>24} {s['seconds_per_step']:>7.2f}")
    print_phases(summary)
    print(f"wrote {csv_path}, {png}, {args.out_dir / 'phases.csv'} and "
          f"{args.out_dir / 'summary.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
