"""One verifier per answer type: is an extracted answer equal to the ground truth?

Each verifier takes the extracted prediction (a short string, never None) and the ground truth and
returns a bool. Types (``vade.data.records.ANSWER_TYPES``):

* ``choice``  option letters. The prediction may be ``B``, ``(B)``, ``B.``, ``B) text``,
  ``Option B``; when ``choices`` (the option texts, in letter order) are known, the option text
  itself also counts, and an answer equal to an option text is read as that option (so "A
  triangle" is the triangle option, not option A). The ground truth may be a letter or the
  correct option's text (read as that option first: MathVista's options ``(c) (a) (e) (d) (b)``
  with gold ``(b)`` mean option E). When every option's text is itself a letter, an answer
  that names a letter ("E", "(E)", "E.") names the option letter, not the option whose text is
  that letter.
* ``number``  numeric equality after ``normalize.parse_number``: exact for an integer gold
  (100000001 is not 100000000), else within relative tolerance ``NUMBER_REL_TOL`` (1e-6) and
  absolute tolerance ``NUMBER_ABS_TOL`` (1e-9), but always under half a unit of a written
  gold's last decimal (131253.6 is not 131253.5). The tolerance absorbs float formatting
  (``0.3333333`` vs ``1/3``), not approximation (``3.14`` is not ``3.14159``; ChartQA's 5% is the
  separate ``relaxed`` type).
* ``relaxed`` ChartQA relaxed accuracy (Masry et al. 2022, as in pix2struct's
  ``relaxed_correctness``): numbers match within 5% relative change (inclusive); non-numbers need
  an exact match up to case, spacing and a trailing period (``light_normalize``). A gold of 0
  needs an exact 0 (the paper's formula divides by it).
* ``yesno``   yes/no, case-insensitive, trailing punctuation ignored, first word decides
  (``Yes, it is`` is yes; ``True``/``y`` are not accepted).
* ``math``    string equality (ignoring spaces and LaTeX spacing; word answers ignoring case),
  then numeric equality within the number tolerance, then symbolic equivalence via math-verify
  (``math_check.math_equal``).
* ``text``    normalised exact match (SQuAD normalisation: case, punctuation, articles, spaces).

Hedges: a ``choice`` or ``yesno`` answer that names several candidates ("A or B", "\\boxed{A, B}",
"Yes/No") is wrong whichever of them is right (``candidates.is_hedged``); an answer equal to an
option's text is judged as that text first. Other types are unaffected.

Percentages: ``50%`` equals a gold of ``50`` or of ``0.5`` (ChartQA golds omit the sign; other
sources write the fraction); a gold written with ``%`` is compared by its number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from decimal import Decimal

from vade.rewards.candidates import is_hedged
from vade.rewards.math_check import math_equal
from vade.rewards.normalize import (
    ParsedNumber,
    canonical_unicode,
    light_normalize,
    normalize_text,
    parse_number,
    strip_latex,
)

__all__ = [
    "MAX_OPTIONS",
    "NUMBER_ABS_TOL",
    "NUMBER_REL_TOL",
    "RELAXED_TOL",
    "VERIFIERS",
    "exact_numbers_match",
    "numbers_match",
    "option_letter",
    "verify",
    "verify_choice",
    "verify_math",
    "verify_number",
    "verify_relaxed",
    "verify_text",
    "verify_yesno",
]

NUMBER_REL_TOL = Decimal("1e-6")
NUMBER_ABS_TOL = Decimal("1e-9")
RELAXED_TOL = Decimal("0.05")


def _candidates(p: ParsedNumber) -> tuple[Decimal, ...]:
    return (p.value, p.value / 100) if p.percent else (p.value,)


def numbers_match(pred: ParsedNumber, gold: ParsedNumber, rel_tol: Decimal,
                  abs_tol: Decimal = Decimal(0)) -> bool:
    """``|pred - gold| <= max(rel_tol * |gold|, abs_tol)`` for some reading of a percent sign.

    A prediction with ``%`` may mean the number or the fraction (``50%`` vs gold ``50`` or
    ``0.5``); a gold with ``%`` is taken as written (both spellings of it are accepted too).
    Decimal arithmetic keeps the 5% boundary exact (no binary rounding at 104.9 vs 105.1).
    """
    for g in _candidates(gold):
        for p in _candidates(pred):
            if abs(p - g) <= max(rel_tol * abs(g), abs_tol):
                return True
    return False


def exact_numbers_match(pred: ParsedNumber, gold: ParsedNumber) -> bool:
    """``numbers_match`` with the number tolerance, none for an integer gold (a tolerance on
    an integer accepts a wrong count: 100000001 for 100000000), and always less than half a unit
    of a written gold's last decimal (131253.6 is not 131253.5, though within 1e-6)."""
    if gold.percent:
        return numbers_match(pred, gold, NUMBER_REL_TOL, NUMBER_ABS_TOL)
    if gold.value == gold.value.to_integral_value():
        return numbers_match(pred, gold, Decimal(0))
    tol = max(NUMBER_REL_TOL * abs(gold.value), NUMBER_ABS_TOL)
    if gold.decimals is not None:   # strictly under half a unit: a value half a unit away
        # rounds to the gold only by a tie-break (0.00000000005 is not 0.0000000001, issue 49)
        tol = min(tol, Decimal(5).scaleb(-gold.decimals - 1).next_minus())
    return numbers_match(pred, gold, Decimal(0), tol)


