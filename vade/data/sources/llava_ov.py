"""LLaVA-OneVision-Data rows -> ``Item``.

Row schema: ``id``, ``image`` ({bytes, path}), ``conversations`` [{from: human|gpt, value}],
``data_source``. The first human turn is the question (it usually starts with ``<image>\\n``; the
placeholder is dropped and re-added by the writer, one per image), the first gpt turn after it
holds the answer. Multi-turn rows (several questions on one image) contribute their first pair.
"""

from __future__ import annotations

from typing import Any

from vade.data.items import InvalidRow, Item, check_image, clean_question
from vade.data.sources import SourceSpec
from vade.data.sources.answers import parse_answer, strip_instructions

__all__ = ["parse_row", "row_id"]


def row_id(spec: SourceSpec, row: dict[str, Any], position: int) -> str:
    value = row.get("id")
    return str(value) if value not in (None, "") else f"row{position}"


def _first_pair(conversations: Any) -> tuple[str, str]:
    if not isinstance(conversations, list):
        raise InvalidRow("empty_question", "conversations is not a list")
    question = answer = None
    for turn in conversations:
        if not isinstance(turn, dict):
            continue
        who = turn.get("from")
        if question is None and who == "human":
            question = turn.get("value")
        elif question is not None and who == "gpt":
            answer = turn.get("value")
            break
    if question is None:
        raise InvalidRow("empty_question", "no human turn")
    if answer is None:
        raise InvalidRow("no_answer", "no gpt turn after the question")
    return question, answer


def parse_row(spec: SourceSpec, row: dict[str, Any], rid: str) -> Item:
    image = check_image(row.get("image"))
    raw_question, raw_answer = _first_pair(row.get("conversations"))
    question = clean_question(strip_instructions(clean_question(raw_question)))
    truth, kind = parse_answer(raw_answer, question, spec.answer)
    return Item(task=spec.task, domain=spec.domain, row_id=rid, question=question, answer=truth,
                answer_type=kind, images=(image,), source_question=question)
