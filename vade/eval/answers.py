"""Final answers of a reasoning response in the form lmms-eval's ChartQA/ScienceQA scorers expect.

lmms-eval compares a whole prediction string with the gold answer (ChartQA: ``float()`` within
5%, else case-insensitive equality; ScienceQA: the option letter, or ``"B. ..."``). A model that
reasons and boxes its answer writes the same value in many spellings (``62\\%``, ``\\text{Yes}``,
``1,200``, ``\\$12``, ``(B)``, ``B.``), each of which those scorers count wrong. This module
reads the answer exactly as the training reward does (``vade.rewards``: the same extraction, the
same Unicode/LaTeX stripping, the same number parser and option-letter reader, so an evaluation
score and a training reward mean the same thing) and writes it back plainly: a number without
separators or currency, a bare letter, or the stripped text. Scoring stays lmms-eval's.
A hedged answer ("\\boxed{A} or \\boxed{B}") becomes the empty string, which scores 0.
"""

from __future__ import annotations

from vade.rewards import extract_answer
from vade.rewards.candidates import is_hedged
from vade.rewards.normalize import canonical_unicode, parse_number, strip_latex
from vade.rewards.verify import option_letter

__all__ = ["chartqa_answer", "plain_answer", "scienceqa_answer"]

_MARKDOWN = str.maketrans("", "", "*`")


def _final(response: str, choice_letters: str | None = None) -> str:
    """The committed answer (training's extraction), else the response's last non-empty line."""
    found = extract_answer(response, choice_letters=choice_letters).answer
    if found is not None:
        return found
    lines = [line.strip() for line in response.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def plain_answer(text: str) -> str:
    """``text`` without typography: LaTeX wrappers, markdown, a wrapping ``(X)``, a final period;
    a number (``1,200``, ``$12``, ``62\\%``) as its plain decimal, a percent sign kept."""
    s = strip_latex(canonical_unicode(text)).translate(_MARKDOWN).strip()
    s = s.rstrip(".").strip()
    if len(s) >= 3 and s[0] == "(" and s[-1] == ")" and s.count("(") == 1:
        s = s[1:-1].strip()
    number = parse_number(s, allow_units=False)
    if number is None:
        return " ".join(s.split())
    value = format(number.value.normalize(), "f")
    return value + "%" if number.percent else value


def chartqa_answer(response: str, gold: str) -> str:
    """The final answer for lmms-eval's ``relaxed_correctness``. A percent sign is kept only when
    the gold answer has one: ChartQA writes percentages as plain numbers ("62"), and lmms-eval
    would read "62%" as 0.62."""
    answer = plain_answer(_final(response))
    if answer.endswith("%") and not str(gold).strip().endswith("%"):
        answer = answer[:-1]
    return answer


def scienceqa_answer(response: str, n_choices: int) -> str:
    """The option letter the response commits to (``(B)``, ``B.``, ``\\text{B}``), or "" when it
    names none or hedges between options (scored 0)."""
    letters = "".join(chr(ord("A") + i) for i in range(n_choices))
    answer = _final(response, letters)
    if is_hedged(answer, "choice", letters):
        return ""
    return option_letter(plain_answer(answer), n_choices) or ""
