"""Text and number normalisation shared by every verifier: one place decides what "the same" means.

Model outputs and ground truths arrive in many spellings of one value: full-width or Arabic-Indic
digits, a Unicode minus sign, LaTeX wrappers (``\\text{}``, ``^\\circ``, ``\\$``), thousands
separators, a trailing unit or period. These helpers map them to one canonical form so that the
verifiers compare values, not typography. Everything here is plain string work on bounded input:
no ``eval``, and no regular expression with nested quantifiers (so no catastrophic backtracking).
"""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

__all__ = [
    "MAX_EXPONENT",
    "MAX_NUMBER_CHARS",
    "QUALIFIERS",
    "ParsedNumber",
    "canonical_unicode",
    "light_normalize",
    "normalize_text",
    "parse_number",
    "strip_latex",
]

# A number longer than this (after cleaning) is not parsed as a number; it is still compared as
# text. Bounds the work of Decimal parsing and keeps far away from Python's int-digit limit.
MAX_NUMBER_CHARS = 512
# |decimal exponent| above this is "not a number we compare numerically" (1e308 passes, 1e99999
# does not), so Decimal arithmetic never overflows or builds huge coefficients.
MAX_EXPONENT = 4000

_MINUS_SIGNS = "\u2212\u2012\u2013\u2014\ufe63\uff0d\u2010\u2011"
_TRANSLATE_MINUS = {ord(c): "-" for c in _MINUS_SIGNS}


def canonical_unicode(text: str) -> str:
    """NFKC (full-width -> ASCII), every Unicode decimal digit -> ASCII, minus look-alikes -> '-'.

    NFKC alone leaves Arabic-Indic or Devanagari digits as they are; ``unicodedata.decimal`` maps
    any character of category Nd to its value, so a model answering in another script's digits
    is compared by value.
    """
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE_MINUS)
    if text.isascii():
        return text
    out = []
    for ch in text:
        if not ch.isascii() and unicodedata.category(ch) == "Nd":
            out.append(str(unicodedata.decimal(ch)))
        else:
            out.append(ch)
    return "".join(out)


# LaTeX commands whose argument is kept as plain text: \text{cm} -> cm.
_TEXT_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s?\{([^{}]{0,200})\}")
_SPACING = ("\\;", "\\:", "\\quad", "\\qquad")  # -> " "; "\\," (thousands: 1\\,234) -> ""
_LATEX_DROP = (
    "\\left", "\\right", "\\displaystyle", "\\!", "\\,", "\\;", "\\:", "\\quad", "\\qquad",
    "^\\circ", "^{\\circ}", "\\circ", "°", "\\$", "$",
)


def strip_latex(text: str) -> str:
    """Remove typographic LaTeX that does not change a value (delimiters, spacing, degree signs).

    ``\\%`` becomes ``%`` and ``\\dfrac``/``\\tfrac`` become ``\\frac``; structural LaTeX
    (``\\frac``, ``\\sqrt``) is left for the math checker.
    """
    text = _TEXT_WRAPPERS.sub(r"\1", text)
    text = text.replace("{,}", ",").replace("\\%", "%").replace("\\dfrac", "\\frac")
    text = text.replace("\\tfrac", "\\frac")
    for token in _LATEX_DROP:
        text = text.replace(token, " " if token in _SPACING else "")
    return text.strip()


_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = frozenset({"a", "an", "the"})


def normalize_text(text: str) -> str:
    """SQuAD-style normal form: Unicode-canonical, LaTeX-stripped, lower case, punctuation and
    articles removed, whitespace collapsed. Used for ``text`` answers and as the last resort of
    the other verifiers."""
    text = strip_latex(canonical_unicode(text)).lower().translate(_PUNCT)
    return " ".join(w for w in text.split() if w not in _ARTICLES)


def light_normalize(text: str) -> str:
    """Case, spacing and a trailing period only: the "exact match" of ChartQA string answers,
    where punctuation and signs can matter (``-5`` is not ``5``)."""
    text = strip_latex(canonical_unicode(text)).lower().strip().rstrip(".").strip()
    return " ".join(text.split())


