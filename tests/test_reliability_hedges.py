"""Hedges that scored 1 when the candidate read happened to be gold now score 0.

All real: ``score_one`` (extraction, verifiers, ``vade.rewards.candidates``) on hand-written
responses. Each hedge is scored against every candidate it names; each has a committed twin in
the same format that scores 1, so the 0 comes from the hedge, not from an unreadable format.
"""

from __future__ import annotations

import pytest

from vade.rewards import score_one
from vade.rewards.candidates import fold_confusables, offers_alternatives


def acc(response: str, gold: str, answer_type: str) -> float:
    return score_one(response, gold, answer_type)["acc"]


@pytest.mark.parametrize("answer_type", ["math", "number", "relaxed"])
@pytest.mark.parametrize("response", [r"\boxed{3} or \boxed{4}", r"\boxed{3}, \boxed{4}",
                                      r"$\boxed{3}$ / $\boxed{4}$", "The answer is 3 or 4"])
def test_two_answers_score_zero_for_either(response, answer_type):
    assert acc(response, "3", answer_type) == 0.0
    assert acc(response, "4", answer_type) == 0.0
    assert acc(r"\boxed{4}", "4", answer_type) == 1.0


@pytest.mark.parametrize("response", ["The answer is A\nor B", "The answer is A\n or B",
                                      "Answer: A\n/ B"])
def test_an_alternative_on_the_next_line_is_a_hedge(response):
    assert acc(response, "A", "choice") == 0.0
    assert acc(response, "B", "choice") == 0.0
    assert acc("The answer is A\nbecause the angle is right", "A", "choice") == 1.0


@pytest.mark.parametrize("lookalike", ["\u0412", "\u0392"])  # Cyrillic Ve, Greek Beta
def test_a_lookalike_letter_is_read_as_that_letter(lookalike):
    response = rf"\boxed{{A or {lookalike}}}"
    assert fold_confusables(response) == r"\boxed{A or B}"
    assert acc(response, "A", "choice") == 0.0
    assert acc(r"\boxed{A}", "A", "choice") == 1.0


def test_a_spelled_out_or_with_a_cyrillic_o_still_joins():
    assert acc("\\boxed{A \u043er B}", "A", "choice") == 0.0


@pytest.mark.parametrize(("response", "gold"), [
    (r"\boxed{3} no wait \boxed{5}", "5"),          # a correction: the last box counts
    (r"\boxed{4} or \boxed{4}", "4"),               # the same answer twice is no hedge
    ("first \\boxed{3}\nthen \\boxed{5}", "5"),     # boxes on different lines
])
def test_corrections_and_repeats_are_not_hedges(response, gold):
    assert acc(response, gold, "number") == 1.0


def test_or_inside_words_and_in_the_gold_is_not_a_hedge():
    assert not offers_alternatives("forty")
    assert not offers_alternatives("3 or 4", gold="3 or 4")
    assert acc("The answer is Paris or London", "Paris or London", "text") == 1.0
