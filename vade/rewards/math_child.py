"""The comparison child of ``vade.rewards.math_worker``: ``python -m vade.rewards.math_child [BUDGET_S]``.

Its own module so that the two directions stay one way: ``math_check.math_equal`` asks the
worker (``math_worker``), and the worker's child runs ``math_check.compare``. Each comparison is
bounded by the child's own CPU time (``math_worker``'s module doc: a busy machine must not turn
a right answer into 0).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from vade.rewards.math_check import compare
from vade.rewards.math_worker import _POLL_S, _READY, BUDGET_S


def _watch_cpu(started: list[float | None], budget_s: float) -> None:
    """End the process once the request under way has used ``budget_s`` of CPU time (the
    parent reads the closed pipe as "not equal" and starts a spare)."""
    while True:
        time.sleep(_POLL_S)
        start = started[0]
        if start is not None and time.process_time() - start > budget_s:
            os._exit(3)


def main(budget_s: float = BUDGET_S) -> int:
    """One request line in, ``1``/``0`` out, until stdin closes; each comparison bounded by
    ``budget_s`` of this process's CPU time."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the protocol
    compare(r"\sqrt{2}", r"2^{1/2}", wall_timeout=False)  # warm the parser and SymPy first
    started: list[float | None] = [None]
    threading.Thread(target=_watch_cpu, args=(started, budget_s), daemon=True).start()
    out.write(_READY + "\n")
    for line in sys.stdin:
        started[0] = time.process_time()
        try:
            request = json.loads(line)
            equal = compare(str(request["gold"]), str(request["pred"]), wall_timeout=False)
        except (ValueError, KeyError, TypeError):
            equal = False
        started[0] = None
        out.write("1\n" if equal else "0\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(float(sys.argv[1]) if len(sys.argv) > 1 else BUDGET_S))
