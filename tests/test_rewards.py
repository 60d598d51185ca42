"""Rewards: answer extraction and verification per answer type, on true AND false cases."""

from __future__ import annotations

import numpy as np
import pytest

from vade.rewards import (
    RewardConfig,
    compute_score,
    extract_answer,
    infer_answer_type,
    score_batch,
    verify,
)
from vade.rewards.extract import MAX_SCAN_CHARS
from vade.rewards.normalize import parse_number
from vade.rewards.verify import option_letter


def acc(solution, gold, answer_type, **extra):
    extra_info = {"answer_type": answer_type, **extra}
    out = compute_score("test", solution, gold, extra_info)
    assert out["score"] == out["acc"]  # default: the paper's binary reward
    return out["acc"]


# ---------------------------------------------------------------- extraction

@pytest.mark.parametrize("response, answer, method", [
    (r"so the area is \boxed{12}.", "12", "boxed"),
    (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}", "boxed"),
    (r"\boxed{\{1, 2\}}", r"\{1, 2\}", "boxed"),                 # escaped braces do not count
    (r"\boxed{{a}{b{c}}}", "{a}{b{c}}", "boxed"),                # nested braces kept whole
    (r"first \boxed{3}, wait, actually \boxed{5}", "5", "boxed"),  # the LAST box wins
    (r"\boxed{3} then truncated \boxed{5", "3", "boxed"),        # unclosed box skipped
    (r"\fbox{7}", "7", "boxed"),
    ("The answer is 42. Because 6*7.", "42", "phrase"),
    ("Answer: Tuesday\nmore text", "Tuesday", "phrase"),
    ("**Answer:** 3.5", "3.5", "phrase"),
    ("Final answer:\n17", "17", "phrase"),
    ("Yes.", "Yes.", "bare"),
    ("", None, "none"),
    ("a long line of reasoning " * 10 + "\nthat never states anything", None, "none"),
])
def test_extract(response, answer, method):
    got = extract_answer(response)
    assert (got.answer, got.method) == (answer, method)


def test_boxed_beats_answer_phrase_and_code_is_ignored():
    assert extract_answer(r"\boxed{4} ... The answer is 9").answer == "4"
    code = "```python\nprint(r'\\boxed{7}')\n```\nThe answer is 3"
    assert extract_answer(code).answer == "3"
    assert extract_answer("```\\boxed{2}```").answer is None
    # an unclosed fence swallows the rest
    assert extract_answer("The answer is 1\n```\n\\boxed{2}").answer == "1"


def test_choice_letter_fallback_only_for_choice_questions():
    text = "Looking at the diagram, I think it is (C) and not the others\nsince ..."
    assert extract_answer(text).answer is None
    assert extract_answer(text, choice_letters="ABCD").answer == "C"
    assert extract_answer("It could be E here\nreally", choice_letters="ABCD").answer is None


def test_only_the_tail_is_scanned():
    early = r"\boxed{1}" + "x" * (MAX_SCAN_CHARS + 10)
    assert extract_answer(early).answer is None
    late = "x" * (MAX_SCAN_CHARS + 10) + r"\boxed{1}"
    assert extract_answer(late).answer == "1"


# ---------------------------------------------------------------- numbers

@pytest.mark.parametrize("text, value, percent", [
    ("1,234", "1234", False), ("3.0", "3", False), ("50%", "50", True), ("50\\%", "50", True),
    ("3/4", "0.75", False), ("\\frac{3}{4}", "0.75", False), ("-\\frac{1}{4}", "-0.25", False),
    ("$12", "12", False), ("12 cm", "12", False), ("5 m^2", "5", False), ("30°", "30", False),
    ("approximately 7", "7", False), ("\u22125", "-5", False), ("\u0663\u0664", "34", False),
    ("\uff11\uff12", "12", False), ("1e308", "1e308", False), ("1\\,234", "1234", False),
])
def test_parse_number(text, value, percent):
    got = parse_number(text)
    assert got is not None and got.value == type(got.value)(value) and got.percent == percent


@pytest.mark.parametrize("text", ["12 or 13", "3,5", "abc", "", "1/0", "nan", "inf", "1e99999",
                                  "1" * 600])
def test_parse_number_rejects(text):
    assert parse_number(text) is None


def test_parse_number_strict_units_for_math():
    assert parse_number("2x") is not None and parse_number("2x", allow_units=False) is None


@pytest.mark.parametrize("pred, gold, ok", [
    ("1,234", "1234", True), ("3.0", "3", True), ("3/4", "0.75", True), ("12 cm", "12", True),
    ("50%", "50", True), ("50%", "0.5", True), ("0.3333333", "1/3", True),  # rel diff 1e-7
    ("0.3333", "1/3", False), ("3.14", "3.14159", False), ("1235", "1234", False),
    ("-5", "5", False), ("13", "12", False),
    ("0", "0", True), ("0.0001", "0", False),
])
def test_number(pred, gold, ok):
    assert acc(rf"\boxed{{{pred}}}", gold, "number") == float(ok)


