"""The training reward's verdict on ChartQA and ScienceQA: the number named ``reward`` beside
lmms-eval's official one (``tasks/reasoning_utils.py``).

One answer semantics: a response earns in this number exactly what it earns as a reward, because
both call ``vade.rewards.score_one`` (the same extraction of the final answer, the same verdict
function per answer type: ``relaxed`` for ChartQA, ``choice`` for ScienceQA). So "50%" against a
gold 0.5 or 50, "1,200" against 1200, "5 cm" against 5, an option's text instead of its letter,
and a hedge ("A or B": 0) are read once, in ``vade.rewards``, for both. Where a benchmark's official
scorer compares differently, the difference is named in ``vade.eval.semantics`` (one table) and
tested; ChartQA's relaxed accuracy and ScienceQA's letter match need none beyond the reading of
the answer's spelling (what lmms-eval's scorers would see as a different string).

These return lmms-eval's metric names, so the task YAMLs and the runner read them unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vade.rewards import score_one
from vade.rewards.normalize import canonical_unicode, parse_number, strip_latex

__all__ = ["chartqa_scores", "plain_answer", "scienceqa_scores"]

_MARKDOWN = str.maketrans("", "", "*`")


def plain_answer(text: str) -> str:
    """``text`` without typography (LaTeX wrappers, markdown, a wrapping ``(X)``, a final period;
    a number as its plain decimal, a percent sign kept): what a judge or a log shows."""
    s = strip_latex(canonical_unicode(text)).translate(_MARKDOWN).strip()
    s = s.rstrip(".").strip()
    if len(s) >= 3 and s[0] == "(" and s[-1] == ")" and s.count("(") == 1:
        s = s[1:-1].strip()
    number = parse_number(s, allow_units=False)
    if number is None:
        return " ".join(s.split())
    value = format(number.value.normalize(), "f")
    return value + "%" if number.percent else value


def chartqa_scores(doc: Mapping[str, Any], response: str) -> dict[str, float]:
    """lmms-eval's ChartQA metrics (overall and the item's split) from the reward's ``relaxed``
    verdict (5% relative tolerance on numbers, exact match up to case otherwise)."""
    where = f"ChartQA item (type {doc.get('type', '?')})"
    score = score_one(response or "", str(doc["answer"]), "relaxed", where=where)["acc"]
    split = "relaxed_human_split" if doc.get("type") == "human_test" else \
        "relaxed_augmented_split"
    return {"relaxed_overall": score, split: score}


def scienceqa_scores(doc: Mapping[str, Any], response: str) -> dict[str, float]:
    """lmms-eval's ScienceQA ``exact_match`` from the reward's ``choice`` verdict (the option
    letter, or the option's text; a hedge scores 0)."""
    choices: Sequence[str] = list(doc["choices"])
    index = int(doc["answer"])
    if not 0 <= index < len(choices):
        raise ValueError(f"ScienceQA item: answer index {index} is not one of its "
                         f"{len(choices)} choices")
    gold = chr(ord("A") + index)
    score = score_one(response or "", gold, "choice", {"choices": choices},
                      where="ScienceQA item")["acc"]
    return {"exact_match": score}
