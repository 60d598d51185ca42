"""Reasoning answers of the ChartQA/ScienceQA variants, written plainly, and why the reward's
verdict is named beside lmms-eval's official number (real: vade.rewards, vade.eval.answers, lmms-eval 0.7.3's ChartQA
scorer; nothing stands in). The verdict table is tests/test_eval_semantics.py."""

from __future__ import annotations

import importlib.util

import pytest

from vade.eval.answers import plain_answer
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


def test_the_official_number_and_the_reward_beside_it_differ_on_spellings(hooks):
    """lmms-eval's ChartQA scorer on the raw box contents counts these right answers wrong; the
    table keeps its number (comparable with published ones) and names the reward's beside it."""
    from vade.eval.official import lmms_eval_task_file

    relaxed_correctness = lmms_eval_task_file("chartqa/utils.py").relaxed_correctness

    for raw, gold in (("62\\%", "62"), ("\\text{Yes}", "Yes"), ("1,200", "1200")):
        assert not relaxed_correctness(raw, gold)
        doc = {"type": "human_test", "answer": gold}
        got = hooks.chartqa_reasoning_process_results(doc, [f"\\boxed{{{raw}}}"])
        assert (got["relaxed_overall"], got["relaxed_overall_reward"]) == (0.0, 1.0)
