"""The local trainer's inputs, checked before any model is loaded: rows, difficulty, paths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RunPaths", "check_train_rows", "count_rows", "load_initial_difficulty"]


@dataclass(frozen=True)
class RunPaths:
    """Where a run reads and writes (explicit CLI arguments; Snakemake passes them)."""

    data_dir: Path
    model: str                 # a save_pretrained folder (or an HF id for pretrained models)
    out: Path                  # results/<name>/runs/<run_id>
    difficulty: Path | None = None

    @property
    def run_id(self) -> str:
        return self.out.name

    @property
    def train(self) -> Path:
        return self.data_dir / "train.parquet"

    @property
    def val(self) -> Path:
        return self.data_dir / "val.parquet"

    @property
    def history(self) -> Path:
        return self.out / "history.duckdb"

    @property
    def checkpoints(self) -> Path:
        return self.out / "checkpoints"


def count_rows(path: Path) -> int:
    """Rows of a parquet file from its footer (cheap: no data is read)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FileNotFoundError(f"parquet file not found: {path}")
    return int(pq.ParquetFile(path).metadata.num_rows)


def check_train_rows(examples: list[Any]) -> None:
    """The sampler's sample id is the row position: ``extra_info.index`` must equal it."""
    for pos, ex in enumerate(examples):
        if ex.index != pos:
            raise ValueError(f"train row {pos} has extra_info.index = {ex.index}; the training "
                             "split must be indexed 0..N-1 in row order (the sampler's sample id)")


def load_initial_difficulty(path: Path, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """alpha = r, beta = G - r per sample from ``initial.parquet`` (Algorithm 1, lines 1-4)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FileNotFoundError(f"initial difficulty file not found: {path}")
    table = pq.read_table(path)
    missing = {"sample_id", "correct", "rollouts"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}")
    ids = np.asarray(table["sample_id"].to_numpy(), dtype=np.int64)
    r = np.asarray(table["correct"].to_numpy(), dtype=np.float64)
    g = np.asarray(table["rollouts"].to_numpy(), dtype=np.float64)
    bad = (ids < 0) | (ids >= n_samples)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}: row {k} has sample_id {ids[k]} outside the {n_samples} "
                         "training rows (difficulty from another dataset?)")
    bad = ~np.isfinite(r) | ~np.isfinite(g) | (g < 1) | (r < 0) | (r > g)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}: row {k} (sample_id {ids[k]}) has correct = {r[k]:g}, "
                         f"rollouts = {g[k]:g}; need 0 <= correct <= rollouts, rollouts >= 1")
    if np.unique(ids).size != ids.size or ids.size != n_samples:
        present = np.zeros(n_samples, bool)
        present[ids] = True
        if not present.all():
            raise ValueError(f"{path}: no initial difficulty for sample_id "
                             f"{int(np.flatnonzero(~present)[0])} ({int((~present).sum())} "
                             f"of {n_samples} missing)")
        raise ValueError(f"{path}: a sample_id appears more than once")
    alpha = np.zeros(n_samples)
    beta = np.zeros(n_samples)
    alpha[ids] = r
    beta[ids] = g - r
    return alpha, beta
