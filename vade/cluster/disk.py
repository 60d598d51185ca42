"""Disk for the grid's checkpoints: per run, and all runs at once.

Why apart from the bill: ``vade plan`` warns with it and ``vade preflight --stage train``
refuses with it, and the workflow runs every training run of the grid at once on one disk (15
for the paper: 2,754 GB together, where each job used to check room for its own 238 GB only).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vade.grid import cells as grid_cells
from vade.job.config import ClusterConfig

__all__ = ["checkpoint_gb", "disk_warnings", "params_of", "runs_checkpoint_gb"]

_PARAMS = re.compile(r"(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")


def params_of(model: Mapping[str, Any]) -> float:
    """Parameters of a model entry: the ``<N>B`` in a pretrained name (``Qwen2.5-VL-7B``), else
    a few million (the tiny model)."""
    m = _PARAMS.findall(str(model.get("name_or_path", "")))
    return float(m[-1]) * 1e9 if m else 5e6


def checkpoint_gb(config: Mapping[str, Any], model: str) -> float:
    """Disk of one training run's kept checkpoints plus its final model, in GB."""
    cluster = ClusterConfig.from_config(config)
    keep = int((config.get("train") or {}).get("keep_checkpoints", 2))
    per_param, _ = cluster.plan.value("bytes_per_param")
    params = params_of(config["models"][model])
    return params * (keep * per_param + 2.0) / 1e9


def runs_checkpoint_gb(config: Mapping[str, Any], runs_root: Path | None = None,
                       mine: str | None = None) -> tuple[float, int]:
    """(GB, runs): the checkpoints the grid's training runs still need on one disk, all at
    once (the workflow runs them concurrently: 15 for the paper, 2.75 TB together, where each
    job used to check room for its own run only). With ``runs_root`` (``results/<name>/runs``)
    a finished run (``done.json``) needs nothing more and a running one what it has not yet
    written; with ``mine`` (a job's own run id) only runs already started (their folder exists)
    count beside it: those not started check for themselves when they start."""
    need, runs = 0.0, 0
    for cell in grid_cells(config):
        run = runs_root / cell.run_id if runs_root is not None else None
        if run is not None and (run / "done.json").is_file():
            continue
        if mine is not None and cell.run_id != mine and not (run and run.is_dir()):
            continue
        written = sum(f.stat().st_size for f in (run / "checkpoints").rglob("*")
                      if f.is_file()) / 1e9 if run is not None and run.is_dir() else 0.0
        need += max(0.0, checkpoint_gb(config, cell.model) - written)
        runs += 1
    return need, runs


def disk_warnings(config: Mapping[str, Any],
                  free_gb: Callable[[Path], float] | None = None) -> list[str]:
    """The grid's checkpoints, all runs at once, against the free disk under ``results/``."""
    if (config.get("train") or {}).get("backend") != "verl":
        return []
    need, runs = runs_checkpoint_gb(config)
    need += ClusterConfig.from_config(config).min_free_gb
    where = Path("results")
    while not where.exists() and where != where.parent:
        where = where.parent
    free = (free_gb or (lambda p: shutil.disk_usage(p).free / 1e9))(where.resolve())
    if free >= need:
        return []
    return [f"checkpoint disk: {runs} training runs at once keep {need:,.0f} GB "
            f"(train.keep_checkpoints + final model each, + cluster.min_free_gb), "
            f"{free:,.0f} GB free at {where.resolve()}: free space there, lower "
            "train.keep_checkpoints, or run fewer at once (snakemake --jobs / "
            "--resources)"]
