"""``vade train --backend local``: the parsed config and arguments -> :func:`train_local`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from vade.job.timelimit import TimeGuard
from vade.train.config import TrainConfig
from vade.train.local import RunPaths, train_local

__all__ = ["run"]


def run(args: argparse.Namespace, cfg: TrainConfig, config: Mapping[str, Any]) -> int:
    """Train in this process; ``<out>/done.json`` is written last (the rule's output).

    The time-limit guard is installed first, so a checkpoint signal (USR1, URG, TERM) while the
    data and model load is kept, and never given back: the process ends after the run, and a
    late second signal must not find the default handler (rc 138, no message)."""

    guard = TimeGuard.from_env().install()
    if not args.data_dir.is_dir():
        raise FileNotFoundError(f"--data-dir not found: {args.data_dir}")
    paths = RunPaths(data_dir=args.data_dir, model=str(args.model), out=args.out,
                     difficulty=args.difficulty)
    done = train_local(cfg, paths, progress=not args.no_progress, guard=guard)
    print(f"{paths.run_id}: {done['steps']} steps, {done['rollouts_cumulative']} rollouts, "
          f"mean effective ratio {done['effective_ratio_mean']:.3f}, "
          f"val acc {done['val_acc_final']}; wrote {args.out / 'done.json'}")
    return 0
