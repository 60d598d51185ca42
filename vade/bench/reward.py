"""Time of the reward on the worst answers known, scored in a worker thread as verl scores them.

Target (issue 28, item 2): each returns in <= 1 s with score 0, whatever thread it runs in
(math-verify's own timeout is off outside the main thread). Measured here, never in a test: the
tests check the verdicts with a generous guard against hangs only.
"""

from __future__ import annotations

import platform
import statistics
import threading
import time
from typing import Any

__all__ = ["WORST_ANSWERS", "run_all"]

WORST_ANSWERS = (r"e^{e^{e^{e^{100}}}}", r"\binom{10^{6}}{5 \cdot 10^{5}}",
                 r"\prod_{i=1}^{10^6} i", r"\sum_{i=1}^{10^9} i", r"e^{e^{100}}",
                 r"\exp(\exp(\exp(100)))", r"(10^{6})!", r"9^{9^{9^{9}}}")
_GUARD_S = 600.0


def _timed_in_thread(answer: str, gold: str) -> tuple[float, float]:
    from vade.rewards import compute_score

    out: list[tuple[float, float]] = []

    def work() -> None:
        t0 = time.perf_counter()
        acc = compute_score("bench", rf"\boxed{{{answer}}}", gold, {"answer_type": "math"})["acc"]
        out.append((time.perf_counter() - t0, acc))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(_GUARD_S)
    return out[0] if out else (float("inf"), float("nan"))


def run_all(repeats: int) -> dict[str, Any]:
    """Median and worst seconds per answer over ``repeats`` runs (after one warm-up that starts
    the comparison child), with the score each got."""
    _timed_in_thread(r"\sqrt{2}", r"2^{1/2}")  # start the child: not part of any answer's time
    rows = []
    for answer in WORST_ANSWERS:
        runs = [_timed_in_thread(answer, "2") for _ in range(repeats)]
        seconds = [s for s, _ in runs]
        rows.append({"answer": answer, "median_s": statistics.median(seconds),
                     "max_s": max(seconds), "scores": sorted({a for _, a in runs})})
    return {"machine": {"cpu_count": __import__("os").cpu_count(),
                        "python": platform.python_version()},
            "repeats": repeats, "target_s": 1.0, "reward": rows}
