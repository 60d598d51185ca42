"""ChartQA (``HuggingFaceM4/ChartQA``) rows -> ``Item``.

Row schema: ``image``, ``query``, ``label`` (a list; the first entry is the answer),
``human_or_machine``. No id column: the row id is the row position in the split. Answers are
scored with ChartQA's relaxed accuracy (5% numeric tolerance), so the type is always ``relaxed``.
"""

from __future__ import annotations

from typing import Any

from vade.data.items import InvalidRow, Item, check_image, clean_question
from vade.data.sources import SourceSpec

__all__ = ["parse_row", "row_id"]


def row_id(spec: SourceSpec, row: dict[str, Any], position: int) -> str:
    return f"row{position}"


def parse_row(spec: SourceSpec, row: dict[str, Any], rid: str) -> Item:
    image = check_image(row.get("image"))
    question = clean_question(row.get("query"))
    label = row.get("label")
    if isinstance(label, str):
        label = [label]
    if not isinstance(label, list) or not label or not str(label[0]).strip():
        raise InvalidRow("no_answer", f"label is {label!r}")
    return Item(task=spec.task, domain=spec.domain, row_id=rid, question=question,
                answer=str(label[0]).strip(), answer_type="relaxed", images=(image,),
                source_question=question)
