"""The reward's time budget holds in a worker thread (issue 28, item 2), where math-verify's own
timeout is off.

Real: the reward (``compute_score``), both cost screens, the comparison child process
(``vade.rewards.math_worker``) and math-verify. Timing is measured in ``vade bench reward``; the
join timeouts here only keep a regression from hanging the suite. The reward runs in one worker
thread kept for the module (as verl's thread pool keeps its threads), so that thread's comparison
child starts once, not once per test (about a second each).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import sympy

from vade.rewards import compute_score
from vade.rewards.math_check import too_costly, too_costly_text
from vade.rewards.math_worker import MathWorker

HANG_GUARD_S = 60.0

WORST = [r"e^{e^{e^{e^{100}}}}", r"\binom{10^{6}}{5 \cdot 10^{5}}", r"\prod_{i=1}^{10^6} i",
         r"\sum_{i=1}^{10^9} i", r"e^{e^{100}}", r"\exp(\exp(\exp(100)))", r"(10^{6})!"]


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward") as threads:
        yield threads


def _in_thread(pool, fn):
    """``fn()`` in the module's worker thread (never the main one), at most HANG_GUARD_S."""
    try:
        return pool.submit(fn).result(timeout=HANG_GUARD_S)
    except TimeoutError:
        pytest.fail("the reward hung in a worker thread")


def _acc(answer: str, gold: str) -> float:
    return compute_score("geo170k-math", rf"\boxed{{{answer}}}", gold,
                         {"answer_type": "math"})["acc"]


@pytest.mark.parametrize("answer", WORST)
def test_worst_answers_score_zero_in_a_worker_thread(pool, answer):
    assert _in_thread(pool, lambda: _acc(answer, "2")) == 0.0
    # only the symbolic comparison is barred: the identical string still earns its point
    assert _in_thread(pool, lambda: _acc(answer, answer)) == 1.0


def test_ordinary_symbolic_answers_still_compare_in_a_thread(pool):
    assert _in_thread(pool, lambda: _acc(r"2^{1/2}", r"\sqrt{2}")) == 1.0
    assert _in_thread(pool, lambda: _acc(r"\binom{5}{2}", "10")) == 1.0
    assert _in_thread(pool, lambda: _acc(r"e^{2}", r"e^{3}")) == 0.0


@pytest.mark.parametrize("text, costly", [
    (r"e^{e^{e^{x}}}", True), (r"e^{e^{x}}", False), (r"x^{2}", False),
    (r"\binom{10^{6}}{5}", True), (r"\binom{52}{5}", False), (r"\dbinom{1000}{500}", True),
    (r"\prod_{i=1}^{3} i", True), (r"\int_0^1 x dx", True), (r"n \choose k", True),
    (r"\frac{1}{2}", False),
])
def test_text_screen_by_hand(text, costly):
    assert too_costly_text(text) is costly


def test_expression_screen_by_hand():
    n = sympy.Symbol("n")
    assert too_costly(sympy.binomial(10**6, 5 * 10**5, evaluate=False))
    assert not too_costly(sympy.binomial(52, 5, evaluate=False))
    assert too_costly(sympy.exp(sympy.exp(100, evaluate=False), evaluate=False))
    assert not too_costly(sympy.exp(2, evaluate=False))
    assert too_costly(sympy.Product(n, (n, 1, 10**6)))
    assert too_costly(sympy.Sum(n, (n, 1, 3)))


def test_a_comparison_past_the_budget_is_killed_and_the_next_one_gets_a_fresh_child(pool):
    """``(x+1)^{999}`` passes both screens and runs past the CPU budget: the child ends, the
    pair is 'not equal', and a later request is answered by a new child."""
    worker = MathWorker()
    try:
        assert _in_thread(pool, lambda: worker.compare("3", r"(x+1)^{999}")) is False
        assert worker.killed == 1
        assert _in_thread(pool, lambda: worker.compare(r"\sqrt{2}", r"2^{1/2}")) is True
        assert worker.killed == 1
    finally:
        worker.close()
