"""Variant rows: DIVA-GRPO variants of a verl training row, as rows the engines and trainers read.

``vade.data.synthetic.variants`` builds a variant ``Item``; this module turns a decoded row back
into its ``Item`` and the variant into a row with the same template, index and answer, so a
trainer can generate for originals and variants alike. The synthetic tasks' hints and
rephrasings come from the renderer's knowledge of the answer space. Any other row (the paper's
data) needs the texts ``vade build-variants`` wrote offline (``data/<name>/variants.parquet``:
solution steps and a rephrasing per row, ``read_variant_texts``); image perturbations and the
question drawn into the image are made here from the row's own image. The verl DIVA dataset
(``vade.train.verl.diva_dataset``) builds its variant rows through ``variant_row``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from vade.data.items import Item
from vade.data.records import IMAGE_TOKEN, Example, example_from_row
from vade.data.synthetic.variants import make_variant
from vade.data.writer import verl_row
from vade.diva import plan_variant

__all__ = ["SUPPORTED_TASKS", "item_from_example", "read_variant_texts", "variant_example",
           "variant_row"]

SUPPORTED_TASKS = ("synthetic/count", "synthetic/chart", "synthetic/balance")


def item_from_example(ex: Example) -> Item:
    """The ``Item`` a verl row was written from (what ``make_variant`` works on)."""
    if not ex.images:
        raise ValueError(f"row index={ex.index}: a variant needs the row's image")
    return Item(task=ex.task, domain=ex.domain, row_id=ex.uid.split(":", 1)[-1],
                question=ex.question, answer=ex.ground_truth, answer_type=ex.answer_type,
                images=(ex.images[0],))


def _template(ex: Example) -> str:
    """The row's prompt template, recovered by putting ``{question}`` back in its place."""
    text = ex.messages[-1]["content"].replace(IMAGE_TOKEN, "")
    if ex.question not in text:
        raise ValueError(f"row index={ex.index}: its prompt does not hold its question")
    return text.replace(ex.question, "{question}", 1)


def variant_example(ex: Example, offset: int, level: int, rng: np.random.Generator) -> Example:
    """A verl row for one variant of ``ex`` (same template, index and answer)."""
    return example_from_row(variant_row(ex, offset, level, rng))


def variant_row(ex: Example, offset: int, level: int, rng: np.random.Generator,
                texts: Mapping[str, Any] | None = None) -> dict:
    """The verl parquet row (``vade.data.writer.verl_row``) of one variant of ``ex``: what the
    verl DIVA dataset (``vade.train.verl.diva_dataset``) hands verl's ``RLHFDataset`` path.
    ``texts`` (``{"steps": [...], "rephrasing": str}``, from ``read_variant_texts``) is required
    for rows of tasks the synthetic renderer did not make."""
    if ex.task not in SUPPORTED_TASKS and texts is None:
        raise ValueError(f"row index={ex.index}: task {ex.task!r} has no variant builder and no "
                         f"offline variant texts (run `vade build-variants` for the paper's "
                         f"data; built-in variants exist for {', '.join(SUPPORTED_TASKS)})")

    extra: dict[str, Any] = {}
    if ex.task not in SUPPORTED_TASKS:
        if len(ex.images) != 1:
            raise ValueError(f"row index={ex.index}: variants need exactly one image, the row "
                             f"has {len(ex.images)}")
        extra = {"steps": list(texts["steps"]), "rephrasing": str(texts["rephrasing"])}
    variant = make_variant(item_from_example(ex), plan_variant(level, offset), rng, **extra)
    return verl_row(variant, ex.index, ex.split, _template(ex), with_difficulty=False)


def read_variant_texts(path: str | Path) -> dict[int, dict[str, Any]]:
    """``variants.parquet`` of ``vade build-variants``: sample id -> {steps, rephrasing}."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"variant texts not found: {path} (run `vade build-variants`)")
    out: dict[int, dict[str, Any]] = {}
    for row in pq.read_table(path, columns=["index", "steps", "rephrasing"]).to_pylist():
        if not row["steps"] or not (row["rephrasing"] or "").strip():
            raise ValueError(f"{path}: row index={row['index']} lacks steps or a rephrasing")
        out[int(row["index"])] = {"steps": list(row["steps"]), "rephrasing": row["rephrasing"]}
    return out
