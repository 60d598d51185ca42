"""Reasoning answers of the ChartQA/ScienceQA variants, written plainly (real: vade.eval.answers;
nothing stands in). Why the reward's verdict is named beside lmms-eval's official number, case by
case against lmms-eval's own rule, is tests/test_eval_semantics.py."""

from __future__ import annotations

import pytest

from vade.eval.answers import plain_answer


@pytest.mark.parametrize("text, plain", [
    ("\\text{Yes}", "Yes"), ("62\\%", "62%"), ("\\$12", "12"), ("$1,200$", "1200"),
    ("(B)", "B"), ("B.", "B"), ("**3.50**", "3.5"), ("1.2e3", "1200"), ("12,5", "12,5"),
    ("\\textbf{Blue}.", "Blue"), ("-0.25", "-0.25"),
])
def test_plain_answer(text, plain):
    assert plain_answer(text) == plain
