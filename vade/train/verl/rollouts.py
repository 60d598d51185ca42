"""Rollouts generated per step, from verl's recorded metrics: the cost axis of Figure 4.

A non-filtering run (vanilla, VADE) generates ``train_batch_size x n`` rollouts per step. DAPO
generates ``num_gen_batches x gen_batch_size x n``: verl-recipe's trainer logs
``train/num_gen_batches`` for every training step (generation batches whose groups were pooled
until ``train_batch_size`` informative groups existed), and each generation batch is one
dataloader batch of ``gen_batch_size`` prompts, each rolled out ``n`` times. Discarded rollouts
count: they are the waste the paper measures.

The metrics come from verl's ``file`` logger (``trainer.logger`` includes ``file``; one JSON line
``{"step", "data"}`` per ``Tracking.log`` call, path from ``VERL_FILE_LOGGER_PATH``). The logger
truncates its file when opened, so ``vade.train.verl.launch`` gives every attempt its own file;
:func:`read_metric_log` merges attempts, a later attempt's record of a step replacing an earlier
one (a resumed run replays the steps after its checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["GEN_BATCHES", "append_metric_record", "cumulative_rollouts", "read_metric_log",
           "rollouts_for", "rollouts_per_step"]

GEN_BATCHES = "train/num_gen_batches"


def rollouts_for(num_gen_batches: int, gen_batch_size: int, n: int) -> int:
    for name, value in (("num_gen_batches", num_gen_batches), ("gen_batch_size", gen_batch_size),
                        ("n", n)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(num_gen_batches) * int(gen_batch_size) * int(n)


def append_metric_record(path: str | Path, step: int, data: Mapping[str, Any]) -> None:
    """Append one record in the file logger's format (numbers only), e.g. a validation run
    after verl's loop returned. Only safe once verl no longer writes the file (its logger keeps
    its own file offset)."""
    values = {str(k): float(v) for k, v in data.items()
              if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"step": int(step), "data": values}) + "\n")


def read_metric_log(paths: Iterable[str | Path]) -> dict[int, dict[str, float]]:
    """step -> metrics, merged over attempt files in the given order (later wins per step).

    Records of one step within a file are merged (verl logs a final checkpoint's timing as a
    second record of the last step). Step 0 (validation before training) is kept.
    """
    out: dict[int, dict[str, float]] = {}
    for path in paths:
        per_file: dict[int, dict[str, float]] = {}
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    step = int(rec["step"])
                    data = dict(rec["data"])
                except (ValueError, KeyError, TypeError):
                    raise ValueError(f"{path}:{line_no}: not a verl file-logger record") from None
                per_file.setdefault(step, {}).update(
                    {k: v for k, v in data.items() if isinstance(v, (int, float))})
        out.update(per_file)
    return out


def rollouts_per_step(metrics: Mapping[int, Mapping[str, float]], gen_batch_size: int, n: int,
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(training steps, rollouts generated at each): ``train/num_gen_batches`` where logged
    (DAPO), else one generation batch per step. Only steps >= 1 that trained are counted (a step
    record must carry a ``training/`` or ``actor/`` metric or the gen-batch count)."""
    steps, rollouts = [], []
    for step in sorted(metrics):
        data = metrics[step]
        trained = GEN_BATCHES in data or any(k.startswith(("training/", "actor/")) for k in data)
        if step < 1 or not trained:
            continue
        batches = data.get(GEN_BATCHES, 1)
        steps.append(step)
        rollouts.append(rollouts_for(int(batches), gen_batch_size, n))
    return np.asarray(steps, dtype=np.int64), np.asarray(rollouts, dtype=np.int64)


def cumulative_rollouts(metrics: Mapping[int, Mapping[str, float]], gen_batch_size: int, n: int,
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(steps, cumulative rollouts after each): the x-axis of the paper's Figure 4."""
    steps, per = rollouts_per_step(metrics, gen_batch_size, n)
    return steps, np.cumsum(per)
