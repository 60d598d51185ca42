"""MathVision, two named variants: the official rule-based scorer and the paper's LLM judge.

The paper (Section 4.1) says MathVista, MathVerse and MathVision were scored with "the official
evaluation code ... which utilizes the LLM-as-a-judge approach"; MathVision's official code
(mathllm/MATH-V, ``evaluation/evaluate.py``, ``utils.py``) uses no model. Both are offered:

* ``rule`` (the official code): the answer is cut from the response as ``evaluate.py`` cuts it
  (a final " B." or a leading "B\\n" is the letter; the number after the last "is "; the text
  after "the answer is" and its kin when there is no box; the last ``\\boxed{}`` otherwise),
  cleaned by lmms-eval's copy of the official ``find_math_answer`` (imported), and compared,
  lower-cased, with the gold answer and with the gold option's text by the official
  ``is_equal``: equal strings, else element-wise tuples, else equal values to 2 decimals of
  ``latex2sympy``'s parse. Where the official code calls ``eval`` on that parse, we compute the
  same number without eval (``vade.eval.pyvalue``), so a comma list is a list (never equal to
  a permutation) and letters are symbols (never a number), exactly as officially.
* ``judge`` (the paper's wording, the default): MathVerse's two judge steps (extraction, then
  match; ``vade.eval.mathverse``), with a multiple-choice item's options shown to the judge in
  the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vade.eval.mathverse import score_response
from vade.eval.official import lmms_eval_task_file
from vade.eval.pyvalue import Number, python_value

__all__ = ["VARIANTS", "clean_answer", "cut_answer", "judge_question", "rule_answer",
           "rule_correct", "rule_equal", "score_judge", "score_rule"]

VARIANTS = ("judge", "rule")
_SYMBOL = re.compile(r"[a-zA-Z]|\\[a-zA-Z]+")  # "x = 3" and "\alpha = 30" are the value 3, 30
_COMMAND = re.compile(r"\\([a-zA-Z]+)")
# commands latex2sympy reads as numbers or operations, not symbols (any other, \alpha or a glued
# "\pir", is a symbol); their letters are not a value's symbols
_VALUE_COMMANDS = frozenset({
    "pi", "sqrt", "frac", "dfrac", "tfrac", "cdot", "times", "div", "circ", "left", "right",
    "infty", "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "log", "ln",
    "exp", "pm", "degree", "displaystyle"})
_FLAGS = ("the final answer is", "the answer is", "the correct answer is", "the answer should be")


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


def clean_answer(answer: str) -> str:
    """The official cleaning: lmms-eval's copy of MATH-V's ``find_math_answer`` (identical to
    ``evaluation/utils.py`` but for bare ``except:`` clauses), then ``evaluate.py``'s letter and
    punctuation fixes."""
    s = lmms_eval_task_file("mathvision/eval_utils.py").find_math_answer(answer)
    for c in "abcde":
        s = s.replace(f"({c})", c)
    for c in "abcde":
        s = s.replace(f"{{{c}}}", c)
    return s.rstrip(".").lstrip(":").strip()


def _latex_value(text: str) -> Number:
    """``eval(str(latex2sympy(text)))`` as the official code computes it, without eval, read as
    latex2sympy2 1.9.1 (the version that reproduces MATH-V's stored verdicts) reads it where
    1.5.4 (the one installable beside math-verify) differs: ``$...$`` unwrapped,
    ``\\displaystyle`` dropped, no value for an equation whose left side is not one symbol or
    for a value with letters outside LaTeX commands: 1.9.1 reads every letter as a symbol, so
    "150cm^{2}", "\\pi r" and "2+3cm" have none (the official verdict: not equal), where 1.5.4
    drops trailing letters (150, pi, 5; issue 49)."""
    from latex2sympy2 import latex2sympy  # lazy: the cpu extra; SymPy loads in seconds

    inner = text.strip()
    if len(inner) > 2 and inner[0] == inner[-1] == "$":
        inner = inner[1:-1]
    inner = inner.replace("\\displaystyle", "")
    if "=" in inner and not _SYMBOL.fullmatch(inner.split("=")[0].strip()):
        # 1.9.1 solves "2\alpha+\beta=90" (equations, no number); 1.5.4 reads it as 90
        raise ValueError(f"{text!r} is an equation, not a value")
    value = _before_unbalanced_brace(inner.split("=")[-1])   # the parser stops there
    bare = _COMMAND.sub(lambda m: " " if m[1] in _VALUE_COMMANDS else " x ", value)
    if re.search(r"[a-zA-Z]", bare):
        raise ValueError(f"{text!r} holds symbols, not a value")
    return python_value(str(latex2sympy(inner)))


def _before_unbalanced_brace(text: str) -> str:
    """``text`` up to its first ``}`` without a ``{``: latex2sympy's parse ends there, so
    letters after it ("8+2\\sqrt{2}}.theansweris:..." in published runs) are not read."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return text[:i]
    return text


def _eval_tuple(s: str) -> str:
    """The official ``eval_tuple``: each element of a "(a,b)" or "[a,b]" rounded to 2 decimals,
    the string unchanged when one fails."""
    parts = s[1:-1].split(",")
    if len(s) < 2 or len(parts) < 2 or s[0] + s[-1] not in ("()", "[]"):
        return s
    try:
        inner = ",".join(str(round(_latex_value(p), 2)) if "infty" not in p and p not in
                         ("a", "-a") else p for p in parts)
    except Exception:  # noqa: BLE001 -- the official code falls back on any failure
        return s
    return s[0] + inner + s[-1]


def rule_equal(answer: str, gold: str) -> bool:
    """The official ``is_equal`` (lower-cased string equality, then element-wise tuples, then
    equal values to 2 decimals), with its ``eval`` replaced by ``python_value``."""
    a, g = answer.lower(), gold.lower()
    if not a.replace(" ", "") or not g.replace(" ", ""):
        return False
    if a.strip() == g.strip():
        return True
    a, g = _eval_tuple(a), _eval_tuple(g)
    if a == g:
        return True
    try:
        return round(_latex_value(g), 2) == round(_latex_value(a), 2)
    except Exception:  # noqa: BLE001 -- as officially: any failure is "not equal"
        return False


def rule_answer(response: str) -> str:
    """The answer the official code compares: cut from the response, then cleaned."""
    return clean_answer(cut_answer(response))


def rule_correct(response: str, gold: str, options: Sequence[str]) -> bool:
    """The rule variant's verdict for one response."""
    answer = rule_answer(response)
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
    return score_response(judge_question(doc), str(doc["answer"]), response)
