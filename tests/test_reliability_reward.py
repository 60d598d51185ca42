"""The reward's time bound holds per call in any thread: a killed comparison never delays
another thread's, and a call right after a kill does not wait for the restart.

Real: the reward (``compute_score``), the per-thread comparison children
(``vade.rewards.math_worker``) and math-verify. ``(x+1)^{999}`` passes both cost screens and
runs SymPy past the 1 s budget, so its child is killed every time. Timings: ``vade bench reward``;
the bounds here are the budget plus a margin for a loaded machine.
"""

from __future__ import annotations

import threading
import time

import pytest

from vade.rewards import compute_score
from vade.rewards.math_worker import BUDGET_S, MathWorker

HARD = (r"\boxed{(x+1)^{999}}", "3")
EASY = (r"\boxed{\sqrt{2}}", r"2^{1/2}")
MARGIN_S = 0.75


def _timed(response: str, gold: str) -> tuple[float, float]:
    t0 = time.monotonic()
    acc = compute_score("t", response, gold, {"answer_type": "math"})["acc"]
    return time.monotonic() - t0, acc


@pytest.mark.serial
@pytest.mark.e2e
def test_a_killed_comparison_never_delays_another_thread():
    """Before: one shared child behind a lock; the easy answer waited for every kill and
    restart of the hard one (21.4 s with 7 hard threads)."""
    results: dict[str, list[tuple[float, float]]] = {}
    barrier = threading.Barrier(2)

    def work(name: str, case: tuple[str, str]) -> None:
        _timed(*EASY)  # this thread's child starts (not timed)
        barrier.wait()
        results[name] = [_timed(*case) for _ in range(3)]

    threads = [threading.Thread(target=work, args=("hard", HARD), daemon=True),
               threading.Thread(target=work, args=("easy", EASY), daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert [acc for _, acc in results["hard"]] == [0.0, 0.0, 0.0]
    assert [acc for _, acc in results["easy"]] == [1.0, 1.0, 1.0]
    assert max(s for s, _ in results["easy"]) < BUDGET_S, results
    assert max(s for s, _ in results["hard"]) < BUDGET_S + MARGIN_S, results


@pytest.mark.serial
@pytest.mark.e2e
def test_the_call_after_a_kill_is_bounded_and_the_spare_takes_over():
    """Before: every call after a kill waited for a new child's imports (2.2-3.3 s)."""
    worker = MathWorker()
    try:
        assert worker.compare("1", "1") is True       # the first child starts (not timed)
        t0 = time.monotonic()
        assert worker.compare("3", "(x+1)^{999}") is False
        after_kill = time.monotonic()
        worker.compare(r"2^{1/2}", r"\sqrt{2}")         # True, or False when no child is ready
        assert worker.killed == 1
        assert after_kill - t0 < BUDGET_S + MARGIN_S
        assert time.monotonic() - after_kill < BUDGET_S + MARGIN_S
        worker._spare.ready.wait(120)                  # the spare, started at the kill
        assert worker.compare(r"2^{1/2}", r"\sqrt{2}") is True
    finally:
        worker.close()
