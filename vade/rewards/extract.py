"""Find the final answer in a model response, in bounded time whatever the response contains.

The reward is binary correctness of the *final* answer, so extraction decides what the model
committed to. Rules, in priority order (the first that finds something wins):

1. ``\\boxed{...}`` (or ``\\fbox{...}``): the LAST complete one. Braces are balanced, so nested
   LaTeX (``\\boxed{\\frac{1}{2}}``) is kept whole and ``\\{``/``\\}`` do not count. Taking the last
   one means a response that boxes several candidates is judged by its final commitment, and
   emitting many boxes cannot earn more than one answer. Boxes joined on one line
   ("\\boxed{A} or \\boxed{B}", "\\boxed{3}, \\boxed{4}") are one hedged answer, whatever the
   type: for choice and yes/no questions the joined run is returned (the verifier sees the
   hedge), for the others ``Extraction.hedged`` is set when the joined boxes differ. Boxes apart
   ("\\boxed{3}, no wait, \\boxed{5}") are a correction: the last one counts. An unclosed box (a
   truncated generation) is skipped in favour of an earlier complete one.
2. An answer phrase: the last "answer is X" / "Answer: X" / "final answer = X" (case-insensitive);
   X runs to the end of its line (or the next line when the phrase ends the line) and stops at
   the first ". " sentence end (not one followed by "or"/"and" or a list mark: "A. Or B" is one hedged answer),
   and takes in the next line when that one starts with "or"/"nor" or ``/``/``|`` ("A\\nor B").
3. For choice questions only: the last standalone capital letter among the allowed option letters
   (``(B)``, ``B.``, ``B``), so "I think it is B" answers B (the pronoun "I" is not an option,
   nor is the article in "A triangle has"). A letter coordinated with others ("A or B") yields
   the whole run, which the verifier scores 0 (``candidates``: hedged answers).
4. The whole response, when it is one short line (a model that just answers "Yes." or "42", or
   the text of an option).

Fenced code blocks (```` ``` ... ``` ````) are removed before any rule runs: text inside code is
not an answer (a ``print("\\boxed{7}")`` does not commit to 7). An unclosed fence removes the rest.

Bounded work: only the last ``MAX_SCAN_CHARS`` characters are scanned (the final answer is at the
end; a response longer than that is degenerate anyway); at most ``MAX_TRIES`` boxes or phrases are
examined, each over at most ``MAX_ANSWER_CHARS`` characters; every regular expression is free of
nested quantifiers. A 1 MB adversarial string therefore costs about as much as a 32 kB one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vade.rewards.candidates import JOIN_WORDS, candidate_runs, is_hedged
from vade.rewards.normalize import canonical_unicode, strip_latex

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_SCAN_CHARS",
    "Extraction",
    "extract_answer",
    "find_answer_phrase",
    "find_boxed",
    "find_choice_letter",
    "remove_code_blocks",
]

MAX_SCAN_CHARS = 32_768
MAX_ANSWER_CHARS = 2_000
MAX_TRIES = 16
BARE_MAX_CHARS = 100
SHORT_LINE_WORDS = 4  # a line this short that names two options is a hedge, not prose
_FENCE = "```"
_BOX_COMMANDS = ("\\boxed", "\\fbox")


@dataclass(frozen=True)
class Extraction:
    """The extracted answer text (None when nothing was found) and the rule that found it."""

    answer: str | None
    method: str  # "boxed" | "phrase" | "bare" | "letter" | "none"
    hedged: bool = False  # the last box is joined to a different box on its line

    @property
    def boxed(self) -> bool:
        """Whether the response followed the prompt's format (the optional format reward)."""
        return self.method == "boxed"


def remove_code_blocks(text: str) -> str:
    """Drop every fenced code block (linear scan with ``str.find``)."""
    if _FENCE not in text:
        return text
    parts, i = [], 0
    while True:
        start = text.find(_FENCE, i)
        if start < 0:
            parts.append(text[i:])
            break
        parts.append(text[i:start])
        end = text.find(_FENCE, start + len(_FENCE))
        if end < 0:
            break
        i = end + len(_FENCE)
    return "".join(parts)


def _balanced(text: str, open_at: int) -> str | None:
    """Content of the brace group opening at ``text[open_at] == '{'``; None if not closed within
    ``MAX_ANSWER_CHARS``. A backslash escapes the next character (``\\{`` is not a brace)."""
    depth, i, stop = 0, open_at, min(len(text), open_at + MAX_ANSWER_CHARS + 2)
    while i < stop:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i]
        i += 1
    return None


