"""Ground truth from a source's answer text: which span is the answer, and what type it is.

LLaVA-OneVision answers come in several shapes (ecosystem.md): "The answer is N" (CLEVR-Math),
reasoning ending "Answer: X" (geo170k(qa)), a bare Yes/No (figureqa), a letter (ai2d), a worked
solution whose last sentence states the result (TabMWP: ``solution``), mixed letters/values
elsewhere (MathV360K: "The answer is C"). The reward checks by type (``vade.rewards``), so the type must be
right: a letter only counts as a choice when the question offers choices.
"""

from __future__ import annotations

import re

from vade.data.items import InvalidRow

__all__ = [
    "classify_answer",
    "extract_answer",
    "has_choices",
    "offered_choices",
    "parse_answer",
    "stated_answer",
    "strip_instructions",
]

_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_ANSWER_COLON = re.compile(r"(?i)\banswer\s*[:：]\s*(.+?)\s*$", re.DOTALL)
_ANSWER_IS = re.compile(r"(?i)\bthe (?:final )?answer is\s*[:：]?\s*(.+?)\s*$", re.DOTALL)
# "C", "C.", "C: 40", "C) 40", "(C)", "(C) 40°": a letter, then nothing or a separator
_LETTER = re.compile(r"^(?:\(([A-Za-z])\)(?:\s.*)?|([A-Za-z])(?:\s*[.:)]\s*.*)?)$", re.DOTALL)
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
_CHOICES = re.compile(r"(?im)(?:^|\s)\(?[A-H][.):]\s|^\s*(?:choices|options)\s*:")
_MATHY = re.compile(r"[0-9\\^/√π°]|sqrt|frac|pi")
# The sources' own answer-format instructions; our prompt template gives the only one. Each is
# removed as a sentence wherever it stands (MathV360K puts its "Hint: ..." on the question's own
# line in some rows), then empty lines go.
_INSTRUCTIONS = re.compile(
    r"(?i)(?:"
    r"answer the question using a single word or phrase\.?"
    r"|answer with the option'?s letter from the given choices directly\.?"
    r"|answer with (?:the|a) (?:letter|single letter)[^\n]*"
    r"|first perform reasoning, then finally[^\n]*"
    r"|based on the image, directly select the correct answer for the following question\s*[:.]?"
    r"|hint\s*:\s*please (?:directly )?answer the question[^\n]*?at the end\.?"
    r"|hint\s*:\s*please (?:directly )?answer the question and provide the correct option "
    r"letter[^\n]*?(?:\.(?=\s|$)|$)"
    r"|please answer yes or no\.?"
    r"|answer with the given options directly\.?"
    r"|answer the question by selecting only one option from the given options\.?"
    r"|answer the question with (?:yes or no|a short phrase)\.?"
    r")[ \t]*")


def strip_instructions(question: str) -> str:
    """``question`` without the source's answer-format instructions (and the blank lines left)."""
    return "\n".join(line.strip() for line in _INSTRUCTIONS.sub("", question).splitlines()
                     if line.strip()).strip()


def has_choices(question: str) -> bool:
    return bool(_CHOICES.search(question))


# A worked solution with no answer marker (TabMWP): its last sentence states the result.
_NUM = r"(?:-\s?)?\$?(?:\d[\d,]*(?:\.\d+)?|\.\d+)|\\frac\{\d+\}\{\d+\}|\d+/\d+"
_STATED = re.compile(r"\b(?:is|are|was|were|=|equals|be)\s+(?:about\s+|approximately\s+)?(" + _NUM
                     + r")(?:\s+[A-Za-z][\w\s'’-]*)?\.?$")
_LEADING = re.compile(r"^(" + _NUM + r")\s+[A-Za-z]")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+(?=[A-Z0-9$\\-])")  # not "P. M."
_CHOICES_LINE = re.compile(r"(?im)^\s*(?:choices|options)\s*:\s*(.+)$")


def offered_choices(question: str) -> list[str]:
    """Answer texts a question offers on a ``Choices: a, b, c`` line (empty if none)."""
    m = _CHOICES_LINE.search(question)
    return [c.strip() for c in m.group(1).split(",") if c.strip()] if m else []


def _number(span: str) -> str:
    span = span.replace("$", "").replace(",", "").replace(" ", "")
    m = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", span)
    return f"{m.group(1)}/{m.group(2)}" if m else span


def stated_answer(text: str, question: str) -> str | None:
    """The result a worked solution's last sentence states, or None when it is not unambiguous.

    With offered choices: the one choice named in the last sentence (yes/no: "no" when the
    sentence is negated, else "yes"). Otherwise a number: the only
    number of the sentence, else the one after "is/are/was/=" at its end, else the one it starts
    with ("24 members planted fewer than 2 seeds."). Checked on TabMWP's own solutions."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    sentence = _SENTENCE_END.split(lines[-1])[-1]
    choices = offered_choices(question)
    if choices:
        named = {c for c in choices
                 if re.search(r"(?<!\w)" + re.escape(c) + r"(?!\w)", sentence, re.IGNORECASE)}
        if not named:  # "1:05 P. M." for the choice "1:05 P.M.": compare without spaces
            compact = re.sub(r"\s+", "", sentence.lower())
            named = {c for c in choices if not c.replace(" ", "").isalnum()
                     and re.sub(r"\s+", "", c.lower()).rstrip(".") in compact}
        if not named and sorted(c.lower() for c in choices) == ["no", "yes"]:
            # "Kevin does have enough money." / "... so the relation is not a function."
            negated = re.search(r"\bnot\b|n't\b|\bno\b", sentence, re.IGNORECASE)
            named = {next(c for c in choices if c.lower() == ("no" if negated else "yes"))}
        return named.pop() if len(named) == 1 else None
    numbers = re.findall(_NUM, sentence)
    if len(numbers) == 1:
        return _number(numbers[0])
    m = _STATED.search(sentence) or _LEADING.match(sentence)
    return _number(m.group(1)) if m else None


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


def _marked(text: str) -> str | None:
    """The span after an explicit marker (\\boxed{}, "Answer:", "The answer is"), if any."""
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    for pattern in (_ANSWER_COLON, _ANSWER_IS):
        m = pattern.search(text.strip().splitlines()[-1]) if text.strip() else None
        if m:
            return m.group(1).strip().rstrip(".").strip() or None
    return None


def classify_answer(answer: str, question: str) -> tuple[str, str]:
    """(normalised ground truth, answer type) for an extracted answer span."""
    a = answer.strip()
    low = a.lower()
    if low in ("yes", "no"):
        return a.capitalize(), "yesno"
    m = _LETTER.match(a)
    if m and has_choices(question):
        return (m.group(1) or m.group(2)).upper(), "choice"
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
    if rule == "solution":
        span = _marked(text) or stated_answer(text, question)
    else:
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
