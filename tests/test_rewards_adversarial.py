"""Rewards under hostile model outputs: code-like text is never executed, huge or pathological
inputs finish, and properties that must hold for any string (hypothesis)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vade.data.records import ANSWER_TYPES
from vade.rewards import compute_score, extract_answer, score_batch
from vade.rewards.math_check import math_equal, too_costly

TYPES = list(ANSWER_TYPES)
MB = 1 << 20


def _score(solution, gold, answer_type):
    return compute_score("test", solution, gold, {"answer_type": answer_type})


@pytest.mark.parametrize("answer_type", TYPES)
def test_code_like_answers_are_text_not_executed(tmp_path, answer_type):
    marker = tmp_path / "pwned"
    payloads = [
        f"__import__('os').system('touch {marker}')",
        f"exec(\"open('{marker}', 'w').write('x')\")",
        f"(lambda: __import__('pathlib').Path('{marker}').touch())()",
        f"eval(compile('open(\"{marker}\",\"w\")','x','exec'))",
    ]
    for payload in payloads:
        for response in (rf"\boxed{{{payload}}}", f"The answer is {payload}", payload,
                         f"Answer: {payload}\n```python\n{payload}\n```"):
            gold = "B" if answer_type == "choice" else "1"
            assert _score(response, gold, answer_type)["acc"] == 0.0
            # also as the ground truth (a poisoned row must not execute either)
            out = _score(response, payload, "math" if answer_type == "choice" else answer_type)
            assert out["acc"] in (0.0, 1.0)
    assert not marker.exists()


def test_code_like_math_is_compared_as_text(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    assert math_equal(payload, payload) in (True, False)
    assert _score(rf"\boxed{{{payload}}}", payload, "math")["acc"] == 1.0  # identical strings
    assert not marker.exists()


def test_two_boxed_answers_last_wins():
    assert _score(r"\boxed{3} no wait \boxed{5}", "5", "number")["acc"] == 1.0
    assert _score(r"\boxed{3} no wait \boxed{5}", "3", "number")["acc"] == 0.0


def test_boxed_inside_code_block_is_not_the_answer():
    response = "```latex\n\\boxed{7}\n```\nso the result is \\boxed{8}"
    assert _score(response, "8", "number")["acc"] == 1.0
    assert _score(response, "7", "number")["acc"] == 0.0
    assert _score("```\n\\boxed{7}\n```", "7", "number")["acc"] == 0.0


def test_nested_and_unbalanced_braces():
    assert _score(r"\boxed{\frac{\sqrt{3}}{2}}", r"\frac{\sqrt{3}}{2}", "math")["acc"] == 1.0
    assert _score(r"\boxed{\frac{\sqrt{3}}{2}", "2", "math")["acc"] == 0.0  # unclosed: no answer
    assert extract_answer("}" * 1000 + r"\boxed{1}" + "{" * 1000).answer == "1"


def test_empty_and_whitespace_output():
    for answer_type in TYPES:
        gold = "B" if answer_type == "choice" else "1"
        for response in ("", "   \n\t ", r"\boxed{}", r"\boxed{ }", "Answer:"):
            assert _score(response, gold, answer_type) == {"score": 0.0, "acc": 0.0}


def test_power_towers_and_factorials_are_refused_not_computed():
    import sympy

    x = sympy.Symbol("x")
    assert too_costly(sympy.Pow(9, sympy.Pow(9, sympy.Pow(9, 9, evaluate=False),
                                             evaluate=False), evaluate=False))
    assert too_costly(sympy.factorial(10 ** 6, evaluate=False))
    assert too_costly(x ** 5000) and not too_costly(x ** 2 + 1)
    # compared only as strings: identical is right, anything else wrong, and it returns
    assert _score(r"\boxed{9^{9^{9^{9}}}}", "1", "math")["acc"] == 0.0
    assert _score(r"\boxed{9^{9^{9^{9}}}}", "9^{9^{9^{9}}}", "math")["acc"] == 1.0
    assert _score(r"\boxed{100000!}", "1", "math")["acc"] == 0.0


def test_huge_numbers_do_not_overflow():
    digits = "9" * 400
    assert _score(rf"\boxed{{{digits}}}", digits, "math")["acc"] == 1.0
    assert _score(rf"\boxed{{{digits}}}", "1" + "0" * 400, "relaxed")["acc"] == 1.0  # 1e-400 off
    assert _score(rf"\boxed{{{digits}}}", "1" + "0" * 399, "relaxed")["acc"] == 0.0  # 10x
    assert _score(r"\boxed{1e308}", "1e308", "math")["acc"] == 1.0
    assert _score(r"\boxed{10^{400}}", "10^{400}", "math")["acc"] == 1.0


@pytest.mark.parametrize("payload", [
    "\\boxed{" * (MB // 7),                     # a million unclosed boxes
    "answer" + " " * MB + "is",                 # long whitespace after an answer phrase
    "The answer is " + "1" * MB,                # a one-megabyte number
    "(" * MB,                                   # nothing but brackets
    "A " * (MB // 2),                           # a million candidate letters
    "```" * (MB // 3),                          # a million fences
    "$" * MB,                                   # math-verify's delimiter
    "\\frac{" * (MB // 6) + "}" * (MB // 6),    # deep nesting
])
@pytest.mark.parametrize("answer_type", ["math", "choice", "relaxed"])
def test_megabyte_adversarial_strings_complete(payload, answer_type):
    """None of these holds the gold answer: each scores exactly 0, and returns. The time bound
    (30 s; the slowest case, math-verify on a megabyte of spaces, takes about 7 s on 2 busy
    cores) only stops a regression from hanging the suite: the reward's own 1 s budget is the
    reward's business (issue 28, item 2)."""
    import time

    gold = "B" if answer_type == "choice" else "1"
    start = time.monotonic()
    out = _score(payload, gold, answer_type)
    assert time.monotonic() - start < 30
    assert out["acc"] == 0.0 and out["score"] == 0.0


