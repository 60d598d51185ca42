"""The comparison child of ``vade.rewards.math_worker``: ``python -m vade.rewards.math_child``.

Its own module so that the two directions stay one way: ``math_check.math_equal`` asks the
worker (``math_worker``), and the worker's child runs ``math_check.compare``.
"""

from __future__ import annotations

import json
import os
import sys

from vade.rewards.math_check import compare
from vade.rewards.math_worker import _READY


def main() -> int:
    """The child: one request line in, ``1``/``0`` out, until stdin closes."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the protocol
    compare(r"\sqrt{2}", r"2^{1/2}")  # import and warm the parser and SymPy before "ready"
    out.write(_READY + "\n")
    for line in sys.stdin:
        try:
            request = json.loads(line)
            equal = compare(str(request["gold"]), str(request["pred"]))
        except (ValueError, KeyError, TypeError):
            equal = False
        out.write("1\n" if equal else "0\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
