"""Variant rows: DIVA-GRPO variants of a verl training row, as rows the engines and trainers read.

``vade.data.synthetic.variants`` builds a variant ``Item`` (it needs the renderer's knowledge of
the answer space for exact hints); this module turns a decoded row back into its ``Item`` and the
variant into a row with the same template, index and answer, so a trainer can generate for
originals and variants alike. Only the synthetic tasks have variant rows today. For the paper's
data, ``vade build-variants`` writes the hint steps and rephrasings offline
(``data/<name>/variants.parquet``); turning them into rows is not built yet (the verl DIVA
dataset, ``vade.train.verl.diva_dataset``, builds variant rows of the synthetic tasks).
"""

from __future__ import annotations

import numpy as np

from vade.data.items import Item
from vade.data.records import IMAGE_TOKEN, Example, example_from_row

__all__ = ["SUPPORTED_TASKS", "item_from_example", "variant_example", "variant_row"]

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


def variant_row(ex: Example, offset: int, level: int, rng: np.random.Generator) -> dict:
    """The verl parquet row (``vade.data.writer.verl_row``) of one variant of ``ex``: what the
    verl DIVA dataset (``vade.train.verl.diva_dataset``) hands verl's ``RLHFDataset`` path."""
    if ex.task not in SUPPORTED_TASKS:
        raise ValueError(f"row index={ex.index}: task {ex.task!r} has no variant builder (DIVA "
                         f"variants exist for {', '.join(SUPPORTED_TASKS)})")
    from vade.data.synthetic.variants import make_variant
    from vade.data.writer import verl_row
    from vade.diva import plan_variant

    variant = make_variant(item_from_example(ex), plan_variant(level, offset), rng)
    return verl_row(variant, ex.index, ex.split, _template(ex), with_difficulty=False)
