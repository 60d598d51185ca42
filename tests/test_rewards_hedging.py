"""Hedged answers score 0 (issue 18, "reward hacking"): a choice or yes/no answer must commit to
exactly one candidate.

All real: the project's reward (``score_one`` / ``compute_score``: extraction, verifiers and
``vade.rewards.candidates``) on hand-written responses; nothing is stubbed. Each hedged case is
scored against every candidate it names (0.0 each time, so naming the right one among others
earns nothing) and has a single-answer twin in the same format that scores 1.0 (so the 0 comes
from the hedge, not from an unreadable format).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vade.rewards import compute_score, extract_answer, score_one
from vade.rewards.candidates import candidate_runs, is_hedged, named_candidates


def acc(response: str, gold: str, answer_type: str, **info) -> float:
    return score_one(response, gold, answer_type, info or None)["acc"]


# (hedged response, the candidates it names, the same format naming one of them, that one)
CHOICE_HEDGES = [
    (r"\boxed{A or B}", "AB", r"\boxed{A}", "A"),
    (r"\boxed{A/B}", "AB", r"\boxed{A}", "A"),
    (r"\boxed{(A),(C)}", "AC", r"\boxed{(A)}", "A"),
    (r"\boxed{A and C}", "AC", r"\boxed{A}", "A"),
    (r"\boxed{A, B}", "AB", r"\boxed{A}", "A"),
    (r"\boxed{B, C, or D}", "BCD", r"\boxed{B}", "B"),
    (r"\boxed{\text{A} \text{ or } \text{B}}", "AB", r"\boxed{\text{A}}", "A"),
    ("The answer is A or B.", "AB", "The answer is A.", "A"),
    ("The answer is A/B", "AB", "The answer is A", "A"),
    ("Answer: (B) or (D).", "BD", "Answer: (B).", "B"),
    ("Answer: either B or D", "BD", "Answer: B", "B"),
    ("Final answer: option A or option C", "AC", "Final answer: option A", "A"),
    ("Answer: **A** or **B**", "AB", "Answer: **A**", "A"),
    ("The answer is C (or D)", "CD", "The answer is C", "C"),
    ("Answer: A | B", "AB", "Answer: A", "A"),
    ("Answer: A & D", "AD", "Answer: A", "A"),
    ("Answer: B and/or C", "BC", "Answer: B", "B"),
    ("The answer is B, or possibly C", "BC", "The answer is B", "B"),
    ("Answer: neither A nor B", "AB", "Answer: A", "A"),
    ("Answer: (b) or (c)", "BC", "Answer: (b)", "B"),
    ("Answer: A B", "AB", "Answer: A", "A"),
    ("Answer: A. Or maybe B.", "AB", "Answer: A.", "A"),   # the sentence end does not hide B
    # several boxes joined on one line are one hedged answer
    (r"\boxed{A} or \boxed{B}", "AB", r"\boxed{A}", "A"),
    (r"So it is \boxed{\text{C}} / \boxed{\text{D}}.", "CD", r"So it is \boxed{\text{C}}.", "C"),
    # the letter fallback (no box, no answer phrase): the last letter and what it is joined to
    ("A or B", "AB", "B", "B"),
    ("It could be A or B", "AB", "It could be B", "B"),
    ("Hmm, hard to say.\nI'd go with C/D", "CD", "Hmm, hard to say.\nI'd go with D", "D"),
    ("Looking at both, (A) and (C) fit", "AC", "Looking at both, (C) fits", "C"),
]


@pytest.mark.parametrize("hedged, names, single, single_gold", CHOICE_HEDGES)
def test_choice_hedges_score_zero_for_every_named_option(hedged, names, single, single_gold):
    for gold in names:
        assert acc(hedged, gold, "choice") == 0.0, (hedged, gold)
    assert acc(single, single_gold, "choice") == 1.0
    assert compute_score("scienceqa", hedged, names[0])["score"] == 0.0


YESNO_HEDGES = [
    (r"\boxed{yes or no}", r"\boxed{yes}", "yes"),
    (r"\boxed{Yes/No}", r"\boxed{Yes}", "yes"),
    ("The answer is yes and no.", "The answer is yes.", "yes"),
    ("Answer: YES, NO", "Answer: YES", "yes"),
    ("Answer: either yes or no", "Answer: yes", "yes"),
    ("Yes (or no)", "Yes", "yes"),
    ("Answer: no/yes", "Answer: no", "no"),
    (r"\boxed{yes} or \boxed{no}", r"\boxed{yes}", "yes"),
    ("No or yes", "No", "no"),
]


@pytest.mark.parametrize("hedged, single, single_gold", YESNO_HEDGES)
def test_yesno_hedges_score_zero_for_both_golds(hedged, single, single_gold):
    assert acc(hedged, "yes", "yesno") == 0.0
    assert acc(hedged, "no", "yesno") == 0.0
    assert acc(single, single_gold, "yesno") == 1.0
    assert compute_score("figureqa", hedged, single_gold)["score"] == 0.0


# single answers that mention other letters / words: not hedges (each scores 1 when right)
NOT_HEDGES = [
    (r"\boxed{(A) The triangle is isosceles}", "A", "choice"),
    ("Answer: (A) The triangle is isosceles", "A", "choice"),
    ("Answer: B", "B", "choice"),
    ("The answer is **B**.", "B", "choice"),               # markdown before the period
    ("Answer: A. Order matters here, not size", "A", "choice"),
    ("After checking the angles, the answer is C.", "C", "choice"),
    ("Answer: B) A right triangle", "B", "choice"),
    (r"\boxed{(D) both A and B}", "D", "choice"),
    ("Answer: C. B is too small to fit", "C", "choice"),
    ("Answer: B, e.g. because it is larger", "B", "choice"),
    ("Answer: B and not C", "B", "choice"),
    ("Answer: A, A", "A", "choice"),
    ("I think it is B. A triangle has three sides", "B", "choice"),
    ("Looking at the diagram, I think it is (C) and not the others\nsince ...", "C", "choice"),
    ("Option A is wrong since the sides differ, so D", "D", "choice"),
    ("Answer: Yes, no doubt about it", "yes", "yesno"),
    # the last box is the final commitment when the boxes are not joined
    ("First \\boxed{A}, but no: the answer is \\boxed{B}", "B", "choice"),
    ("\\boxed{A}\nWait, that is wrong.\n\\boxed{B}", "B", "choice"),
    ("Answer: No, it is not.", "no", "yesno"),
    (r"\boxed{No}", "no", "yesno"),
]


@pytest.mark.parametrize("response, gold, answer_type", NOT_HEDGES)
def test_single_answers_mentioning_other_words_still_score_one(response, gold, answer_type):
    assert acc(response, gold, answer_type) == 1.0


def test_an_option_text_that_names_letters_is_that_option_not_a_hedge():
    choices = ["only A", "only B", "both A and B"]
    assert acc(r"\boxed{both A and B}", "C", "choice", choices=choices) == 1.0
    assert acc(r"\boxed{both A and B}", "A", "choice", choices=choices) == 0.0
    assert acc(r"\boxed{A or B}", "A", "choice", choices=choices) == 0.0


def test_other_answer_types_are_unaffected():
    assert acc(r"\boxed{A and B}", "A and B", "relaxed") == 1.0   # a chart label
    assert acc("Answer: salt and pepper", "salt and pepper", "text") == 1.0
    assert acc("Answer: yes or no", "yes or no", "text") == 1.0
    assert acc(r"\boxed{12}", "12", "number") == 1.0


def test_named_candidates_by_hand():
    letters = "ABCDEFGH"
    assert named_candidates("A or B", "choice", letters) == ("A", "B")
    assert named_candidates("(A) The triangle", "choice", letters) == ("A",)
    # the verifiers read a leading "A" as option A (an option text is matched before this)
    assert named_candidates("A triangle", "choice", letters) == ("A",)
    assert named_candidates("A triangle or B", "choice", letters) == ("A", "B")
    assert named_candidates("The answer", "choice", letters) == ()
    assert named_candidates("I or J", "choice", letters) == ()       # not options here
    assert named_candidates("D or E", "choice", "ABCD") == ("D",)    # E is past the options
    assert named_candidates("Yes, no doubt", "yesno") == ("yes",)
    assert named_candidates("no, no", "yesno") == ("no", "no")
    assert not is_hedged("no, no", "yesno")
    runs = candidate_runs("It is B. Then C or D", "choice", letters)
    assert [(r.names, r.leading) for r in runs] == [(("B",), False), (("C", "D"), False)]
    # a sentence end followed by a coordinating word keeps hedging
    assert [r.names for r in candidate_runs("B. Or maybe C", "choice", letters)] == [("B", "C")]
    with pytest.raises(ValueError, match="candidate kind must be one of"):
        candidate_runs("A", "number")


def test_letter_fallback_returns_the_whole_run_of_a_hedge():
    assert extract_answer("It could be A or B", choice_letters="ABCD").answer == "A or B"
    assert extract_answer("It could be B", choice_letters="ABCD").answer == "B"
    # "A" running into a word is the article: the letter read is the earlier B
    assert extract_answer("So B. A square has four sides", choice_letters="ABCD").answer == "B"


# ---------------------------------------------------------------- the rule, not the strings

_JOINERS = (" or ", "/", ", ", ",", " and ", " | ", " & ", "; ", " or maybe ", ", or possibly ",
            " and/or ", " vs ")
_WRAPPERS = (r"\boxed{%s}", "Answer: %s", "The final answer is %s.", "%s",
             "After some thought, it is %s")
_FORMS = ("{}", "({})", "**{}**", "option {}", "{}.")


@settings(max_examples=200, deadline=None)
@given(pair=st.permutations("ABCD"), joiner=st.sampled_from(_JOINERS),
       wrapper=st.sampled_from(_WRAPPERS), form=st.sampled_from(_FORMS))
def test_any_two_options_joined_any_way_score_zero(pair, joiner, wrapper, form):
    first, second = pair[0], pair[1]
    hedged = wrapper % (form.format(first) + joiner + form.format(second))
    assert acc(hedged, first, "choice") == 0.0
    assert acc(hedged, second, "choice") == 0.0
    assert acc(wrapper % form.format(second), second, "choice") == 1.0


@settings(max_examples=100, deadline=None)
@given(first=st.sampled_from(["yes", "no", "Yes", "NO"]), joiner=st.sampled_from(_JOINERS),
       wrapper=st.sampled_from((r"\boxed{%s}", "Answer: %s", "%s", "The answer is %s.")))
def test_yes_and_no_joined_any_way_score_zero(first, joiner, wrapper):
    second = "no" if first.lower() == "yes" else "yes"
    hedged = wrapper % (first + joiner + second)
    assert acc(hedged, "yes", "yesno") == 0.0
    assert acc(hedged, "no", "yesno") == 0.0
    assert acc(wrapper % first, first.lower(), "yesno") == 1.0


# Issue 28, item 6: hedges that scored 1 before the rule counted every candidate of the answer.
ISSUE_28_HEDGES = [
    (r"\boxed{A. B. C. D.}", "ABCD", "choice"),
    (r"\boxed{A \lor B}", "AB", "choice"),
    (r"\boxed{A: B}", "AB", "choice"),
    (r"\boxed{A, not sure, maybe B}", "AB", "choice"),
    ("The answer is A, but B is possible", "AB", "choice"),
    (r"\boxed{Yes. No.}", ("yes", "no"), "yesno"),
    (r"\boxed{Yes but also No}", ("yes", "no"), "yesno"),
    ("Yes 或 No", ("yes", "no"), "yesno"),
    ("A oder B", "AB", "choice"),
    ("A -> B", "AB", "choice"),
    ("A\nB\nC\nD", "ABCD", "choice"),             # a bare list of all options
    ("(A)\n(B)\n**C**\nD.", "ABCD", "choice"),
    (r"\boxed{3 or so}", ("3",), "number"),
    (r"\boxed{3 or so}", ("3",), "relaxed"),
    (r"\boxed{3 or so}", ("3",), "math"),
]


@pytest.mark.parametrize("response, golds, answer_type", ISSUE_28_HEDGES)
def test_issue_28_hedges_score_zero_against_every_candidate(response, golds, answer_type):
    for gold in golds:
        assert acc(response, gold, answer_type) == 0.0, (response, gold)


def test_the_single_answers_beside_issue_28_hedges_still_score_one():
    """The twins of the cases above: the same formats committing to one candidate."""
    assert acc(r"\boxed{A.}", "A", "choice") == 1.0
    assert acc(r"\boxed{A: the triangle}", "A", "choice") == 1.0
    assert acc("The answer is A, since B is too small", "A", "choice") == 0.0  # names B: strict
    assert acc("The answer is A, since the side is too small", "A", "choice") == 1.0
    assert acc(r"\boxed{Yes. It is.}", "yes", "yesno") == 1.0
    assert acc("Looking at the options\nA is too big\nso the answer is\nD", "D", "choice") == 1.0
    assert acc("D", "D", "choice") == 1.0
    assert acc(r"\boxed{3 cm}", "3", "number") == 1.0
    assert acc(r"\boxed{12 million}", "12", "relaxed") == 1.0