@dataclass(frozen=True)
class ParsedNumber:
    """A number read from an answer; ``percent`` records a trailing ``%`` (see
    ``verify.numbers_match``); ``decimals``, the places after the point as written (None for a
    fraction), bounds how far a number may be from it and still be it (``verify``)."""

    value: Decimal
    percent: bool = False
    decimals: int | None = field(default=None, compare=False)


# One number: sign, digits with optional thousands groups, optional fraction, optional exponent.
# Alternation of a grouped form and a plain form; each branch is linear (no nested quantifiers
# that can overlap), so a failed match costs O(length).
_NUMBER = re.compile(
    r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d{1,6})?"
)
_FRACTION = re.compile(r"([-+]?)\\frac\{([^{}]{1,100})\}\{([^{}]{1,100})\}")
_UNIT_TAIL = re.compile(r"[A-Za-z°µ²³/.\s]{1,40}")
_POWER_UNIT = re.compile(r"\^\{?[23]\}?")
# Words that qualify or coordinate a number rather than name its unit: "3 or so", "5 or 6 cm",
# "12 maybe" are not the number 3 / 5 / 12 (a hedged number scores 0, like a hedged option).
QUALIFIERS = frozenset({"or", "and", "so", "maybe", "about", "approximately", "approx", "roughly",
                        "around", "perhaps", "possibly", "probably", "not", "but", "either", "ish",
                        "nearly", "almost", "more", "less", "than", "over", "under", "at", "least",
                        "most", "plus", "minus", "give", "take", "guess", "something"})
_PREFIXES = ("approximately", "approx.", "approx", "about", "around", "≈", "~", "=")
_CURRENCY = "$€£¥₹"


def _decimal(token: str) -> Decimal | None:
    if not token or not any(c.isdigit() for c in token):
        return None
    try:
        value = Decimal(token.replace(",", ""))
    except InvalidOperation:
        return None
    if not value.is_finite() or (value != 0 and abs(value.adjusted()) > MAX_EXPONENT):
        return None
    return value


def parse_number(text: str, *, allow_units: bool = True) -> ParsedNumber | None:
    """The number an answer states, or None when it is not (only) a number.

    Accepts ``1,234``, ``3.0``, ``-2.5e3``, ``50%``, ``3/4``, ``\\frac{3}{4}``, ``$12``, ``12 cm``
    (a trailing alphabetic unit is dropped), ``approximately 7``. Rejects anything with a second
    number (``12 or 13``), a European decimal comma (``3,5``: ambiguous), NaN/inf, and strings
    longer than ``MAX_NUMBER_CHARS``. ``allow_units=False`` (math answers) refuses a trailing
    word, so ``2x`` is not the number 2.
    """
    if len(text) > MAX_NUMBER_CHARS:
        return None
    s = strip_latex(canonical_unicode(text)).strip().rstrip(".").strip()
    low = s.lower()
    for prefix in _PREFIXES:
        if low.startswith(prefix):
            s = s[len(prefix):].strip()
            break
    s = s.lstrip(_CURRENCY).strip()
    m = _FRACTION.fullmatch(s.replace(" ", ""))
    if m:
        num, den = _decimal(m.group(2)), _decimal(m.group(3))
        if num is None or den is None or den == 0:
            return None
        return ParsedNumber(-num / den if m.group(1) == "-" else num / den)
    if s.count("/") == 1 and " " not in s.strip():
        a, b = s.split("/")
        num, den = _decimal(a), _decimal(b)
        if num is not None and den is not None and den != 0 and _NUMBER.fullmatch(a) \
                and _NUMBER.fullmatch(b):
            return ParsedNumber(num / den)
    m = _NUMBER.match(s)
    if m is None or not m.group(0):
        return None
    value = _decimal(m.group(0))
    if value is None:
        return None
    rest = s[m.end():].strip()
    percent = rest.startswith("%")
    if percent:
        rest = rest[1:].strip()
    elif rest.lower().startswith("percent"):
        percent, rest = True, rest[len("percent"):].strip()
    if rest:
        if not allow_units:
            return None
        rest = _POWER_UNIT.sub("", rest)
        if not _UNIT_TAIL.fullmatch(rest) or not rest[0].isalpha() and rest[0] not in "°µ/":
            return None
        if QUALIFIERS.intersection(rest.lower().replace(".", " ").split()):
            return None
    return ParsedNumber(value, percent, max(0, -int(value.as_tuple().exponent)))