def _last_box(text: str, pos: int) -> tuple[int, int, str] | None:
    """``(start, end, content)`` of the last complete box that starts before ``pos``."""
    for _ in range(MAX_TRIES):
        at, cmd = max((text.rfind(c, 0, pos), c) for c in _BOX_COMMANDS)
        if at < 0:
            return None
        j = at + len(cmd)
        while j < len(text) and j - at < len(cmd) + 4 and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            content = _balanced(text, j)
            if content is not None:
                return at, j + len(content) + 2, content.strip()
        elif j < len(text) and j > at + len(cmd):  # "\boxed 5": one token
            token = text[j:j + MAX_ANSWER_CHARS].split(None, 1)
            if token and token[0].strip("$."):
                return at, j + len(token[0]), token[0].strip("$.")
        pos = at
    return None


def find_boxed(text: str) -> str | None:
    """The content of the last complete ``\\boxed{...}``/``\\fbox{...}`` (see module doc)."""
    box = _last_box(text, len(text))
    return None if box is None else box[2]


# Text that may join two boxes into one hedged answer: join words, lead words, list marks.
_GLUE = re.compile(r"(?:[\s,/|&;$.]|\b(?:" + "|".join(sorted(JOIN_WORDS | {"either", "maybe",
                   "perhaps", "possibly"})) + r")\b)*", re.IGNORECASE)


def _box_key(content: str) -> str:
    return "".join(strip_latex(canonical_unicode(content)).split()).rstrip(".")


def _hedged_boxes(text: str, box: tuple[int, int, str]) -> bool:
    """Whether the last box is joined, through glue only (``_GLUE``), to an earlier box with a
    different content on its line ("\\boxed{3} or \\boxed{4}")."""
    lo = max(text.rfind("\n", 0, box[0]) + 1, box[0] - MAX_ANSWER_CHARS)
    current = box
    for _ in range(MAX_TRIES):
        prev = _last_box(text, current[0])
        if prev is None or prev[0] < lo or prev[1] > current[0]:
            return False
        if not _GLUE.fullmatch(strip_latex(text[prev[1]:current[0]])):
            return False
        if _box_key(prev[2]) != _box_key(box[2]):
            return True
        current = prev
    return False


def _joined_boxes(text: str, box: tuple[int, int, str], kind: str, letters: str) -> str | None:
    """The run of candidates that joins the last box to other boxes on its line, boxes replaced
    by their contents ("\\boxed{A} or \\boxed{B}" -> "A or B"); None when there is none. Only
    boxes join: a box is a commitment, so "I ruled out A, \\boxed{B}" is B."""
    start, end, _ = box
    lo = max(text.rfind("\n", 0, start) + 1, start - MAX_ANSWER_CHARS)
    hi = text.find("\n", end, end + MAX_ANSWER_CHARS)
    boxes = [box]
    for _ in range(MAX_TRIES):
        prev = _last_box(text, boxes[0][0])
        if prev is None or prev[0] < lo or prev[1] > boxes[0][0]:
            break
        boxes.insert(0, prev)
    line, cursor, spans = "", lo, []
    for s, e, c in boxes:
        line += f" {strip_latex(text[cursor:s])} "
        spans.append((len(line), len(line) + len(strip_latex(c))))
        line += strip_latex(c)
        cursor = e
    line += f" {strip_latex(text[end:hi if hi >= 0 else end + MAX_ANSWER_CHARS])}"
    for run in candidate_runs(line, kind, letters):
        inside = [a < run.end and run.start < b for a, b in spans]
        if inside[-1] and sum(inside) > 1 and run.hedged:  # the last box joined to another
            return line[run.start:run.end]
    return None


# After the word "answer": optional markdown bold, then "is" / ":" / "=", then spacing.
# Bounded repetitions only, so a long run of spaces cannot make the engine backtrack.
_CONNECTOR = re.compile(r"\*{0,3}[ \t]{0,8}(?:is\b|:|=)[ \t]{0,8}:?[ \t]{0,8}\*{0,3}[ \t]{0,8}")


# A sentence end followed by a coordinating word or list mark ("A. Or maybe B", "A. / B") does not
# end the answer: the hedge stays visible to the verifier.
_JOINED = "|".join(sorted(JOIN_WORDS))
_CONTINUES = re.compile(rf"\.[ \t]{{1,8}}(?:(?:{_JOINED})\b|[,/|&;+])", re.IGNORECASE)


def _clean_value(value: str) -> str:
    value = value.strip()
    cut = value.find(". ")
    while cut > 0 and _CONTINUES.match(value, cut):
        cut = value.find(". ", cut + 2)
    if cut > 0:
        value = value[:cut]
    return value.strip().strip("*`").strip()


_CONTINUATION = re.compile(r"[ \t*]{0,8}(?:(?:or|nor)\b|[/|])", re.IGNORECASE)


def _continuation(text: str, end: int) -> str:
    """The next line when it continues the answer with an alternative ("A\\nor B"), else ""."""
    if end < 0 or not _CONTINUATION.match(text, end + 1):
        return ""
    nxt = text.find("\n", end + 1, end + 1 + MAX_ANSWER_CHARS)
    return " " + text[end + 1:nxt if nxt >= 0 else end + 1 + MAX_ANSWER_CHARS]