def test_huge_numbers():
    big = "1" + "0" * 400  # 10**400
    assert acc(rf"\boxed{{{big}}}", big, "number") == 1.0
    assert acc(rf"\boxed{{{big}1}}", big, "number") == 0.0        # 10x larger
    assert acc(r"\boxed{1e308}", "1e308", "number") == 1.0
    assert acc(r"\boxed{1e309}", "1e308", "number") == 0.0
    assert acc(r"\boxed{1e309}", "1e309", "relaxed") == 1.0        # no float overflow to inf


def test_unicode_digits_and_minus():
    assert acc("\\boxed{\u22123}", "-3", "number") == 1.0          # U+2212 minus sign
    assert acc("\\boxed{\uff0d3}", "-3", "math") == 1.0            # full-width hyphen-minus
    assert acc("\\boxed{\u0663}", "3", "number") == 1.0            # Arabic-Indic three
    assert acc("\\boxed{\u0663}", "4", "number") == 0.0
    assert acc("The answer is \u096a\u096b", "45", "relaxed") == 1.0  # Devanagari 45


# ---------------------------------------------------------------- ChartQA relaxed

@pytest.mark.parametrize("pred, ok", [
    ("104.9", True),   # |104.9-100|/100 = 4.9%
    ("105.1", False),  # 5.1%
    ("105", True),     # exactly 5%: inclusive, as pix2struct's relaxed_correctness
    ("95.1", True),    # 4.9% below
    ("94.9", False),   # 5.1% below
])
def test_relaxed_boundary(pred, ok):
    assert acc(rf"\boxed{{{pred}}}", "100", "relaxed") == float(ok)


def test_relaxed_small_gold_and_strings():
    assert acc("The answer is 0.049", "0.0467", "relaxed") == 1.0   # 4.93%
    assert acc("The answer is 0.0491", "0.0467", "relaxed") == 0.0  # 5.14%
    assert acc(r"\boxed{0}", "0", "relaxed") == 1.0
    assert acc(r"\boxed{0.01}", "0", "relaxed") == 0.0              # gold 0 needs exact 0
    assert acc(r"\boxed{Democrats}", "democrats", "relaxed") == 1.0
    assert acc(r"\boxed{Democrat}", "democrats", "relaxed") == 0.0
    assert acc(r"\boxed{55%}", "55", "relaxed") == 1.0


# ---------------------------------------------------------------- yes/no, choice, text

@pytest.mark.parametrize("pred, gold, ok", [
    ("Yes", "Yes", True), ("yes.", "Yes", True), ("YES", "yes", True), ("Yes, it is.", "Yes", True),
    ("No", "Yes", False), ("no.", "No", True), ("Maybe", "Yes", False), ("True", "Yes", False),
    ("Yesterday", "Yes", False),
])
def test_yesno(pred, gold, ok):
    assert acc(rf"\boxed{{{pred}}}", gold, "yesno") == float(ok)


@pytest.mark.parametrize("pred, ok", [
    ("B", True), ("(B)", True), ("B.", True), ("B) a triangle", True), ("[B]", True),
    ("Option B", True), ("option (b)", True), ("b", True), ("b.", True), ("a cat", False),
    ("A", False), ("(C)", False), ("C) a circle", False),
])
def test_choice_letters(pred, ok):
    assert acc(rf"\boxed{{{pred}}}", "B", "choice") == float(ok)


def test_choice_option_text():
    choices = ["a circle", "a triangle", "a square"]
    assert acc(r"\boxed{A triangle}", "B", "choice", choices=choices) == 1.0
    assert acc(r"\boxed{a square}", "B", "choice", choices=choices) == 0.0
    assert acc(r"\boxed{B}", "a triangle", "choice", choices=choices) == 1.0  # gold as text
    assert acc(r"\boxed{D}", "C", "choice", choices=choices) == 0.0           # only 3 options
    with pytest.raises(ValueError, match="ground truth 'D' is neither a letter among the 3"):
        acc(r"\boxed{D}", "D", "choice", choices=choices)
    assert option_letter("a cat") is None and option_letter("A cat") == "A"
    assert option_letter("I") is None and option_letter("D", n_choices=3) is None
    # without the option texts an option text cannot be judged
    assert acc(r"\boxed{a triangle}", "B", "choice") == 0.0


@pytest.mark.parametrize("pred, gold, ok", [
    ("The Nile", "nile", True), ("  New   York. ", "new york", True), ("U.S.", "US", True),
    ("Paris", "London", False), ("", "x", False),
])
def test_text(pred, gold, ok):
    assert acc(f"Answer: {pred}", gold, "text") == float(ok)


