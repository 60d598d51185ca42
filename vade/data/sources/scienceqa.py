"""ScienceQA (``derek-thomas/ScienceQA``) rows -> ``Item``.

Row schema: ``image`` (None for text-only questions: those rows are filtered out, not invalid),
``question``, ``choices`` (list of str), ``answer`` (index), ``hint``, ``subject``, ... The choices
are rendered into the question as lettered options ("A. ..."), the hint (when present) as
context before it; the ground truth is the letter ``chr(65 + answer)``.
"""

from __future__ import annotations

from typing import Any

from vade.data.items import InvalidRow, Item, check_image, clean_question
from vade.data.sources import SourceSpec

__all__ = ["is_filtered", "parse_row", "row_id"]


def row_id(spec: SourceSpec, row: dict[str, Any], position: int) -> str:
    return f"row{position}"


def is_filtered(row: dict[str, Any]) -> str | None:
    """Why a row is outside this task by design (None: keep it). Text-only rows are not used."""
    return "no_image" if row.get("image") is None else None


def parse_row(spec: SourceSpec, row: dict[str, Any], rid: str) -> Item:
    image = check_image(row.get("image"))
    stem = clean_question(row.get("question"))
    choices = row.get("choices")
    if not isinstance(choices, list) or len(choices) < 2 or len(choices) > 26:
        raise InvalidRow("no_answer", f"choices is {choices!r}")
    answer = row.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices):
        raise InvalidRow("no_answer", f"answer index {answer!r} for {len(choices)} choices")
    hint = row.get("hint")
    lines = [f"Context: {hint.strip()}"] if isinstance(hint, str) and hint.strip() else []
    lines.append(stem)
    lines.extend(f"{chr(65 + k)}. {str(c).strip()}" for k, c in enumerate(choices))
    return Item(task=spec.task, domain=spec.domain, row_id=rid, question="\n".join(lines),
                answer=chr(65 + answer), answer_type="choice", images=(image,),
                source_question=stem)