@pytest.mark.parametrize("answer_type", ["math", "choice", "relaxed"])
def test_the_answer_after_a_megabyte_of_text_is_found(answer_type):
    gold = "B" if answer_type == "choice" else "1"
    out = _score("x " * (MB // 2) + rf"The answer is \boxed{{{gold}}}", gold, answer_type)
    assert out["acc"] == 1.0 and out["score"] == 1.0


def test_scoring_works_off_the_main_thread():
    """verl calls the reward from a thread pool, where math-verify's signal timeout cannot run."""
    results = {}

    def work():
        results["math"] = _score(r"\boxed{2\sqrt{3}}", r"\sqrt{12}", "math")["acc"]
        results["bad"] = _score(r"\boxed{3\sqrt{2}}", r"\sqrt{12}", "math")["acc"]

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert results == {"math": 1.0, "bad": 0.0}


# ---------------------------------------------------------------- properties

SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response=SAFE_TEXT, answer_type=st.sampled_from(TYPES))
def test_any_string_scores_to_zero_or_one(response, answer_type):
    gold = "B" if answer_type == "choice" else "7"
    out = _score(response, gold, answer_type)
    assert out["acc"] in (0.0, 1.0) and out["score"] == out["acc"]


@settings(max_examples=150, deadline=None)
@given(answer=st.text(st.characters(blacklist_characters="{}\\`$",
                                    blacklist_categories=("Cs", "Zl", "Zp", "Cc")),
                      min_size=1, max_size=40).filter(lambda s: s.strip()),
       prefix=SAFE_TEXT.filter(lambda s: "```" not in s and "\\" not in s))
def test_boxed_answer_round_trips(answer, prefix):
    from vade.rewards.normalize import canonical_unicode

    got = extract_answer(prefix + "\\boxed{" + answer + "}").answer
    assert got == canonical_unicode(answer).strip()


@settings(max_examples=150, deadline=None)
@given(value=st.integers(min_value=-10 ** 12, max_value=10 ** 12),
       cents=st.integers(min_value=0, max_value=99))
def test_number_is_equal_to_itself_and_not_to_a_neighbour(value, cents):
    text = f"{value}.{cents:02d}"
    assert _score(rf"\boxed{{{text}}}", text, "number")["acc"] == 1.0
    assert _score(f"The answer is {value:,}.{cents:02d}", text, "number")["acc"] == 1.0
    neighbour = value + 1 + abs(value) // 100_000  # >= 1e-5 relative: outside the 1e-6 tolerance
    assert _score(rf"\boxed{{{neighbour}.{cents:02d}}}", text, "number")["acc"] == 0.0


@settings(max_examples=100, deadline=None)
@given(gold=st.integers(min_value=1, max_value=10 ** 6),
       pct=st.integers(min_value=-200, max_value=200))
def test_relaxed_matches_the_paper_formula(gold, pct):
    """A prediction pct/10 percent away is right iff |pct| <= 50 (i.e. within 5.0%)."""
    from fractions import Fraction

    pred = Fraction(gold) * (1 + Fraction(pct, 1000))
    text = f"{pred.numerator}/{pred.denominator}" if pred.denominator != 1 else str(pred.numerator)
    assert _score(rf"\boxed{{{text}}}", str(gold), "relaxed")["acc"] == float(abs(pct) <= 50)


@settings(max_examples=50, deadline=None)
@given(cases=st.lists(st.tuples(SAFE_TEXT, st.sampled_from(["1", "2.5", "Yes", "B", "x+1"]),
                                st.sampled_from(TYPES)), max_size=8))
def test_score_batch_matches_compute_score(cases):
    cases = [(s, "B" if t == "choice" else g, t) for s, g, t in cases]
    expected = [_score(s, g, t)["score"] for s, g, t in cases]
    got = score_batch([c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases])
    assert got.tolist() == expected


def test_math_path_never_evals_model_text(monkeypatch):
    """math-verify's plain-expression extractor runs ``sympy.parse_expr`` (an ``eval``) on
    expression text; the reward only uses its LaTeX (ANTLR) extractor, which hands SymPy nothing
    but lexer-validated number tokens (``sympy.Number("35")`` -> parse_expr). Spy on every eval
    route while scoring: math-verify's own parse_expr path is never taken, and whatever reaches
    SymPy's parse_expr is a bare number. The comparison runs in this process here (what the
    child of ``math_worker`` runs, ``math_check.compare``), so that the spies see it."""
    import builtins
    import re

    import math_verify.parser
    from sympy.parsing import sympy_parser

    from vade.rewards import math_check, math_worker

    monkeypatch.setattr(math_worker, "bounded_compare", math_check.compare)

    cases = [("1+2*17", "35"), ("3/4+1/8", "0.875"), ("(x+3)^2", "x^2+6x+9"),
             ("__import__('os').getcwd()", "1"), ("2**10", "1024"), (r"\sqrt{50}", r"5\sqrt{2}")]
    for p, g in cases:  # warm up: SymPy's lazy imports sympify unit names ("yotta") once
        _score(rf"\boxed{{{p}}}", g, "math")
    math_verify.parser.parse_latex_cached.cache_clear()  # parse again under the spies
    calls = []

    def spy(name, real):
        def wrapper(*args, **kwargs):
            if name.startswith("parse") or isinstance(args[0], str):  # not import's code objects
                calls.append((name, str(args[0])))
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(builtins, "eval", spy("eval", builtins.eval))
    monkeypatch.setattr(builtins, "exec", spy("exec", builtins.exec))
    monkeypatch.setattr(sympy_parser, "parse_expr", spy("parse_expr", sympy_parser.parse_expr))
    monkeypatch.setattr(math_verify.parser, "parse_expr_cached",
                        spy("parse_expr_cached", math_verify.parser.parse_expr_cached))
    results = [_score(rf"\boxed{{{p}}}", g, "math")["acc"] for p, g in cases]
    assert results == [1.0, 1.0, 1.0, 0.0, 0.0, 1.0]  # "2**10" is not LaTeX
    assert [c for c in calls if c[0] == "parse_expr_cached"] == []
    parsed = [text for name, text in calls if name == "parse_expr"]
    assert parsed and [t for t in parsed if not re.fullmatch(r"[0-9.eE+-]+", t)] == []
    # besides number literals, only SymPy's own constant setup line is ever executed
    other = {text for name, text in calls if name in ("eval", "exec")} - set(parsed)
    assert not [t for t in other if t != "from sympy import *" and not re.fullmatch(
        r"(?:Integer|Float|Rational|[ ()'0-9.eE+-])+", t)], other
    assert not [c for c in calls if re.search(r"getcwd|__import__|os\.|lambda", c[1])]