# ---------------------------------------------------------------- math

@pytest.mark.parametrize("pred, gold, ok", [
    (r"2\sqrt{3}", r"\sqrt{12}", True), (r"\frac{3}{4}", "0.75", True),
    ("x^2+2x+1", "(x+1)^2", True),
    (r"\dfrac{\pi}{2}", r"\frac{\pi}{2}", True), (r"30^\circ", "30", True), ("7.50", "7.5", True),
    (r"2\sqrt{3}", r"3\sqrt{2}", False), ("-5", "5", False), ("(1,2)", "[1,2]", False),
    ("2x", "2", False), ("x^2+2x", "(x+1)^2", False), ("Tuesday", "tuesday", True),
    ("Monday", "tuesday", False),
])
def test_math(pred, gold, ok):
    assert acc(rf"\boxed{{{pred}}}", gold, "math") == float(ok)


def test_verify_dispatch_rejects_unknown_type():
    assert verify("number", "2", "2.0") is True
    with pytest.raises(ValueError, match="unknown answer_type 'float'"):
        verify("float", "2", "2")


# ---------------------------------------------------------------- API

@pytest.mark.parametrize("source, answer_type", [
    ("chartqa", "relaxed"), ("ChartQA/train", "relaxed"), ("scienceqa", "choice"),
    ("ai2d(cauldron,llava_format)", "choice"), ("geo170k(qa)", "choice"), ("figureqa", "yesno"),
    ("figureqa(cauldron,llava_format)", "yesno"), ("CLEVR-Math(MathV360K)", "number"),
    ("geo3k", "math"), ("GeoQA+(MathV360K)", "math"), ("tabmwp(cauldron)", "math"),
])
def test_infer_answer_type(source, answer_type):
    assert infer_answer_type(source) == answer_type


def test_answer_type_from_extra_info_wins_and_is_validated():
    assert infer_answer_type("chartqa", {"answer_type": "text"}) == "text"
    assert infer_answer_type("synthetic/chart", {"answer_type": "relaxed"}) == "relaxed"
    with pytest.raises(ValueError, match="synthetic/chart"):
        infer_answer_type("synthetic/chart", {})
    with pytest.raises(ValueError, match="'float'"):
        infer_answer_type("geo3k", {"answer_type": "float"})


def test_compute_score_by_data_source():
    assert compute_score("chartqa", r"\boxed{104}", "100") == {"score": 1.0, "acc": 1.0}
    assert compute_score("figureqa", "No", "Yes") == {"score": 0.0, "acc": 0.0}
    assert compute_score("scienceqa", "The answer is (C).", "C")["acc"] == 1.0
    assert compute_score("geo3k", r"\boxed{\frac{1}{2}}", "0.5", None)["acc"] == 1.0
    assert compute_score("geo3k", r"\boxed{1}", ["2", "1"])["acc"] == 1.0     # any of a list


def test_compute_score_bad_input_names_the_row():
    with pytest.raises(ValueError, match="index=7.*empty ground_truth"):
        compute_score("geo3k", r"\boxed{1}", "  ", {"index": 7})
    with pytest.raises(ValueError, match="unknown reward keyword 'format_wieght'"):
        compute_score("geo3k", r"\boxed{1}", "1", None, format_wieght=0.1)
    with pytest.raises(ValueError, match="format_weight"):
        compute_score("geo3k", r"\boxed{1}", "1", None, format_weight=1.5)
    # the reward-router arguments verl adds on its own are accepted and ignored
    assert compute_score("geo3k", r"\boxed{1}", "1", None, reward_router_address=None,
                         reward_model_tokenizer=None)["acc"] == 1.0


def test_format_weight():
    w = 0.2
    assert compute_score("geo3k", r"\boxed{1}", "1", format_weight=w) == {"score": 1.0, "acc": 1.0}
    assert compute_score("geo3k", r"\boxed{2}", "1", format_weight=w) == {"score": 0.2, "acc": 0.0}
    assert compute_score("geo3k", "Answer: 1", "1", format_weight=w) == {"score": 0.8, "acc": 1.0}
    assert RewardConfig.from_mapping({"format_weight": 0.3}).format_weight == 0.3
    with pytest.raises(ValueError, match="reward.weight"):
        RewardConfig.from_mapping({"weight": 0.3})


CASES = [
    (r"\boxed{104}", "100", "relaxed"), (r"\boxed{106}", "100", "relaxed"), ("Yes", "Yes", "yesno"),
    ("no", "Yes", "yesno"), ("(B)", "B", "choice"), ("The answer is A", "B", "choice"),
    (r"\boxed{2\sqrt{2}}", r"\sqrt{8}", "math"), (r"\boxed{3}", "4", "math"),
    ("Answer: 1,000", "1000", "number"), ("", "3", "number"), ("paris", "Paris", "text"),
]


