"""MathVision, two named variants: the official rule-based scorer and the paper's LLM judge.

The paper (Section 4.1) says MathVista, MathVerse and MathVision were scored with "the official
evaluation code ... which utilizes the LLM-as-a-judge approach"; MathVision's official code
(mathllm/MATH-V, ``evaluation/evaluate.py``, ``utils.py``) uses no model. Both are offered:

* ``rule`` (the official code, ours, written from what it does): the answer is cut from the
  response (a final " B." or a leading "B\\n" is the letter; the number after the last "is ";
  the text after "the answer is" and its kin when there is no box; the last ``\\boxed{}``
  otherwise), cleaned of LaTeX and units as the official ``find_math_answer`` cleans it
  (``0.5`` becomes ``\\frac{1}{2}``, ``3/4`` ``\\frac{3}{4}``), and compared, lower-cased,
  with the gold answer and with the gold option's text: equal strings, else equal values
  rounded to 2 decimals. Difference from the official code, which evaluates ``latex2sympy``'s
  output with Python's ``eval``: we never eval; plain numbers and fractions are compared by value
  as officially, other expressions symbolically by math-verify (``1.73`` against ``\\sqrt{3}``
  is right officially, wrong here).
* ``judge`` (the paper's wording, the default): MathVerse's two judge steps (extraction, then
  match; ``vade.eval.mathverse``), with a multiple-choice item's options shown to the judge in
  the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["VARIANTS", "clean_answer", "cut_answer", "judge_question", "rule_correct",
           "rule_equal", "score_judge", "score_rule"]

VARIANTS = ("judge", "rule")
_FLAGS = ("the final answer is", "the answer is", "the correct answer is", "the answer should be")
_BOXED = re.compile(r"oxed\{(.*)\}", re.DOTALL)


def cut_answer(response: str) -> str:
    """The official cut of the answer from a response (before cleaning)."""
    answer = response.strip()
    for c in "ABCDE":
        if answer.endswith((f" {c}.", f" ({c}).")) or answer.startswith(
                (f"{c}\n", f"({c})\n", f"({c}) {c}\n")):
            answer = c
    tail = answer.split("is ")[-1].rstrip(".")
    if _is_number(tail):
        answer = tail
    if "oxed{" not in answer:
        for flag in _FLAGS:
            for spelling in (flag, flag.replace("the", "The")):
                before = answer
                answer = answer.split(spelling)[-1].strip()
                if spelling in before:
                    answer = answer.split("\n")[0].split(". ")[0]
    elif answer.count("oxed{") > 1:
        answer = "\\boxed{" + answer.split("oxed{")[-1]
    return answer


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_DROP = ("\\text", "\\mbox", "\\left", "\\right", "^{\\circ}", "^\\circ", "{m}^3", "m^3",
         "{units}", "units", "{km}", "km")


def clean_answer(answer: str) -> str:
    """The official ``find_math_answer`` and ``_strip_string`` cleaning, then its letter and
    punctuation fixes."""
    s = answer.lower().replace("{}", "")
    boxed = _BOXED.findall(s)
    if boxed:
        s = boxed[-1]
    close, open_ = s.find("}"), s.find("{")
    if close != -1 and (open_ == -1 or close < open_):
        s = s.split("}")[0]
    s = s.split("=")[-1].split("\\approx")[-1]
    s = s.replace(" ", "").replace("\\,", "").replace("∞", "\\infty").replace("+\\infty", "\\infty")
    s = s.replace("\\\\", "\\").replace("\n", "").replace("bmatrix", "pmatrix")
    for token in _DROP:
        s = s.replace(token, "")
    s = s.replace("\\!", "").replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\$", "").replace("$", "").split("\\text{ ")[0].replace("\\%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if s.startswith("."):
        s = "0" + s
    if s == "0.5":
        s = "\\frac{1}{2}"
    parts = s.split("/")
    if len(parts) == 2 and all(p.lstrip("-").isdigit() for p in parts) and s == "/".join(
            str(int(p)) for p in parts):
        s = f"\\frac{{{parts[0]}}}{{{parts[1]}}}"
    for c in "abcde":
        s = s.replace(f"({c})", c).replace(f"{{{c}}}", c)
    return s.rstrip(".").lstrip(":").strip()


def _value(text: str) -> float | None:
    from vade.rewards.normalize import parse_number

    parsed = parse_number(text, allow_units=False)
    if parsed is None or parsed.percent:
        return None
    return round(float(parsed.value), 2)


def _same_value(a: str, b: str) -> bool:
    va, vb = _value(a), _value(b)
    if va is not None and vb is not None:
        return va == vb
    from vade.rewards.math_check import math_equal

    return va is None and vb is None and math_equal(a, b)


def rule_equal(answer: str, gold: str) -> bool:
    """The official ``is_equal``: lower-cased string equality, element-wise for tuples and
    lists, else equal values to 2 decimals (see module doc for our no-eval difference)."""
    a, g = answer.lower().strip(), gold.lower().strip()
    if not a.replace(" ", "") or not g.replace(" ", ""):
        return False
    if a == g:
        return True
    pa, pg = _elements(a), _elements(g)
    if pa is not None and pg is not None:
        return len(pa) == len(pg) and all(x == y or _same_value(x, y) for x, y in zip(pa, pg))
    return _same_value(a, g)


def _elements(text: str) -> list[str] | None:
    if len(text) > 2 and text[0] + text[-1] in ("()", "[]") and "," in text:
        return [e.strip() for e in text[1:-1].split(",")]
    return None


def rule_correct(response: str, gold: str, options: Sequence[str]) -> bool:
    """The rule variant's verdict for one response."""
    answer = clean_answer(cut_answer(response))
    gold_text = options[ord(gold) - ord("A")] if options and len(gold) == 1 and \
        0 <= ord(gold) - ord("A") < len(options) else ""
    return rule_equal(answer, gold) or bool(gold_text) and rule_equal(answer, gold_text)


def score_rule(doc: dict[str, Any], response: str) -> float:
    return float(rule_correct(response, str(doc["answer"]), list(doc.get("options") or [])))


def judge_question(doc: dict[str, Any]) -> str:
    """The question as the judge sees it: a multiple-choice item's options listed after it."""
    options = list(doc.get("options") or [])
    if not options:
        return str(doc["question"])
    listed = "\n".join(f"{chr(ord('A') + i)}. {o}" for i, o in enumerate(options))
    return f"{doc['question']}\nChoices:\n{listed}"


def score_judge(doc: dict[str, Any], response: str) -> dict[str, object]:
    from vade.eval.mathverse import score_response

    return score_response(judge_question(doc), str(doc["answer"]), response)