def verify_number(pred: str, gold: str) -> bool:
    p, g = parse_number(pred), parse_number(gold)
    if p is None or g is None:
        return _same_light(pred, gold)
    return exact_numbers_match(p, g)


def _same_light(pred: str, gold: str) -> bool:
    p = light_normalize(pred)
    return bool(p) and p == light_normalize(gold)


def verify_relaxed(pred: str, gold: str) -> bool:
    p, g = parse_number(pred), parse_number(gold)
    if p is not None and g is not None:
        return numbers_match(p, g, RELAXED_TOL)
    return _same_light(pred, gold)


def _yes_no(text: str) -> str | None:
    words = normalize_text(text).split()
    if not words:
        return None
    return words[0] if words[0] in ("yes", "no") else None


def verify_yesno(pred: str, gold: str) -> bool:
    g = _yes_no(gold)
    return g is not None and _yes_no(pred) == g and not is_hedged(pred, "yesno")


# "B", "(B)", "B.", "B) text", "B: text", "[B]", "Option B", "option (b)".
_OPTION = re.compile(
    r"(?P<word>option|choice)?[ \t]{0,3}[(\[]?(?P<letter>[A-Za-z])[)\].:,]{0,2}(?=[ \t]|$)",
    re.IGNORECASE)
_MARKDOWN = str.maketrans("", "", "*`")  # "**B**." is B.
MAX_OPTIONS = 8  # letters A-H when the number of options is unknown ("I" is the pronoun)


def option_letter(text: str, n_choices: int | None = None) -> str | None:
    """The option letter a short answer names, upper case; None if it names none (or one past
    ``n_choices``, default ``MAX_OPTIONS``). A lower-case letter counts only when it is the whole
    answer."""
    s = strip_latex(canonical_unicode(text)).translate(_MARKDOWN).strip()
    m = _OPTION.match(s)
    if m is None:
        return None
    letter = m.group("letter")
    if letter.islower() and not m.group("word") and s.strip("()[]. ") != letter:
        return None  # "a cat" is not option A
    letter = letter.upper()
    if not 0 <= ord(letter) - ord("A") < (n_choices or MAX_OPTIONS):
        return None
    return letter


_LETTER_TEXT = re.compile(r"[(\[]?[A-Za-z][)\].]?")  # an option whose text is a letter: "(a)"


