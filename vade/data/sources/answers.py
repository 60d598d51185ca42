"""Ground truth from a source's answer text: which span is the answer, and what type it is.

LLaVA-OneVision answers come in several shapes (ecosystem.md): "The answer is N" (CLEVR-Math),
reasoning ending "Answer: X" (geo170k(qa)), a bare Yes/No (figureqa), a letter (ai2d), mixed
letters/values elsewhere. The reward checks by type (``vade.rewards``), so the type must be
right: a letter only counts as a choice when the question offers choices.
"""

from __future__ import annotations

import re

from vade.data.items import InvalidRow

__all__ = [
    "classify_answer",
    "extract_answer",
    "has_choices",
    "parse_answer",
    "strip_instructions",
]

_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_ANSWER_COLON = re.compile(r"(?i)\banswer\s*[:：]\s*(.+?)\s*$", re.DOTALL)
_ANSWER_IS = re.compile(r"(?i)\bthe (?:final )?answer is\s*[:：]?\s*(.+?)\s*$", re.DOTALL)
_LETTER = re.compile(r"^\(?([A-Za-z])\)?(?:\s*[.:)]\s*.*)?$", re.DOTALL)
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
_CHOICES = re.compile(r"(?im)(?:^|\s)\(?[A-H][.):]\s|^\s*(?:choices|options)\s*:")
_MATHY = re.compile(r"[0-9\\^/√π°]|sqrt|frac|pi")
# Instruction lines of the llava_format sources; the prompt template gives our own instruction.
_INSTRUCTIONS = re.compile(
    r"(?im)^\s*(?:answer the question using a single word or phrase\.?"
    r"|answer with the option'?s letter from the given choices directly\.?"
    r"|answer with (?:the|a) (?:letter|single letter)[^\n]*"
    r"|first perform reasoning, then finally[^\n]*)\s*$")


def strip_instructions(question: str) -> str:
    return "\n".join(line for line in _INSTRUCTIONS.sub("", question).splitlines()
                     if line.strip()).strip()


def has_choices(question: str) -> bool:
    return bool(_CHOICES.search(question))


def extract_answer(text: str, rule: str) -> str | None:
    """The answer span of ``text`` under ``rule``; None when nothing parseable is there."""
    text = text.strip()
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    last_line = text.splitlines()[-1].strip() if text else ""
    for pattern in ((_ANSWER_IS, _ANSWER_COLON) if rule == "answer_is"
                    else (_ANSWER_COLON, _ANSWER_IS)):
        m = pattern.search(last_line) or pattern.search(text)
        if m:
            return m.group(1).strip().rstrip(".").strip() or None
    if rule in ("answer_is", "answer_colon"):
        # The declared shape is missing; accept a bare short answer only (no reasoning text).
        return text.rstrip(".") if text and "\n" not in text and len(text) <= 20 else None
    if text and "\n" not in text and len(text) <= 40:
        return text.rstrip(".").strip() or None
    return None


def classify_answer(answer: str, question: str) -> tuple[str, str]:
    """(normalised ground truth, answer type) for an extracted answer span."""
    a = answer.strip()
    low = a.lower()
    if low in ("yes", "no"):
        return a.capitalize(), "yesno"
    m = _LETTER.match(a)
    if m and has_choices(question) and (len(a) == 1 or a[1] in ".:)" or a.startswith("(")):
        return m.group(1).upper(), "choice"
    numeric = a.replace(",", "").replace("$", "").replace("%", "").strip()
    if _NUMBER.match(numeric):
        return numeric, "number"
    if _MATHY.search(a) and len(a) <= 60:
        return a, "math"
    return a, "text"


def parse_answer(text: object, question: str, rule: str) -> tuple[str, str]:
    """(ground truth, answer type) or ``InvalidRow('no_answer')``; ``rule`` as in ``SourceSpec``."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidRow("no_answer", "empty answer")
    span = extract_answer(text, rule)
    if span is None:
        raise InvalidRow("no_answer", f"no answer found in {text.strip()[-60:]!r}")
    truth, kind = classify_answer(span, question)
    wanted = {"yesno": "yesno", "letter": "choice", "answer_is": "number"}.get(rule)
    if wanted is not None and kind != wanted:
        raise InvalidRow("no_answer", f"expected a {wanted} answer, got {span[:60]!r}")
    if rule == "answer_colon" and kind == "text":
        raise InvalidRow("no_answer", f"'Answer:' span is not a letter/value: {span[:60]!r}")
    return truth, kind
