"""Time of the reward on the worst answers known, scored in a worker thread as verl scores them.

Target: each scores 0 within the budget, 1 s of its comparison's CPU time, whatever thread it
runs in (math-verify's own timeout is off outside the main thread); on a quiet machine that is
about 1 s of wall time too. Measured here, never in a test: the tests check the
verdicts with a generous guard against hangs only.

Under threads (``threaded``): ``threads - 1`` threads score an answer that exhausts the budget
(``\\boxed{(x+1)^{999}}`` against 3: its comparison child is killed every time) while one thread
scores an easy right answer that needs the comparison child (``\\sqrt{2}`` against ``2^{1/2}``),
all started together. What a user can rely on: no comparison uses more than the budget's CPU
time (wall time grows with the machine's load, up to ``math_worker.WALL_CAP_S``), and the easy
answer is neither delayed nor scored wrong by the others' kills or by the load.
"""

from __future__ import annotations

import platform
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vade.rewards import compute_score

__all__ = ["WORST_ANSWERS", "run_all", "threaded"]

WORST_ANSWERS = (r"e^{e^{e^{e^{100}}}}", r"\binom{10^{6}}{5 \cdot 10^{5}}",
                 r"\prod_{i=1}^{10^6} i", r"\sum_{i=1}^{10^9} i", r"e^{e^{100}}",
                 r"\exp(\exp(\exp(100)))", r"(10^{6})!", r"9^{9^{9^{9}}}")
_GUARD_S = 600.0
HARD = (r"(x+1)^{999}", "3")
EASY = (r"\sqrt{2}", r"2^{1/2}")


def _score(answer: str, gold: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    acc = compute_score("bench", rf"\boxed{{{answer}}}", gold, {"answer_type": "math"})["acc"]
    return time.perf_counter() - t0, acc


def threaded(threads: int, rounds: int) -> dict[str, Any]:
    """Seconds per call and scores with ``threads - 1`` threads on ``HARD`` and one on ``EASY``
    (module doc), ``rounds`` calls each; every thread warms its own comparison child first."""
    barrier = threading.Barrier(threads)
    results: dict[int, list[tuple[float, float]]] = {}

    def work(k: int) -> None:
        _score(*EASY)  # warm-up: this thread's child starts (not timed)
        barrier.wait()
        results[k] = [_score(*(EASY if k == 0 else HARD)) for _ in range(rounds)]

    pool = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(_GUARD_S)
    hard = [s for k in range(1, threads) for s, _ in results.get(k, [])]
    easy = results.get(0, [])
    return {"threads": threads, "rounds": rounds, "hard_answer": HARD[0], "easy_answer": EASY[0],
            "hard_max_s": max(hard, default=float("inf")),
            "hard_median_s": statistics.median(hard) if hard else float("inf"),
            "hard_scores": sorted({a for k in range(1, threads) for _, a in results.get(k, [])}),
            "easy_s": [round(s, 4) for s, _ in easy], "easy_scores": [a for _, a in easy]}


def run_all(repeats: int, threads: int = 8) -> dict[str, Any]:
    """Median and worst seconds per answer over ``repeats`` runs in one long-lived worker thread
    (as verl's pool scores; after one warm-up that starts the thread's comparison child), with
    the score each got; then the threaded case (``threaded``)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_score, *EASY).result(_GUARD_S)  # start the child: not part of any time
        rows = []
        for answer in WORST_ANSWERS:
            runs = [pool.submit(_score, answer, "2").result(_GUARD_S) for _ in range(repeats)]
            seconds = [s for s, _ in runs]
            rows.append({"answer": answer, "median_s": statistics.median(seconds),
                         "max_s": max(seconds), "scores": sorted({a for _, a in runs})})
    return {"machine": {"cpu_count": __import__("os").cpu_count(),
                        "python": platform.python_version()},
            "repeats": repeats, "target_s": 1.0, "reward": rows,
            "threaded": threaded(threads, repeats)}
