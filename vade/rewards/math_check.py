"""Symbolic equivalence of two short math answers through math-verify, without ``eval``.

Why this path is safe:

* Only math-verify's LaTeX extractor is used (``LatexExtractionConfig``). It parses with
  latex2sympy2_extended's ANTLR grammar, which builds SymPy objects node by node; the one string
  it hands SymPy is a lexer-validated number token (``sympy.Number("35")``, which SymPy turns
  into an ``eval`` of that literal). math-verify's other extractor (``ExprExtractionConfig``)
  calls ``sympy.parse_expr`` (Python ``eval``) on expression text; it is never enabled here.
  ``tests/test_rewards_adversarial.py`` spies on every eval route to keep this true.
* Input is bounded: answers longer than ``MAX_MATH_CHARS`` are not parsed at all.
* The text is screened before SymPy sees it (``too_costly_text``): an exponent inside an
  exponent inside an exponent (``e^{e^{e^{e^{100}}}}``), a binomial of anything but two small
  integers (``\\binom{10^{6}}{5 \\cdot 10^{5}}``) and big operators (``\\prod``, ``\\sum``,
  ``\\int``, ``\\lim``) are never parsed: parsing alone evaluates them for most of a second,
  comparing them for minutes. Such answers are still compared as strings by the verifier.
* Parsed expressions are screened before comparison (``too_costly``): a power tower such as
  ``9^{9^{9^9}}`` parses instantly but makes SymPy's comparison run for hours. Exponents must be
  plain numbers of magnitude <= ``MAX_POWER``; factorial, binomial and ``exp`` arguments plain
  numbers <= ``MAX_POWER``; products, sums, integrals and limits are refused.
* math-verify's own timeout uses ``signal.alarm``, which only works in the main thread; verl calls
  reward functions from a thread pool (``loop.run_in_executor``). So the timeout is on in the main
  thread only. The hard bound is elsewhere: ``math_equal`` runs the comparison in a child
  process (``math_worker``), ended past ``math_worker.BUDGET_S`` of its CPU time, in any
  thread of any process; the screens keep the known worst cases from costing even that (``vade bench reward``
  times them in a worker thread).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from vade.rewards import math_worker

__all__ = ["MAX_MATH_CHARS", "MAX_POWER", "TIMEOUT_S", "compare", "math_equal", "too_costly",
           "too_costly_text"]

MAX_MATH_CHARS = 300
MAX_POWER = 1000
MAX_INTEGER_DIGITS = 1000
TIMEOUT_S = 5

# math-verify logs a warning each time its timeout is disabled on purpose; we do it knowingly.
logging.getLogger("math_verify").setLevel(logging.ERROR)


_BIG_OPERATORS = ("\\prod", "\\sum", "\\int", "\\iint", "\\oint", "\\lim", "\\choose",
                  "\\coprod", "\\bigcup", "\\bigcap")
_BINOM = re.compile(r"\\[dt]?binom")
_SMALL_BINOM = re.compile(r"\\[dt]?binom *\{ *\d{1,3} *\} *\{ *\d{1,3} *\}")
MAX_EXPONENT_DEPTH = 2  # x^{y^{z}} is allowed; one more level is a tower


def _exponent_depth(text: str) -> int:
    """How deeply ``^`` nests inside exponent groups (``e^{e^{x}}``: 2); one linear scan."""
    deepest = level = 0
    opened: list[bool] = []  # per open brace: whether it opened an exponent
    after_caret = False
    for ch in text:
        if ch == "^":
            deepest, after_caret = max(deepest, level + 1), True
            continue
        if ch == "{":
            opened.append(after_caret)
            level += after_caret
        elif ch == "}" and opened:
            level -= opened.pop()
        if not ch.isspace():
            after_caret = False
    return deepest


def too_costly_text(text: str) -> bool:
    """True when ``text`` must not reach SymPy at all (see module doc): towers of exponents,
    binomials of non-small integers, big operators."""
    if any(op in text for op in _BIG_OPERATORS):
        return True
    if len(_BINOM.findall(text)) != len(_SMALL_BINOM.findall(text)):
        return True
    return _exponent_depth(text) > MAX_EXPONENT_DEPTH


def _small_numbers(args: Any) -> bool:
    return all(a.is_Number and abs(a) <= MAX_POWER for a in args)


def too_costly(expr: Any) -> bool:
    """True when comparing ``expr`` symbolically could take unbounded time (see module doc)."""
    import sympy  # lazy: the cpu extra; loads in seconds

    if not isinstance(expr, sympy.Basic):
        return False
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow):
            exponent = node.exp
            if not exponent.is_Number:
                if exponent.has(sympy.Pow, sympy.factorial, sympy.exp) or any(
                        abs(a) > MAX_POWER for a in exponent.atoms(sympy.Number)):
                    return True
            elif abs(exponent) > MAX_POWER:
                return True
        elif isinstance(node, (sympy.factorial, sympy.factorial2, sympy.gamma, sympy.binomial,
                               sympy.subfactorial, sympy.RisingFactorial,
                               sympy.FallingFactorial)):
            if not _small_numbers(node.args):
                return True
        elif isinstance(node, sympy.exp):
            arg = node.args[0]
            if arg.has(sympy.exp, sympy.Pow) or any(abs(a) > MAX_POWER
                                                     for a in arg.atoms(sympy.Number)):
                return True
        elif isinstance(node, (sympy.Product, sympy.Sum, sympy.Integral, sympy.Limit)) or (
                isinstance(node, sympy.Integer) and abs(node) > 10 ** MAX_INTEGER_DIGITS):
            return True
    return False


def _parse(text: str, timeout: int | None) -> list[Any]:
    # lazy: the cpu extra; SymPy loads in seconds
    from math_verify import LatexExtractionConfig, parse

    # Inline math must be one line and contain no '$' of its own.
    inner = text.replace("$", " ").replace("\n", " ").strip()
    if not inner:
        return []
    return parse(f"${inner}$", extraction_config=[LatexExtractionConfig()],
                 fallback_mode="no_fallback", parsing_timeout=timeout)


def compare(gold: str, pred: str, *, wall_timeout: bool = True) -> bool:
    """math-verify's verdict after both screens, with no time bound of its own: the caller
    bounds it (``math_equal`` runs it in ``math_worker``'s child process). ``wall_timeout``:
    math-verify's own ``TIMEOUT_S`` alarm in the main thread; the child turns it off, since
    it bounds the comparison's CPU time instead (wall time depends on the machine's load)."""
    from math_verify import verify  # lazy: the cpu extra; SymPy loads in seconds
    from math_verify.errors import TimeoutException  # lazy: the cpu extra; SymPy loads in seconds

    timeout = (TIMEOUT_S if wall_timeout and threading.current_thread() is threading.main_thread()
               else None)
    try:
        gold_parsed = _parse(gold, timeout)
        pred_parsed = _parse(pred, timeout)
        if not gold_parsed or not pred_parsed:
            return False
        if any(too_costly(e) for e in (*gold_parsed, *pred_parsed)):
            return False
        return bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout))
    except (Exception, TimeoutException):  # noqa: BLE001 - failure on model output = "not equal"
        return False


def math_equal(gold: str, pred: str) -> bool:
    """Whether ``pred`` is mathematically equal to ``gold`` per math-verify: False when either
    cannot be parsed, is too long, too costly to compare, or the comparison runs past
    ``math_worker.BUDGET_S`` in any thread (the child process doing it is then killed)."""
    if len(gold) > MAX_MATH_CHARS or len(pred) > MAX_MATH_CHARS:
        return False
    if too_costly_text(gold) or too_costly_text(pred):
        return False
    return math_worker.bounded_compare(gold, pred)  # module attribute: tests replace it