def find_answer_phrase(text: str) -> str | None:
    """The value after the last "answer is" / "answer:" phrase (see module doc)."""
    low = text.lower()
    pos = len(low)
    for _ in range(MAX_TRIES):
        at = low.rfind("answer", 0, pos)
        if at < 0:
            return None
        m = _CONNECTOR.match(low, at + len("answer"))
        if m:
            start = m.end()
            end = text.find("\n", start, start + MAX_ANSWER_CHARS)
            value = text[start:end if end >= 0 else start + MAX_ANSWER_CHARS]
            if not value.strip() and end >= 0:  # "Answer:\n42"
                nxt = text.find("\n", end + 1, end + 1 + MAX_ANSWER_CHARS)
                value = text[end + 1:nxt if nxt >= 0 else end + 1 + MAX_ANSWER_CHARS]
                end = nxt
            value += _continuation(text, end)
            value = _clean_value(value)
            if value:
                return value
        pos = at
    return None


_LETTER = re.compile(r"(?<![A-Za-z0-9])\(?([A-Z])\)?(?![A-Za-z0-9])")
_BARE_MARKS = " \t*`()[].:-"


def _bare_letter(line: str, letters: str) -> str | None:
    """The letter a line consists of ("B", "(B)", "**B.**"), else None."""
    s = line.strip(_BARE_MARKS)
    return s if len(s) == 1 and s in letters else None


def _listed_letters(text: str, letters: str) -> str | None:
    """"A, B, C" when several lines each consist of a different option letter (a list of the
    options, not a commitment to one of them), else None."""
    seen = dict.fromkeys(b for b in (_bare_letter(line, letters) for line in text.splitlines())
                         if b)
    return ", ".join(seen) if len(seen) > 1 else None


def find_choice_letter(text: str, letters: str) -> str | None:
    """The last option letter of ``text`` among ``letters`` that is read as one (rule 3).

    "A" running into a word ("A triangle has ...") is the article, not option A
    (``candidates``). When that letter is coordinated with other candidates on its line ("It
    could be A or B"), the whole run is returned, so that the verifier sees the hedge; so are
    all of them when the letter stands alone on its line and other lines each name another
    option alone (a bare list of the options), and a line of at most ``SHORT_LINE_WORDS``
    words that starts with a letter and names another ("A oder B").
    """
    found = [m.start(1) for m in _LETTER.finditer(text) if m.group(1) in letters]
    for pos in found[:-MAX_TRIES - 1:-1]:
        lo = max(text.rfind("\n", 0, pos) + 1, pos - MAX_ANSWER_CHARS)
        hi = text.find("\n", pos, pos + MAX_ANSWER_CHARS)
        line = text[lo:hi if hi >= 0 else pos + MAX_ANSWER_CHARS]
        for run in candidate_runs(line, "choice", letters):
            if run.start <= pos - lo < run.end:
                if run.hedged:
                    return line[run.start:run.end]
                if len(line.split()) <= SHORT_LINE_WORDS and is_hedged(line, "choice", letters):
                    return line.strip()  # "A oder B", "A -> B": a short line naming two
                listed = _listed_letters(text, letters) if _bare_letter(line, letters) else None
                return listed or text[pos]
    return None


def extract_answer(response: str, *, choice_letters: str | None = None,
                   yesno: bool = False) -> Extraction:
    """Apply the rules of the module doc to ``response``; never raises on any string.

    ``choice_letters`` (e.g. ``"ABCD"``) enables rule 3 for multiple-choice questions. With
    ``choice_letters`` or ``yesno`` (a yes/no question), a last box joined to other boxes or
    candidates on its line ("\\boxed{A} or \\boxed{B}") yields the whole run, so that the
    verifier sees the hedge.
    """
    if not isinstance(response, str):
        raise TypeError(f"response must be str, got {type(response).__name__}")
    window = remove_code_blocks(canonical_unicode(response[-MAX_SCAN_CHARS:]))
    box = _last_box(window, len(window))
    if box is not None:
        kind = "choice" if choice_letters else "yesno" if yesno else None
        joined = _joined_boxes(window, box, kind, choice_letters or "") if kind else None
        if joined is not None:
            return Extraction(joined, "boxed")
        return Extraction(box[2], "boxed", hedged=_hedged_boxes(window, box))
    phrase = find_answer_phrase(window)
    if phrase is not None:
        return Extraction(phrase, "phrase")
    if choice_letters:
        letter = find_choice_letter(window, choice_letters)
        if letter is not None:
            return Extraction(letter, "letter")
    bare = window.strip()
    if bare and len(bare) <= BARE_MAX_CHARS and "\n" not in bare:
        return Extraction(bare, "bare")
    return Extraction(None, "none")
