"""Several methods x seeds on the same environments; rollouts to a target; the lambda sweep.

The target follows the paper's efficiency claim (section 4.3: VADE reaches 99.5% of DAPO's peak
with several times fewer rollouts): per seed, target = ``target_fraction`` x the best mean pass
rate DAPO reaches on that seed's environment; a method's cost is the cumulative rollouts at the
first step its mean pass rate reaches the target (NaN if it never does). Without DAPO in the
comparison, the reference is the best mean pass rate of any compared method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from vade.simulate.config import SimConfig
from vade.simulate.runner import CURVES, run_method

__all__ = ["Comparison", "SweepResult", "compare", "lambda_sweep", "rollouts_to_target",
           "summarise", "with_overrides"]

Progress = Callable[[str], None]
REFERENCE = "dapo"


@dataclass(frozen=True)
class Comparison:
    """curves[method][curve] has shape (n_seeds, steps); ``targets`` has one entry per seed."""

    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    curves: dict[str, dict[str, np.ndarray]]
    targets: np.ndarray


@dataclass(frozen=True)
class SweepResult:
    """Metrics of the lambda grid, each of shape (len(lambda1), len(lambda2)), seed-averaged."""

    method: str
    lambda1: tuple[float, ...]
    lambda2: tuple[float, ...]
    mean_ratio: np.ndarray
    final_pass_rate: np.ndarray
    rollouts_to_target: np.ndarray


def rollouts_to_target(pass_rate: np.ndarray, cumulative: np.ndarray,
                       targets: np.ndarray) -> np.ndarray:
    """Per row (seed): cumulative rollouts at the first step with pass rate >= target, or NaN."""
    pass_rate = np.atleast_2d(pass_rate)
    cumulative = np.atleast_2d(cumulative)
    hit = pass_rate >= np.asarray(targets, dtype=np.float64).reshape(-1, 1)
    first = np.argmax(hit, axis=1)
    out = cumulative[np.arange(len(first)), first].astype(np.float64)
    out[~hit.any(axis=1)] = np.nan
    return out


def _targets(curves: dict[str, dict[str, np.ndarray]], fraction: float) -> np.ndarray:
    if REFERENCE in curves:
        best = curves[REFERENCE]["mean_pass_rate"].max(axis=1)
    else:
        best = np.max([c["mean_pass_rate"].max(axis=1) for c in curves.values()], axis=0)
    return fraction * best


def compare(cfg: SimConfig, progress: Progress | None = None) -> Comparison:
    """Run every configured method on seeds 0 .. cfg.seeds - 1."""
    seeds = tuple(range(cfg.seeds))
    curves: dict[str, dict[str, np.ndarray]] = {}
    for method in cfg.methods:
        runs = []
        for seed in seeds:
            runs.append(run_method(method, cfg.dynamics, cfg.run, seed,
                                   cfg.options.get(method)))
            if progress is not None:
                progress(f"{method} seed {seed}")
        curves[method] = {k: np.stack([r[k] for r in runs]) for k in (*CURVES, "step")}
    return Comparison(cfg.methods, seeds, curves, _targets(curves, cfg.target_fraction))


def _window(values: np.ndarray, share: float, late: bool) -> np.ndarray:
    """Per seed: mean over the first (or last) ``share`` of the steps (at least one step)."""
    n = max(1, int(round(share * values.shape[1])))
    return (values[:, -n:] if late else values[:, :n]).mean(axis=1)


def summarise(comp: Comparison, window: float = 0.1) -> list[dict[str, float | str | int]]:
    """One row per method: mean / min / max over seeds of the headline numbers."""
    rows = []
    for method in comp.methods:
        c = comp.curves[method]
        to_target = rollouts_to_target(c["mean_pass_rate"], c["cumulative_rollouts"],
                                       comp.targets)
        per_seed = {
            "ratio_early": _window(c["effective_ratio"], window, late=False),
            "ratio_late": _window(c["effective_ratio"], window, late=True),
            "final_pass_rate": c["mean_pass_rate"][:, -1],
            "total_rollouts": c["cumulative_rollouts"][:, -1],
        }
        row: dict[str, float | str | int] = {"method": method, "seeds": len(comp.seeds)}
        for name, v in per_seed.items():
            row[name] = float(v.mean())
            row[f"{name}_min"] = float(v.min())
            row[f"{name}_max"] = float(v.max())
        reached = to_target[~np.isnan(to_target)]
        row["seeds_reached"] = int(reached.size)
        row["rollouts_to_target"] = float(reached.mean()) if reached.size else float("nan")
        row["rollouts_to_target_min"] = float(reached.min()) if reached.size else float("nan")
        row["rollouts_to_target_max"] = float(reached.max()) if reached.size else float("nan")
        row["target_pass_rate"] = float(comp.targets.mean())
        rows.append(row)
    return rows


def lambda_sweep(cfg: SimConfig, targets: np.ndarray,
                 progress: Progress | None = None) -> SweepResult:
    """Run ``cfg.sweep.method`` on every (lambda1, lambda2) of the grid, seeds 0 .. k-1.

    ``targets`` are the comparison's per-seed targets (seed k uses targets[k], or their mean
    when the sweep has more seeds than the comparison).
    """
    sw = cfg.sweep
    seeds = range(sw.seeds)
    seed_targets = np.array([targets[s] if s < len(targets) else targets.mean() for s in seeds])
    shape = (len(sw.lambda1), len(sw.lambda2))
    ratio, final, cost = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    base = dict(cfg.options.get(sw.method, {}))
    for i, l1 in enumerate(sw.lambda1):
        for j, l2 in enumerate(sw.lambda2):
            runs = []
            for seed in seeds:
                runs.append(run_method(sw.method, cfg.dynamics, cfg.run, seed,
                                       {**base, "lambda1": l1, "lambda2": l2}))
                if progress is not None:
                    progress(f"sweep l1={l1:g} l2={l2:g} seed {seed}")
            stack = {k: np.stack([r[k] for r in runs]) for k in CURVES}
            ratio[i, j] = stack["effective_ratio"].mean()
            final[i, j] = stack["mean_pass_rate"][:, -1].mean()
            hits = rollouts_to_target(stack["mean_pass_rate"], stack["cumulative_rollouts"],
                                      seed_targets)
            cost[i, j] = np.nan if np.isnan(hits).all() else np.nanmean(hits)
    return SweepResult(sw.method, sw.lambda1, sw.lambda2, ratio, final, cost)


def with_overrides(cfg: SimConfig, *, seeds: int | None = None, steps: int | None = None,
                   quick: bool = False) -> SimConfig:
    """The config with command-line overrides applied (``--quick`` first, then the others)."""
    if quick:
        cfg = cfg.quick()
    if seeds is not None:
        cfg = replace(cfg, seeds=seeds)
    if steps is not None:
        cfg = replace(cfg, run=replace(cfg.run, steps=steps))
    return cfg
