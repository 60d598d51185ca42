"""The number Python's ``eval`` would give for a printed sympy expression, without ``eval``.

Why: MATH-V's official ``is_equal`` compares ``eval(str(latex2sympy(answer)))`` in a module that
did ``from math import *``; a model's answer must never reach ``eval`` (``\\operatorname{exit}(1)``
prints as ``exit(1)``), so this walks the expression's syntax tree and allows only what such an
``eval`` can turn into a number: numeric literals, ``+ - * / // % **``, and the constants and
functions of ``math`` (``sqrt(3)``, ``pi``, ``log(8, 2)``). Any other name (a sympy symbol,
``E``, ``I``, ``oo``, ``Abs``) fails, as the NameError does officially. Two guards the official
code lacks: a power or factorial that would take more than a moment to compute fails.
"""

from __future__ import annotations

import ast
import math
import operator

__all__ = ["Number", "python_value"]

Number = int | float | complex | bool

_MATH = {k: v for k, v in vars(math).items() if not k.startswith("_")}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
MAX_BITS = 1 << 20  # a power with a result above ~10^315,000 is refused
MAX_FACTORIAL = 20_000


def _pow(base: Number, exp: Number) -> Number:
    if isinstance(base, int) and isinstance(exp, int) and abs(base) > 1 and \
            exp * abs(base).bit_length() > MAX_BITS:
        raise OverflowError("power too large to compute")
    return base ** exp


def _value(node: ast.AST) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)):
        return node.value  # bool is an int
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow):
            return _pow(left, right)  # type: ignore[arg-type]
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.Name) and node.id in _MATH:
        return _MATH[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in _MATH and not node.keywords:
        args = [_value(a) for a in node.args]
        if node.func.id == "factorial" and args and isinstance(args[0], int) and \
                args[0] > MAX_FACTORIAL:
            raise OverflowError("factorial too large to compute")
        return _MATH[node.func.id](*args)
    raise ValueError(f"not a number expression: {ast.dump(node)[:80]}")


def python_value(text: str) -> Number:
    """The value of ``text`` as ``eval`` in ``math``'s namespace would compute it; ValueError
    (or the arithmetic's own error) where that ``eval`` would not give a number."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"not an expression: {text[:80]!r}") from exc
    value = _value(tree.body)
    if not isinstance(value, (int, float, complex)):
        raise ValueError(f"not a number: {text[:80]!r}")  # noqa: TRY004 (as eval's callers see it)
    return value
