"""Which verdict scores each benchmark, and every place the evaluation departs from the reward.

One answer semantics (issue 25): the training reward (``vade.rewards``) has one verdict function
per answer type; the evaluation uses the same ones wherever the benchmark's official scorer does
not rule otherwise. This module is the one place that says where it does:

* ChartQA, ScienceQA: the table number is lmms-eval's official metric on the final boxed answer
  (comparable with published numbers); the reward's verdict (``vade.eval.answers``) is stored
  beside it, named ``reward``. The synthetic held-out sets: the reward's verdict, no exception
  (``vade.eval.local_task``).
* MathVista, MathVerse, MathVision: their official pipelines (``vade.eval.mathvista``,
  ``.mathverse``, ``.mathvision``). MathVerse and MathVision's judge variant leave the
  comparison to the judge; MathVista and MathVision's rule variant compare by rules that differ
  from the reward's, listed in ``DIFFERENCES`` with one worked case each (the evaluation verdict
  read off the official code by hand, the reward's from ``vade.rewards``), all tested.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vade.eval.mathvision import rule_correct
from vade.eval.mathvista import is_correct, normalize

__all__ = ["DIFFERENCES", "SCORERS", "Difference", "official_verdict"]

SCORERS: dict[str, str] = {
    "ChartQA": "lmms-eval's relaxed_correctness on the boxed answer; beside it the reward's "
               "relaxed verdict (5% on numbers, exact otherwise)",
    "ScienceQA": "lmms-eval's exact match on the boxed answer; beside it the reward's choice "
                 "verdict (letter or option text; hedges 0)",
    "synthetic": "the reward's verdict for the row's answer type",
    "MathVista": "judge extraction (official prompt), then MathVista's normalisation and string "
                 "equality",
    "MathVerse": "judge extraction of the last 30 words, then judge match (official prompts, "
                 "strict 0/1); query_wo, beside it query_cot",
    "MathVision": "judge extraction and match (default) or MATH-V's rules (variant rule)",
}


@dataclass(frozen=True)
class Difference:
    """An official rule under which an answer earns other than its reward, with one case:
    ``answer`` is the final answer (for MathVista: the judge's extraction), ``answer_type`` the
    reward's type for such an item."""

    benchmark: str
    rule: str
    answer: str
    gold: str
    answer_type: str
    reward: float
    evaluation: float
    item: Mapping[str, Any] = field(default_factory=dict)


def _vista(answer_type: str, precision: int | None = None, choices: tuple[str, ...] = ()
           ) -> dict[str, Any]:
    return {"question_type": "multi_choice" if choices else "free_form",
            "answer_type": answer_type, "precision": precision, "choices": list(choices)}


DIFFERENCES: tuple[Difference, ...] = (
    Difference("MathVista", "integer answers are truncated: int(float(x))", "3.7", "3", "math",
               0.0, 1.0, _vista("integer")),
    Difference("MathVista", "integer answers are truncated (0.04 is 0)", "0.04", "0", "math",
               0.0, 1.0, _vista("integer")),
    Difference("MathVista", "float answers are rounded to the item's precision", "1.54", "1.5",
               "math", 0.0, 1.0, _vista("float", 1)),
    Difference("MathVista", "a number must parse as float: no percent sign", "50%", "50", "math",
               1.0, 0.0, _vista("float", 1)),
    Difference("MathVista", "a number must parse as float: no thousands separator", "1,200",
               "1200", "math", 1.0, 0.0, _vista("integer")),
    Difference("MathVista", "a choice that names no option is the option nearest by edit "
               "distance", "the red one", "red", "choice", 0.0, 1.0,
               _vista("text", choices=("red", "blue"))),
    Difference("MathVista", "a hedge is the option nearest by edit distance (ties: the first)",
               "A or B", "1", "choice", 0.0, 1.0, _vista("text", choices=("1", "2"))),
    Difference("MathVision", "numbers are equal when equal to 2 decimals", "0.333", "1/3",
               "math", 0.0, 1.0, {"options": []}),
    Difference("MathVision", "numbers are equal when equal to 2 decimals", "2.004", "2", "math",
               0.0, 1.0, {"options": []}),
)


def official_verdict(d: Difference) -> float:
    """The evaluation's verdict on ``d``'s case, by the benchmark's own (rule) scorer."""
    if d.benchmark == "MathVista":
        item = d.item
        prediction = normalize(d.answer, item["question_type"], item["answer_type"],
                               item["choices"], item["precision"])
        return float(is_correct(prediction, d.gold))
    if d.benchmark == "MathVision":
        return float(rule_correct(rf"\boxed{{{d.answer}}}", d.gold, d.item.get("options", [])))
    raise ValueError(f"no rule-based scorer for {d.benchmark} (its judge decides)")
