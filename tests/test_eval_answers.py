"""Reasoning answers of the ChartQA/ScienceQA variants: normalised as the training reward reads
them, then scored by lmms-eval's own scorers (real: vade.rewards, lmms-eval 0.7.3's
chartqa/scienceqa process_results; nothing stands in)."""

from __future__ import annotations

import importlib.util

import pytest

from vade.eval.answers import chartqa_answer, plain_answer, scienceqa_answer
from vade.eval.taskgen import SHIPPED_TASKS


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("ru", SHIPPED_TASKS / "reasoning_utils.py")
    ru = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ru)
    return ru


@pytest.mark.parametrize("text, plain", [
    ("\\text{Yes}", "Yes"), ("62\\%", "62%"), ("\\$12", "12"), ("$1,200$", "1200"),
    ("(B)", "B"), ("B.", "B"), ("**3.50**", "3.5"), ("1.2e3", "1200"), ("12,5", "12,5"),
    ("\\textbf{Blue}.", "Blue"), ("-0.25", "-0.25"),
])
def test_plain_answer(text, plain):
    assert plain_answer(text) == plain


CHART = [  # (response, gold, relaxed_overall)
    ("the share is \\boxed{62\\%}", "62", 1.0),
    ("so \\boxed{62\\%}", "62%", 1.0),
    ("\\boxed{\\text{Yes}}", "Yes", 1.0),
    ("\\boxed{1,200}", "1200", 1.0),
    ("\\boxed{\\$12}", "12", 1.0),
    ("\\boxed{12.4}.", "12", 1.0),       # inside 5%
    ("The answer is 1,200.", "1200", 1.0),
    ("\\boxed{70\\%}", "62", 0.0),
    ("\\boxed{\\text{No}}", "Yes", 0.0),
    ("\\boxed{1,300}", "1200", 0.0),     # 8.3% off
    ("\\boxed{-12}", "12", 0.0),
    ("reasoning without an answer\nand more", "12", 0.0),
]


@pytest.mark.parametrize("response, gold, score", CHART)
def test_chartqa_variant_scores_spellings_of_the_answer(hooks, response, gold, score):
    doc = {"type": "human_test", "answer": gold}
    assert hooks.chartqa_reasoning_process_results(doc, [response])["relaxed_overall"] == score


SCIENCE = [  # (response, gold index, exact_match); three options A-C
    ("\\boxed{(B)}", 1, 1.0),
    ("\\boxed{B.}", 1, 1.0),
    ("\\boxed{\\text{B}}", 1, 1.0),
    ("so the answer is (C).", 2, 1.0),
    ("\\boxed{B}", 0, 0.0),
    ("\\boxed{A} or \\boxed{B}", 0, 0.0),  # hedged: one of them is right, still 0
    ("\\boxed{D}", 0, 0.0),                # no such option
    ("\\boxed{a cat}", 0, 0.0),
]


@pytest.mark.parametrize("response, gold, score", SCIENCE)
def test_scienceqa_variant_scores_the_committed_letter(hooks, response, gold, score):
    doc = {"choices": ["x", "y", "z"], "answer": gold}
    assert hooks.sqa_reasoning_process_results(doc, [response])["exact_match"] == score


def test_raw_box_content_scored_zero_before_normalisation():
    """Why this exists: lmms-eval's scorers on the raw box contents count these right answers
    wrong (the finding of issue 14); after normalisation they count them right."""
    from lmms_eval.tasks.chartqa.utils import relaxed_correctness

    for raw, gold in (("62\\%", "62"), ("\\text{Yes}", "Yes"), ("1,200", "1200")):
        assert not relaxed_correctness(raw, gold)
        assert relaxed_correctness(chartqa_answer(f"\\boxed{{{raw}}}", gold), gold)
    assert scienceqa_answer("\\boxed{(B)}", 3) == "B"