def _gold_letter(gold: str, choices: Sequence[str] | None, texts: list[str]) -> str | None:
    """The option the gold names: an option's exact text first, then a letter, then an
    option's normalised text."""
    if choices:
        exact = [str(c).strip() for c in choices]
        if gold.strip() in exact:
            return chr(ord("A") + exact.index(gold.strip()))
    letter = option_letter(gold, len(choices) if choices else None)
    if letter is None and normalize_text(gold) in texts:
        letter = chr(ord("A") + texts.index(normalize_text(gold)))
    return letter


_LETTER_THEN_TEXT = re.compile(r"\(?([A-Z])[).:]?\s+(\S.*)", re.DOTALL)


def _letter_with_its_text(pred: str, texts: Sequence[str]) -> str | None:
    """The letter of "E. (b)" / "(E) (b)" when what follows it is that option's own text
    (MathVista pids 168 and 849, whose options are letters: issue 49), else None."""
    m = _LETTER_THEN_TEXT.fullmatch(pred.strip())
    if m is None or not texts:
        return None
    k = ord(m[1]) - ord("A")
    return m[1] if 0 <= k < len(texts) and normalize_text(m[2]) == texts[k] != "" else None


def verify_choice(pred: str, gold: str, choices: Sequence[str] | None = None) -> bool:
    n = len(choices) if choices else None
    texts = [normalize_text(str(c)) for c in choices] if choices else []
    pred = _letter_with_its_text(pred, texts) or pred
    gold_letter = _gold_letter(gold, choices, texts)
    if gold_letter is None:
        if texts:
            raise ValueError(f"choice ground truth '{gold}' is neither a letter among the "
                             f"{len(texts)} options nor one of their texts")
        return normalize_text(pred) == normalize_text(gold) != ""
    letter_valued = bool(choices) and all(_LETTER_TEXT.fullmatch(str(c).strip()) for c in choices)
    norm_pred = normalize_text(pred)
    named = option_letter(pred, n)
    if norm_pred and norm_pred in texts and not (letter_valued and named is not None):
        return norm_pred == texts[ord(gold_letter) - ord("A")]  # "A triangle" is not option A
    letters = "".join(chr(ord("A") + k) for k in range(n or MAX_OPTIONS))
    return named == gold_letter and not is_hedged(pred, "choice", letters)


_WORDS = re.compile(r"[A-Za-z][A-Za-z ]{0,100}")


def _math_strip(text: str) -> str:
    return strip_latex(canonical_unicode(text)).rstrip(".").strip()


def verify_math(pred: str, gold: str) -> bool:
    p, g = _math_strip(pred), _math_strip(gold)
    if not p or not g:
        return False
    if p.replace(" ", "") == g.replace(" ", "") or _WORDS.fullmatch(g) and _same_light(p, g):
        return True  # identical, or a word answer ("Tuesday") up to case
    pn, gn = parse_number(p, allow_units=False), parse_number(g, allow_units=False)
    if pn is not None and gn is not None:
        return exact_numbers_match(pn, gn)
    return math_equal(g.replace("%", ""), p.replace("%", ""))


def verify_text(pred: str, gold: str) -> bool:
    p = normalize_text(pred)
    return bool(p) and p == normalize_text(gold)


VERIFIERS: dict[str, Callable[..., bool]] = {
    "choice": verify_choice, "number": verify_number, "relaxed": verify_relaxed,
    "yesno": verify_yesno, "math": verify_math, "text": verify_text,
}


def verify(answer_type: str, pred: str, gold: str, choices: Sequence[str] | None = None) -> bool:
    """Dispatch to the verifier of ``answer_type``; ValueError names an unknown type."""
    if answer_type not in VERIFIERS:
        raise ValueError(f"unknown answer_type '{answer_type}' (allowed: {sorted(VERIFIERS)})")
    if answer_type == "choice":
        return verify_choice(pred, gold, choices)
    return VERIFIERS[answer_type](pred, gold)
