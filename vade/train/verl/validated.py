"""How many validation rows verl actually validated, per data source, written by the trainer.

Why: the pooled ``val/acc`` (``vade.train.verl.validation``) weights each source's accuracy by
its item count. Counting ``val.parquet`` is wrong whenever verl validates fewer rows than the
file holds: ``data.filter_overlong_prompts`` drops prompts over ``max_prompt_length`` and
``data.val_max_samples`` keeps a random subset, so a source can lose rows or vanish entirely
(which made the pooling raise after a finished run). The trainer subclasses (``ppo_entry``,
``dapo_entry``) call ``write_validated_counts`` once their validation dataset exists, inside
the Ray actor, next to the checkpoints; the launcher reads them back.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from vade.train.verl.validation import val_item_counts

__all__ = ["COUNTS_FILE", "read_validated_counts", "write_validated_counts"]

COUNTS_FILE = "val-counts.json"


def write_validated_counts(trainer: Any) -> Path | None:
    """``<run dir>/val-counts.json`` from ``trainer.val_dataset`` (verl's ``RLHFDataset``, after
    its filters); the run dir is the parent of ``trainer.default_local_dir``. None when the
    trainer has no validation dataset."""
    frame = getattr(getattr(trainer, "val_dataset", None), "dataframe", None)
    if frame is None:
        return None
    counts = Counter(str(s) for s in frame["data_source"])
    out = Path(str(trainer.config.trainer.default_local_dir)).parent / COUNTS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(sorted(counts.items())), indent=1))
    os.replace(tmp, out)
    return out


def read_validated_counts(run_dir: str | Path, val_parquet: str | Path
                          ) -> tuple[dict[str, int], str]:
    """(rows per source, where from): what the trainer validated, else ``val.parquet``."""
    path = Path(run_dir) / COUNTS_FILE
    if path.is_file():
        return {str(k): int(v) for k, v in json.loads(path.read_text()).items()}, str(path)

    return val_item_counts(val_parquet), str(val_parquet)
