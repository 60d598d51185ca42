"""DIVA calibration: does a larger variant offset D really make the base model fail more often?

    python -m vade.bench.diva_calibration --data data/tiny/val.parquet \\
        --model results/tiny/models/base --out reports/bench/diva_calibration

DIVA-GRPO's variants only shape difficulty if their offset means what it says: hint variants
(D < 0) easier than the original, perturbed and text-in-image variants (D > 0) harder, in order.
For every offset D in -8..8 this builds one variant of each row (the same rows for every D, each
variant from its own seeded stream), samples ``--rollouts`` answers per variant from the model at
the rollout temperature, scores them with the project's reward, and writes per offset the
accuracy, its binomial standard error and the Spearman correlation of accuracy with D
(``calibration.json``, ``calibration.csv``, ``calibration.png``). It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from vade.data.records import Example, read_examples
from vade.data.splits import rng_for
from vade.data.variants import variant_example
from vade.rewards import score_batch
from vade.rollout.engine import make_engine

__all__ = ["calibrate"]

OFFSETS = tuple(range(-8, 9))


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx = np.argsort(np.argsort(x)).astype(float)
    ry = np.argsort(np.argsort(y, kind="stable")).astype(float)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def calibrate(engine: Any, examples: Sequence[Example], *, rollouts: int, temperature: float,
              max_new_tokens: int, seed: int, level: int = 5,
              offsets: Sequence[int] = OFFSETS, progress: bool = True) -> dict[str, Any]:
    """Accuracy per offset on one variant of each row, plus the original's (``offset: null``)."""
    def accuracy(batch: list[Example], stream: int) -> tuple[float, int]:
        ro = engine.generate(batch, rollouts, temperature=temperature,
                             max_new_tokens=max_new_tokens, seed=seed * 1_000 + stream)
        rows = [batch[int(p)] for p in ro.example_pos]
        acc = score_batch(list(ro.texts), [e.ground_truth for e in rows],
                          [e.answer_type for e in rows], [e.extra_info for e in rows], key="acc")
        return float(np.mean(np.asarray(acc) > 0.5)), len(rows)

    table = []
    t0 = time.perf_counter()
    for k, d in enumerate(tqdm([None, *offsets], desc="diva calibration", unit="offset",
                               disable=not progress)):
        if d is None:
            batch = list(examples)
        else:
            batch = [variant_example(ex, d, level, rng_for(seed, "diva-calibration", str(d),
                                                           ex.uid)) for ex in examples]
        acc, n = accuracy(batch, k)
        table.append({"offset": d, "accuracy": acc, "answers": n,
                      "stderr": float(np.sqrt(acc * (1 - acc) / n))})
    varied = [r for r in table if r["offset"] is not None]
    return {"rows": len(examples), "rollouts": rollouts, "temperature": temperature,
            "level": level, "seed": seed, "table": table,
            "spearman_accuracy_vs_offset": _spearman(
                np.array([r["offset"] for r in varied], float),
                np.array([r["accuracy"] for r in varied])),
            "seconds": time.perf_counter() - t0}


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib  # lazy: the report extra, slow to load

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: the report extra, slow to load

    rows = [r for r in result["table"] if r["offset"] is not None]
    base = next(r for r in result["table"] if r["offset"] is None)
    d = np.array([r["offset"] for r in rows])
    acc = np.array([r["accuracy"] for r in rows])
    se = np.array([r["stderr"] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    ax.errorbar(d, acc, yerr=1.96 * se, fmt="o-", capsize=3, label="variant (95% interval)")
    ax.axhline(base["accuracy"], color="grey", ls="--", label="original")
    ax.set_xlabel("offset D  (< 0: hints, 0: rephrasing, 1-6: perturbations, 7-8: text in image)")
    ax.set_ylabel("base model accuracy")
    ax.set_ylim(0, 1)
    ax.set_title(f"DIVA calibration: {result['rows']} rows x {result['rollouts']} rollouts, "
                 f"Spearman(accuracy, D) {result['spearman_accuracy_vs_offset']:.2f} "
                 "(DIVA assumes < 0)", fontsize=10)
    ax.legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vade.bench.diva_calibration", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, type=Path, help="a verl parquet file (e.g. val)")
    p.add_argument("--model", required=True, help="the base model's folder")
    p.add_argument("--out", type=Path, default=Path("reports/bench/diva_calibration"))
    p.add_argument("--rows", type=int, default=150)
    p.add_argument("--rollouts", type=int, default=4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)

    examples = read_examples(args.data)[:args.rows]
    engine = make_engine("hf", args.model, batch_size=64, threads=args.threads)
    result = calibrate(engine, examples, rollouts=args.rollouts, temperature=args.temperature,
                       max_new_tokens=args.max_new_tokens, seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration.json").write_text(json.dumps(result, indent=2) + "\n")
    with open(args.out / "calibration.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["offset", "accuracy", "stderr", "answers"])
        w.writeheader()
        w.writerows(result["table"])
    _plot(result, args.out / "calibration.png")
    print(f"{'offset':>7} {'accuracy':>9} {'+-1.96se':>9}")
    for r in result["table"]:
        name = "orig" if r["offset"] is None else f"{r['offset']:+d}"
        print(f"{name:>7} {r['accuracy']:>9.3f} {1.96 * r['stderr']:>9.3f}")
    print(f"Spearman(accuracy, D) = {result['spearman_accuracy_vs_offset']:.3f}; "
          f"{result['seconds']:.0f} s; written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
