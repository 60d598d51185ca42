"""Hedged answers: which candidates a choice or yes/no answer names, so that naming several scores 0.

Why: the verifiers read one candidate from an answer (the leading option letter, the first
yes/no word, or, for the letter fallback, the last letter of the response). An answer such as
"A or B", "\\boxed{A, B}" or "Yes/No" therefore earned the full reward whenever the candidate
read happened to be right, and a policy under RL finds that in a few steps. The rule here is
general, not a list of hedge strings: an answer must commit to exactly one candidate, so the
candidate the verifier reads must not be *coordinated* with a different one.

Candidates are tokens: for choice questions a single option letter among the allowed ones, in any
case, bare (``B``) or bracketed (``(B)``, ``[b]``); for yes/no questions the words ``yes`` and
``no``. The option texts are usually not in a row's ``extra_info``, so the choice rule is
letter-based (an answer equal to an option's text is handled by the verifier before this rule).

A *run* is a sequence of candidates joined by a list separator (``, / | & ; + -`` or a bracket)
or a coordinating word (``or``, ``and``, ``nor``, ``vs``, ``versus``); words that introduce or
soften an alternative (``either``, ``maybe``, ``option``, ...; ``LEAD_WORDS``) may stand before
a candidate. Two bare candidates separated only by a space also join ("A B"), unless the first
one is closed by ``)``, ``.``, ``:`` (the option text follows: "B) A right triangle"). Any other
word, number or a sentence end closes a run. An answer is hedged when the run that holds the
candidate the verifier reads names two or more *distinct* candidates ("A, A" is not a hedge).

Look-alike letters: Cyrillic and Greek capitals drawn like Latin ones (``В`` U+0412, ``Β``
U+0392 for B; ``А``/``Α`` for A; ``С``/``Ϲ`` for C; ``Е``/``Ε`` for E; and the other Latin-shaped
capitals, plus the Cyrillic ``о`` of a spelled "оr") are folded to Latin after NFKC before
candidates are read (``fold_confusables``, a table from Unicode's confusables.txt restricted to
these scripts), so "A or В" names two options. Only hedge detection sees the folded text.

Other answer types (math, number, relaxed, text) have no candidate set; for them an answer is a
hedge when the word "or" stands between two non-empty parts of it (``offers_alternatives``:
"3 or 4", "x = 2 \\text{ or } x = 5"), unless the ground truth itself is written that way.

False positives avoided: a candidate spelled like an English word ("A" and "I" for letters,
"no" for yes/no) counts only when it is followed by the end, punctuation, a coordinating word or
another candidate, so "A right triangle", "(B) A triangle" and "Yes, no doubt" name one
candidate; a bare lower-case letter needs a coordinating word or mark after it ("e.g." is not E); option text after a closed letter ("(A) The triangle ...", "(D) both A and B") is not
read as further candidates. Everything is one linear regular-expression scan of bounded input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vade.rewards.normalize import canonical_unicode, strip_latex

__all__ = ["JOIN_WORDS", "KINDS", "LEAD_WORDS", "NEGATIONS", "Run", "candidate_runs",
           "fold_confusables", "is_hedged", "named_candidates", "offers_alternatives"]

KINDS = ("choice", "yesno")
JOIN_WORDS = frozenset({"or", "and", "nor", "vs", "versus"})
NEGATIONS = frozenset({"not", "never"})
LEAD_WORDS = frozenset({"either", "neither", "both", "maybe", "possibly", "perhaps", "probably",
                        "likely", "also", "else", "option", "options", "choice", "choices"})
# Lead words that introduce another candidate ("B. Or maybe C"), unlike "both", "option", ...,
# which may start an option's text ("(D) both A and B").
_SOFTENERS = frozenset({"maybe", "possibly", "perhaps", "probably", "likely", "also", "else",
                        "either"})
_JOIN_PUNCT = frozenset(",/|&;+-([)]")
_CLOSERS = frozenset(").]:!?")
_WORDLIKE = {"choice": frozenset({"a", "i"}), "yesno": frozenset({"no"})}
_YESNO = frozenset({"yes", "no"})
# A bracketed letter, a word (with an apostrophe part: "B's" is not B), a number, one other mark.
# Markdown emphasis (* ` _) is skipped like spaces: "**A** or **B**" names A and B.
_TOKEN = re.compile(r"(?P<br>[(\[] ?[A-Za-z] ?[)\]])|(?P<word>[A-Za-z]+(?:'[A-Za-z]+)?)"
                    r"|(?P<num>[0-9]+)|(?P<mark>[^\s*`_])")


@dataclass(frozen=True)
class Run:
    """Coordinated candidates: their names (upper-case letters or lower-case yes/no, in text
    order), the character span from the first to the last, and whether only lead words and
    punctuation precede it (the verifiers read a leading candidate)."""

    names: tuple[str, ...]
    start: int
    end: int
    leading: bool

    @property
    def hedged(self) -> bool:
        return len(set(self.names)) > 1


@dataclass(frozen=True)
class _Token:
    kind: str  # "cand" | "word" | "mark" | "num"
    text: str
    start: int
    end: int
    name: str = ""
    bracketed: bool = False


def _tokens(text: str, kind: str, letters: str) -> list[_Token]:
    out = []
    for m in _TOKEN.finditer(text):
        group, s = m.lastgroup or "mark", m.group()
        name = ""
        if group == "br":
            name = s.strip("()[] ").upper()
        elif group == "word" and kind == "choice" and len(s) == 1:
            name = s.upper()
        elif group == "word" and kind == "yesno" and s.lower() in _YESNO:
            name = s.lower()
        if name and (kind == "yesno" or name in letters):
            out.append(_Token("cand", s, m.start(), m.end(), name, group == "br"))
        else:
            out.append(_Token(group, s, m.start(), m.end()))
    return out


def _counts(tokens: list[_Token], i: int, kind: str) -> bool:
    """Whether a candidate token is read as one (see the module doc).

    Bracketed letters and non-word candidates always count. A word-like one ("A", "I", "no")
    counts before the end, a mark, a coordinating word or another candidate. A bare lower-case
    letter is stricter, since prose is full of them ("e.g.", "c = 5"): it needs the end, a
    coordinating word or mark, a closing bracket or another candidate after it.
    """
    tok = tokens[i]
    lower_letter = kind == "choice" and tok.text.islower()
    if tok.bracketed or not (lower_letter or tok.text.lower() in _WORDLIKE[kind]):
        return True
    if i + 1 == len(tokens):
        return True
    nxt = tokens[i + 1]
    if nxt.kind == "cand" or nxt.text.lower() in JOIN_WORDS:
        return True
    return nxt.kind == "mark" and (not lower_letter or nxt.text in _JOIN_PUNCT)


def candidate_runs(text: str, kind: str, letters: str = "") -> list[Run]:
    """Every run of coordinated candidates in ``text`` (see the module doc), in text order.

    ``kind`` is ``"choice"`` (candidates: the upper-case ``letters``) or ``"yesno"``.
    """
    if kind not in KINDS:
        raise ValueError(f"candidate kind must be one of {KINDS}, got {kind!r}")
    tokens = _tokens(text, kind, letters)
    runs: list[Run] = []
    names: list[str] = []
    start = end = 0
    leading = prefix_clean = True
    joined = closed = bracketed = False

    def close_run() -> None:
        nonlocal names
        if names:
            runs.append(Run(tuple(names), start, end, leading))
        names = []

    for i, tok in enumerate(tokens):
        if tok.kind == "cand" and _counts(tokens, i, kind):
            adjacent = not joined and not closed and tokens[i - 1].kind == "cand"
            if names and (joined or adjacent or (tok.bracketed and bracketed)):
                names.append(tok.name)
            else:
                close_run()
                names, start, leading = [tok.name], tok.start, prefix_clean
            end, joined, closed, bracketed = tok.end, False, tok.bracketed, tok.bracketed
            prefix_clean = False
            continue
        low = tok.text.lower()
        if names and tok.kind == "mark" and tok.text in _CLOSERS and tok.start == end:
            closed = True  # "B)", "B.", "B:" -- glued to the candidate
        elif names and (low in JOIN_WORDS or (tok.kind == "mark" and tok.text in _JOIN_PUNCT)):
            joined = True
        elif low in LEAD_WORDS and (joined or not names):
            continue
        elif not names and tok.kind == "mark":
            continue  # punctuation before the first candidate ("- B", "> B")
        else:  # any other word, a number, a sentence end: the run is over
            close_run()
            joined = closed = False
            prefix_clean = False
    close_run()
    return runs


# Cyrillic and Greek letters that render like Latin ones (Unicode confusables.txt, these scripts).
_CONFUSABLES = str.maketrans({
    "\u0410": "A", "\u0391": "A", "\u0412": "B", "\u0392": "B", "\u0421": "C", "\u03f9": "C",
    "\u0415": "E", "\u0395": "E", "\u041d": "H", "\u0397": "H", "\u0406": "I", "\u0399": "I",
    "\u0408": "J", "\u041a": "K", "\u039a": "K", "\u041c": "M", "\u039c": "M", "\u039d": "N",
    "\u041e": "O", "\u039f": "O", "\u0420": "P", "\u03a1": "P", "\u0405": "S", "\u0422": "T",
    "\u03a4": "T", "\u0425": "X", "\u03a7": "X", "\u04ae": "Y", "\u03a5": "Y", "\u0396": "Z",
    "\u0430": "a", "\u0441": "c", "\u0435": "e", "\u043e": "o", "\u03bf": "o", "\u0440": "p",
    "\u0445": "x", "\u0443": "y", "\u0456": "i", "\u0455": "s", "\u0458": "j",
})


def fold_confusables(text: str) -> str:
    """NFKC, then Cyrillic/Greek look-alikes of Latin letters -> Latin (module doc)."""
    text = canonical_unicode(text)
    return text if text.isascii() else text.translate(_CONFUSABLES)


def _normal(answer: str) -> str:
    return strip_latex(fold_confusables(answer))


_OR = re.compile(r"(?<![A-Za-z])or(?![A-Za-z])", re.IGNORECASE)


def offers_alternatives(answer: str, gold: str = "") -> bool:
    """True when "or" stands between two non-empty parts of ``answer`` ("3 or 4") and the
    ground truth ``gold`` has no "or" of its own (module doc: answers without candidates)."""
    parts = _OR.split(_normal(answer))
    if len(parts) < 2 or _OR.search(_normal(gold)):
        return False
    return sum(bool(p.strip(" \t,.;:/|$")) for p in parts) >= 2


def _is_lead(tok: _Token) -> bool:
    return tok.kind == "mark" or tok.text.lower() in LEAD_WORDS


def _option_text_follows(tokens: list[_Token], first: int, kind: str) -> bool:
    """Whether the text after the leading candidate is its option text ("B) A right
    triangle", "(D) both A and B"): the candidate is closed (a glued ``)``, ``.``, ``:`` or its
    own bracket) and the next token is a word that neither joins nor names a candidate."""
    cand, i = tokens[first], first + 1
    closed = cand.bracketed
    if i < len(tokens) and tokens[i].kind == "mark" and tokens[i].text in _CLOSERS \
            and tokens[i].start == cand.end:
        closed, i = True, i + 1
    if not closed or i >= len(tokens):
        return False
    nxt = tokens[i]
    low = nxt.text.lower()
    counted = nxt.kind == "cand" and _counts(tokens, i, kind)
    return nxt.kind in ("word", "num", "cand") and not counted and low not in JOIN_WORDS \
        and low not in _SOFTENERS


def named_candidates(answer: str, kind: str, letters: str = "") -> tuple[str, ...]:
    """The candidates ``answer`` commits to, in order (see ``is_hedged``); empty when it does not
    start with one. LaTeX is removed first (``\\text{A} or \\text{B}``)."""
    if kind not in KINDS:
        raise ValueError(f"candidate kind must be one of {KINDS}, got {kind!r}")
    tokens = _tokens(_normal(answer), kind, letters)
    first = next((i for i, t in enumerate(tokens) if not _is_lead(t)), None)
    if first is None or tokens[first].kind != "cand":
        return ()
    names = [tokens[first].name]
    if _option_text_follows(tokens, first, kind):
        return tuple(names)
    prev = prev_any = ""
    for i in range(first + 1, len(tokens)):
        tok = tokens[i]
        # a bare lower-case letter ("e.g") names an option only right after a joining word or mark
        loose = kind == "choice" and not tok.bracketed and tok.text.islower() and not (
            prev_any in JOIN_WORDS or prev_any in _JOIN_PUNCT)
        if tok.kind == "cand" and _counts(tokens, i, kind) and prev not in NEGATIONS \
                and not loose:
            names.append(tok.name)
        prev_any = tok.text.lower()
        if tok.kind != "mark":
            prev = prev_any
    return tuple(names)


def is_hedged(answer: str, kind: str, letters: str = "") -> bool:
    """True when an answer that starts with a candidate (the one the verifiers read) names a
    different one anywhere after it: "A or B", "A, not sure, maybe B", "A -> B", "Yes. No.",
    "A oder B". Not counted: option text after a closed leading letter ("B) A right triangle",
    "(D) both A and B"), a candidate right after "not"/"never" ("B and not C"), and words
    that merely look like candidates ("a", "no" before a word: "Yes, no doubt")."""
    return len(set(named_candidates(answer, kind, letters))) > 1
