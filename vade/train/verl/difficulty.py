"""Sample ids of verl's training dataset, and the initial posterior from the difficulty rollouts.

``initial.parquet`` (written by ``vade.rollout``, HF or vLLM engine alike) has one row per
sample: ``sample_id`` (= ``extra_info.index``), ``correct`` (r of G) and ``rollouts`` (G). The
sampler starts from alpha = r, beta = G - r (Algorithm 1, lines 1-4), matched by sample id to the
dataset positions that survived ``filter_overlong_prompts``.
"""

from __future__ import annotations

from collections.abc import Sized

import numpy as np
import pyarrow.compute as pc

__all__ = ["dataset_sample_ids"]


def dataset_sample_ids(dataset: Sized) -> np.ndarray:
    """``extra_info.index`` of every dataset position; unique, else a ValueError naming it."""
    frame = getattr(dataset, "dataframe", None)
    ids: np.ndarray | None = None
    if frame is not None and "extra_info" in getattr(frame, "column_names", ()):
        table = frame.select_columns(["extra_info"]).with_format("arrow")[:]
        column = table.column("extra_info")
        if "index" not in {f.name for f in column.type}:
            raise ValueError("training dataset's extra_info has no 'index' field")
        values = pc.struct_field(column, "index")
        if values.null_count:
            row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"training dataset row {row}: extra_info.index is null")
        ids = values.to_numpy(zero_copy_only=False).astype(np.int64)
    if ids is None:  # any other Sized dataset: ask its rows (slow; tests and custom datasets)
        out = []
        for i in range(len(dataset)):
            info = dataset[i].get("extra_info") or {}
            if "index" not in info:
                raise ValueError(f"training dataset row {i}: extra_info has no 'index'")
            out.append(int(info["index"]))
        ids = np.asarray(out, dtype=np.int64)
    if ids.size == 0:
        raise ValueError("training dataset is empty (all rows filtered out?)")
    if (ids < 0).any():
        row = int(np.flatnonzero(ids < 0)[0])
        raise ValueError(f"training dataset row {row}: extra_info.index = {ids[row]} is negative")
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        dup = int(uniq[counts > 1][0])
        rows = np.flatnonzero(ids == dup).tolist()
        raise ValueError(f"extra_info.index {dup} appears at dataset rows {rows}: sample ids must "
                         "be unique")
    return ids
