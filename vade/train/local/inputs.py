"""The local trainer's inputs, checked before any model is loaded: rows, difficulty, paths, and
what identifies them.

``input_hashes`` is the inputs' part of a run's identity (``vade.train.local.resume``): the
SHA-256 of the training and validation splits, of the initial-difficulty file and of the model
folder (every file, by relative path). A model given by name (a Hugging Face id) is identified
by that name. Content, not paths or times: moving a folder or touching a file changes nothing,
rebuilding it with other content does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vade.data.parquet_read import num_rows
from vade.data.writer import file_sha256, files_sha256
from vade.train.difficulty import initial_alpha_beta

__all__ = ["RunPaths", "check_train_rows", "count_rows", "input_hashes", "load_initial_difficulty"]


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
    return num_rows(path)


def check_train_rows(examples: list[Any]) -> None:
    """The sampler's sample id is the row position: ``extra_info.index`` must equal it."""
    for pos, ex in enumerate(examples):
        if ex.index != pos:
            raise ValueError(f"train row {pos} has extra_info.index = {ex.index}; the training "
                             "split must be indexed 0..N-1 in row order (the sampler's sample id)")


def load_initial_difficulty(path: Path, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """alpha = r, beta = G - r for training rows 0..N-1 (Algorithm 1, lines 1-4)."""
    return initial_alpha_beta(path, np.arange(n_samples, dtype=np.int64))


def input_hashes(paths: RunPaths) -> dict[str, str | None]:
    """``{"train", "val", "difficulty", "model"}`` -> ``sha256:<hex>`` of each input's content,
    ``name:<id>`` for a model given by name, None for an input the run does not have."""
    def file(path: Path | None) -> str | None:
        return f"sha256:{file_sha256(path)}" if path is not None and path.is_file() else None

    model = Path(paths.model)
    if model.is_dir():
        files = sorted(p for p in model.rglob("*") if p.is_file())
        model_id = f"sha256:{files_sha256(files, model)}"
    else:
        model_id = file(model) or f"name:{paths.model}"
    return {"train": file(paths.train), "val": file(paths.val),
            "difficulty": file(paths.difficulty), "model": model_id}
