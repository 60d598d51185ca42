"""MathVista scored as its official pipeline scores it (lupantech/MathVista, ``evaluation/``).

Three steps, each ours, written from what the official code does:

1. Extraction (``extract_answer.py``): a response that already is the answer skips the judge
   (an empty response is ""; a multiple-choice response equal to an option's text is that text;
   for integer / float answers a response that parses as that type is the number). Otherwise
   the judge extracts it from the question (with its hint, which names the answer type) and the
   response, with the official prompt (five worked examples from real items), built by
   lmms-eval's own ``mathvista_evals`` code (``vade.eval.official``).
2. Normalisation (``calculate_score.py``): multiple choice: a letter "(B)" or "B" becomes that
   option's text, anything else the option nearest by edit distance (Levenshtein); integer:
   ``int(float(x))`` (truncation: "3.7" is 3); float: rounded to the item's ``precision``
   decimals; list: the string; an unparsable number is None (wrong).
3. Comparison: the normalised prediction equals the gold answer as a string, exactly (no
   strip, as ``safe_equal``).

A judge that cannot extract (unreachable) leaves the extraction empty, as the official code does;
the relay counts that call as failed (``vade.eval.judge``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vade.eval.judge_client import JudgeError, chat
from vade.eval.official import mathvista_extract_prompt

__all__ = ["extract", "is_correct", "normalize", "quick_extract",
           "score_doc"]

def quick_extract(response: str, question_type: str, answer_type: str,
                  choices: Sequence[str]) -> str | None:
    """The extraction without the judge, where the official code skips it (None: ask it)."""
    if not response:
        return ""
    if question_type == "multi_choice" and response in choices:
        return response
    try:
        if answer_type == "integer":
            return str(int(response))
        if answer_type == "float":
            return str(float(response))
    except ValueError:
        pass
    return None


def extract(response: str, doc: dict[str, Any]) -> str:
    """Step 1 (see module doc); the judge is asked only when the quick path finds nothing."""
    response = response.strip()
    quick = quick_extract(response, doc["question_type"], doc["answer_type"],
                          doc.get("choices") or [])
    if quick is not None:
        return quick
    try:
        return chat(mathvista_extract_prompt(doc["query"], response))
    except JudgeError:
        return ""


def _nearest(text: str, choices: Sequence[str]) -> str:
    from Levenshtein import distance  # lazy: the eval extra

    distances = [distance(text, c) for c in choices]
    return choices[distances.index(min(distances))]


def normalize(extraction: str, question_type: str, answer_type: str,
              choices: Sequence[str], precision: int | None) -> str | None:
    """Step 2 (see module doc)."""
    text = str(extraction).strip()
    if question_type == "multi_choice":
        bracketed = re.findall(r"\(([a-zA-Z])\)", text)
        if bracketed:
            text = bracketed[0].upper()
        letters = [chr(ord("A") + i) for i in range(len(choices))]
        return choices[letters.index(text)] if text in letters else _nearest(text, choices)
    try:
        if answer_type == "integer":
            return str(int(float(text)))
        if answer_type == "float":
            return str(round(float(text), int(precision or 0)))
    except (ValueError, OverflowError):
        return None
    return str(extraction)  # list: the string as extracted (official: no strip)


def is_correct(prediction: str | None, answer: str) -> bool:
    """Step 3: string equality of the normalised prediction and the gold answer."""
    return prediction is not None and prediction == str(answer)  # official: safe_equal, exact


def score_doc(doc: dict[str, Any], response: str) -> dict[str, Any]:
    """The three steps for one item, with what each produced (kept in the samples log)."""
    extraction = extract(response, doc)
    prediction = normalize(extraction, doc["question_type"], doc["answer_type"],
                           list(doc.get("choices") or []), doc.get("precision"))
    correct = is_correct(prediction, doc["answer"])
    return {"extraction": extraction, "prediction": prediction, "correct": float(correct)}
