"""From a verl training batch to one step's evidence per sample: (sample id, r, G).

The traps this module exists for (see ``notes/ecosystem.md``): when ``update(batch)`` runs, rows
are repeated ``rollout.n`` times and reordered by ``_balance_batch``, and the dataset's top-level
``index`` is no longer in ``non_tensor_batch``. So rows are grouped by
``extra_info["index"]`` (the sample id written by ``vade.data``), never by position, and G is the
number of rows found per id, not an assumed ``n``.

Correctness comes from the reward's ``acc`` (``vade.rewards.compute_score`` returns
``{"score", "acc"}`` and verl copies the extra keys into ``non_tensor_batch``); without it, from
the sequence score (``token_level_scores``, else ``rm_scores``: the score sits on the last
response token, so the row sum is the score) being positive. Only framework-neutral operations
are used (``DataProto`` is read through ``.batch`` / ``.non_tensor_batch``), so tests can pass
real ``DataProto`` objects and the DAPO recorder can share the code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["StepEvidence", "correctness", "group_by_sample", "sample_ids"]


class StepEvidence:
    """Per distinct sample id (sorted): r = rollouts judged correct, G = rollouts seen."""

    __slots__ = ("ids", "correct", "rollouts")

    def __init__(self, ids: np.ndarray, correct: np.ndarray, rollouts: np.ndarray) -> None:
        self.ids = ids
        self.correct = correct
        self.rollouts = rollouts

    @property
    def n_rollouts(self) -> int:
        return int(self.rollouts.sum())


def sample_ids(non_tensor: Mapping[str, Any]) -> np.ndarray:
    """``extra_info["index"]`` of every row, as int64; a clear error naming the first bad row."""
    if "extra_info" not in non_tensor:
        raise ValueError("batch has no non_tensor_batch['extra_info']: rows cannot be matched to "
                         "samples (the dataset must carry extra_info.index)")
    infos = non_tensor["extra_info"]
    out = np.empty(len(infos), dtype=np.int64)
    for row, info in enumerate(infos):
        try:
            value = info["index"]
        except (KeyError, TypeError):
            raise ValueError(f"batch row {row}: extra_info has no 'index' "
                             f"({info!r:.120})") from None
        if isinstance(value, bool) or not float(value).is_integer():
            raise ValueError(f"batch row {row}: extra_info.index = {value!r} is not an integer")
        out[row] = int(value)
    return out


def correctness(batch: Any) -> np.ndarray:
    """0/1 per row from ``acc``, else from the sequence score being > 0."""
    non_tensor = batch.non_tensor_batch
    if "acc" in non_tensor:
        acc = np.asarray(non_tensor["acc"], dtype=np.float64)
        bad = ~np.isin(acc, (0.0, 1.0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"batch row {row}: reward 'acc' = {acc[row]!r} is not 0 or 1 "
                             "(the custom reward must return binary correctness)")
        return acc
    tensors = batch.batch
    for key in ("token_level_scores", "rm_scores"):
        if tensors is not None and key in tensors.keys():
            scores = tensors[key].float().sum(dim=-1).cpu().numpy()
            return (scores > 0).astype(np.float64)
    raise ValueError("batch has neither non_tensor_batch['acc'] nor token_level_scores/rm_scores: "
                     "cannot tell which rollouts were correct")


def group_by_sample(batch: Any) -> StepEvidence:
    """Group the rows of ``batch`` by sample id: r and G per distinct id, ids sorted."""
    ids = sample_ids(batch.non_tensor_batch)
    acc = correctness(batch)
    if acc.shape != ids.shape:
        raise ValueError(f"batch has {ids.size} rows but {acc.size} correctness values")
    uniq, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    r = np.bincount(inverse, weights=acc, minlength=uniq.size)
    return StepEvidence(uniq, r, counts.astype(np.float64))