def test_score_batch_equals_elementwise_compute_score():
    sols, golds, types = zip(*CASES)
    expected = [compute_score("x", s, g, {"answer_type": t})["score"] for s, g, t in CASES]
    got = score_batch(list(sols), list(golds), list(types))
    assert got.dtype == np.float64 and got.shape == (len(CASES),)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(expected, [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1])  # hand labels


def test_score_batch_validation_and_options():
    np.testing.assert_array_equal(score_batch(["1", "2"], ["1", "1"], "number"), [1.0, 0.0])
    with pytest.raises(ValueError, match="2 solutions but 1 ground truths"):
        score_batch(["1", "2"], ["1"], "number")
    with pytest.raises(ValueError, match="batch item 1.*empty ground_truth"):
        score_batch(["1", "2"], ["1", ""], "number")
    cfg = RewardConfig(format_weight=0.5)
    np.testing.assert_array_equal(
        score_batch([r"\boxed{2}", "1"], ["1", "1"], "number", config=cfg), [0.5, 0.5])
    np.testing.assert_array_equal(
        score_batch([r"\boxed{2}", "1"], ["1", "1"], "number", config=cfg, key="acc"), [0.0, 1.0])
    choices = [None, {"choices": ["red", "blue"]}]
    np.testing.assert_array_equal(
        score_batch(["blue", "blue"], ["B", "B"], "choice", extra_infos=choices), [0.0, 1.0])


# ------------------------------------------------- real MathVista gold (lupantech/MathVista testmini)

LETTER_OPTIONS = ["(c)", "(a)", "(e)", "(d)", "(b)"]  # pids 168 and 849: the answer "(b)" is E


@pytest.mark.parametrize("pred, ok", [
    ("E", True), ("(E)", True), ("E.", True), ("Option E", True), ("**E**", True),
    ("e", True),                    # the whole answer a lower-case letter: the letter
    ("B", False), ("(b)", False),   # the letter B (MathVista's own scorer reads "(b)" as B too)
    ("A or E", False), ("C", False),
    ("E. (b)", True), ("(E) (b)", True),   # the letter and its own option text (issue 49)
    ("E. (a)", False), ("B. (b)", False),  # a letter with another option's text
])
def test_options_that_are_letters_are_named_by_their_letter(pred, ok):
    for gold in ("(b)", "E"):  # the gold as MathVista writes it, or as its letter
        assert acc(rf"\boxed{{{pred}}}", gold, "choice", choices=LETTER_OPTIONS) == float(ok)


def test_an_option_text_gold_is_read_as_that_option_before_as_a_letter():
    # gold "(b)" is the text of option E, not the letter B; texts that are not letters unchanged
    assert acc(r"\boxed{E}", "(b)", "choice", choices=LETTER_OPTIONS) == 1.0
    assert acc(r"\boxed{B}", "(b)", "choice", choices=LETTER_OPTIONS) == 0.0
    assert acc(r"\boxed{a triangle}", "B", "choice", choices=["a square", "a triangle"]) == 1.0
    assert acc(r"\boxed{A}", "B", "choice", choices=["a square", "a triangle"]) == 0.0


@pytest.mark.parametrize("pred, gold, answer_type, ok", [
    ("100000001", "100000000", "number", False),  # pid 814: a tolerance on an integer is wrong
    ("100000000", "100000000", "number", True),
    ("100000000.0", "100000000", "number", True),  # the same integer, written as a float
    ("1e8", "100000000", "math", True),
    ("100000001", "100000000", "math", False),
    ("1000001", "1000000", "math", False),
    ("0.30000000000000004", "0.3", "number", True),  # float formatting is absorbed ...
    ("0.3333333", "0.33333333", "number", False),  # ... a digit short of the gold's is not
    ("3.0000001", "3.0000002", "number", False),
    ("50%", "0.5", "number", True),                # percent readings unchanged
    ("131253.6", "131253.5", "number", False),     # pid 383: within 1e-6, a tenth off
    ("131253.5", "131253.5", "number", True),
    ("0.3333333", "1/3", "number", True),          # a fraction gold: the tolerance as before
    ("0.00000000005", "0.0000000001", "number", False),  # half a unit off: not the gold (issue
    ("0.00000000005", "0.0000000001", "math", False),    # 49; the bound was inclusive)
    ("0.00000000009", "0.0000000001", "number", True),   # under half a unit: rounds to it
    ("0.0000000001", "0.0000000001", "number", True),
])
def test_integers_compare_exactly(pred, gold, answer_type, ok):
    assert acc(rf"\boxed{{{pred}}}", gold, answer_type) == float(ok)
