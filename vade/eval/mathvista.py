"""MathVista scored as its official pipeline scores it (lupantech/MathVista, ``evaluation/``).

Three steps, each ours, written from what the official code does:

1. Extraction (``extract_answer.py``): a response that already is the answer skips the judge
   (an empty response is ""; a multiple-choice response equal to an option's text is that text;
   for integer / float answers a response that parses as that type is the number). Otherwise
   the judge extracts it from the question (with its hint, which names the answer type) and the
   response, prompted with worked examples of each answer type (``EXTRACTION_PROMPT``).
2. Normalisation (``calculate_score.py``): multiple choice: a letter "(B)" or "B" becomes that
   option's text, anything else the option nearest by edit distance (Levenshtein); integer:
   ``int(float(x))`` (truncation: "3.7" is 3); float: rounded to the item's ``precision``
   decimals; list: the string; an unparsable number is None (wrong).
3. Comparison: the normalised prediction equals the gold answer as a string.

A judge that cannot extract (unreachable) leaves the extraction empty, as the official code does;
the relay counts that call as failed (``vade.eval.judge``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["EXTRACTION_PROMPT", "extract", "is_correct", "normalize", "quick_extract",
           "score_doc"]

EXTRACTION_PROMPT = """Read each example, then extract the final answer from the last model \
response and write only that answer after "Extracted answer:".

Hint: Please answer the question requiring an integer answer and provide the final value, e.g., \
1, 2, 3, at the end.
Question: How many bars are taller than 40?

Model response: Counting the bars above the 40 line gives five of them, so the answer is 5.

Extracted answer: 5

Hint: Please answer the question requiring a floating-point number with two decimal places and \
provide the final value, e.g., 1.23, 1.34, 1.45, at the end.
Question: What is the total price of a pen and a ruler? (Unit: $)

Model response: A pen costs $1.20 and a ruler $0.85, which adds up to $2.05.

Extracted answer: 2.05

Hint: Please answer the question requiring a Python list as an answer and provide the final \
list, e.g., [1, 2, 3], [1.2, 1.3, 1.4], at the end.
Question: In which two months is rainfall highest?

Model response: Rainfall peaks in months 7 and 8 of the year.

Extracted answer: [7, 8]

Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, at \
the end.
Question: Which angle is the largest?
Choices:
(A) 30°
(B) 60°
(C) 90°

Model response: The right angle is the largest, so the correct choice is (C) 90°.

Extracted answer: C"""


def _prompt(query: str, response: str) -> str:
    return f"{EXTRACTION_PROMPT}\n\n{query}\n\n{response}\n\nExtracted answer: "


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
    from vade.eval.judge_client import JudgeError, chat

    response = response.strip()
    quick = quick_extract(response, doc["question_type"], doc["answer_type"],
                          doc.get("choices") or [])
    if quick is not None:
        return quick
    try:
        return chat(_prompt(doc["query"], response))
    except JudgeError:
        return ""


def _nearest(text: str, choices: Sequence[str]) -> str:
    from Levenshtein import distance

    distances = [distance(text, c) for c in choices]
    return choices[distances.index(min(distances))]


def normalize(extraction: str, question_type: str, answer_type: str,
              choices: Sequence[str], precision: int | None) -> str | None:
    """Step 2 (see module doc)."""
    text = str(extraction).strip()
    if question_type == "multi_choice":
        import re

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
    return text


def is_correct(prediction: str | None, answer: str) -> bool:
    """Step 3: string equality of the normalised prediction and the gold answer."""
    return prediction is not None and str(prediction).strip() == str(answer).strip()


def score_doc(doc: dict[str, Any], response: str) -> dict[str, Any]:
    """The three steps for one item, with what each produced (kept in the samples log)."""
    extraction = extract(response, doc)
    prediction = normalize(extraction, doc["question_type"], doc["answer_type"],
                           list(doc.get("choices") or []), doc.get("precision"))
    correct = is_correct(prediction, doc["answer"])
    return {"extraction": extraction, "prediction": prediction, "correct": float(correct)}
