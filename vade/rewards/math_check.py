"""Symbolic equivalence of two short math answers through math-verify, without ``eval``.

Why this path is safe:

* Only math-verify's LaTeX extractor is used (``LatexExtractionConfig``). It parses with
  latex2sympy2_extended's ANTLR grammar, which builds SymPy objects node by node; the one string
  it hands SymPy is a lexer-validated number token (``sympy.Number("35")``, which SymPy turns
  into an ``eval`` of that literal). math-verify's other extractor (``ExprExtractionConfig``)
  calls ``sympy.parse_expr`` (Python ``eval``) on expression text; it is never enabled here.
  ``tests/test_rewards_adversarial.py`` spies on every eval route to keep this true.
* Input is bounded: answers longer than ``MAX_MATH_CHARS`` are not parsed at all.
* Parsed expressions are screened before comparison (``too_costly``): a power tower such as
  ``9^{9^{9^9}}`` parses instantly but makes SymPy's comparison run for hours. Exponents must be
  plain numbers of magnitude <= ``MAX_POWER``, factorial arguments plain numbers <= ``MAX_POWER``.
* math-verify's own timeout uses ``signal.alarm``, which only works in the main thread; verl calls
  reward functions from a thread pool (``loop.run_in_executor``). So the timeout is on in the main
  thread (the local trainer, tests) and off elsewhere, where the screens above bound the work.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["MAX_MATH_CHARS", "MAX_POWER", "TIMEOUT_S", "math_equal", "too_costly"]

MAX_MATH_CHARS = 300
MAX_POWER = 1000
MAX_INTEGER_DIGITS = 1000
TIMEOUT_S = 5

# math-verify logs a warning each time its timeout is disabled on purpose; we do it knowingly.
logging.getLogger("math_verify").setLevel(logging.ERROR)


def too_costly(expr: Any) -> bool:
    """True when comparing ``expr`` symbolically could take unbounded time (see module doc)."""
    import sympy

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
        elif isinstance(node, (sympy.factorial, sympy.factorial2, sympy.gamma)):
            arg = node.args[0]
            if not arg.is_Number or abs(arg) > MAX_POWER:
                return True
        elif isinstance(node, sympy.Integer) and abs(node) > 10 ** MAX_INTEGER_DIGITS:
            return True
    return False


def _parse(text: str, timeout: int | None) -> list[Any]:
    from math_verify import LatexExtractionConfig, parse

    # Inline math must be one line and contain no '$' of its own.
    inner = text.replace("$", " ").replace("\n", " ").strip()
    if not inner:
        return []
    return parse(f"${inner}$", extraction_config=[LatexExtractionConfig()],
                 fallback_mode="no_fallback", parsing_timeout=timeout)


def math_equal(gold: str, pred: str) -> bool:
    """Whether ``pred`` is mathematically equal to ``gold`` per math-verify (False when either
    cannot be parsed, is too long, or is too costly to compare)."""
    if len(gold) > MAX_MATH_CHARS or len(pred) > MAX_MATH_CHARS:
        return False
    from math_verify import verify
    from math_verify.errors import TimeoutException

    timeout = TIMEOUT_S if threading.current_thread() is threading.main_thread() else None
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
