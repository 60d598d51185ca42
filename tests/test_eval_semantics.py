"""One answer semantics: a response earns the same as a training reward and in evaluation, except
where a benchmark's official rule says otherwise (``vade.eval.semantics.DIFFERENCES``; for ChartQA
and ScienceQA the table number is lmms-eval's official metric, the reward's verdict beside it).

Real: the reward (``vade.rewards``), the evaluation scorers of ChartQA and ScienceQA
(``vade.eval.answers`` through the shipped lmms-eval hooks), the local tasks' scorer, and the rule
scorers of MathVista and MathVision. Nothing stands in. Verdicts are worked out by hand.
"""

from __future__ import annotations

import importlib.util

import pytest

from vade.eval import local_task
from vade.eval.answers import chartqa_scores, scienceqa_scores
from vade.eval.semantics import DIFFERENCES, official_verdict
from vade.eval.taskgen import SHIPPED_TASKS
from vade.rewards import compute_score, score_one


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("ru", SHIPPED_TASKS / "reasoning_utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def relaxed_correctness():
    """lmms-eval's own ChartQA rule (its task file, as installed)."""
    from vade.eval.official import lmms_eval_task_file

    return lmms_eval_task_file("chartqa/utils.py").relaxed_correctness


# ChartQA (relaxed): (response, gold, the reward's verdict, lmms-eval's official relaxed accuracy
# on the box's raw contents, both by hand)
RELAXED = [
    (r"\boxed{50\%}", "0.5", 1.0, 0.0),     # a percent read as the fraction
    (r"\boxed{50\%}", "50", 1.0, 0.0),      # ... or as the number ChartQA writes
    (r"\boxed{62\%}", "62", 1.0, 0.0),
    (r"\boxed{5 cm}", "5", 1.0, 0.0),        # a unit word
    (r"\boxed{12 million}", "12", 1.0, 0.0),
    (r"\boxed{1,200}", "1200", 1.0, 0.0),    # thousands separator
    (r"\boxed{\$12}", "12", 1.0, 0.0),
    (r"\boxed{0.5}", "1/2", 1.0, 0.0),       # a fraction gold
    (r"\boxed{0.04}", "0", 0.0, 0.0),        # gold 0 needs an exact 0
    (r"\boxed{0}", "0", 1.0, 1.0),
    (r"\boxed{104.9}", "100", 1.0, 1.0),     # inside 5%
    (r"\boxed{105.1}", "100", 0.0, 0.0),
    (r"\boxed{3 or so}", "3", 0.0, 0.0),     # a hedged number
    (r"\boxed{\text{Yes}}", "Yes", 1.0, 0.0),
    (r"\boxed{Yes}", "Yes", 1.0, 1.0),
    (r"\boxed{-12}", "12", 0.0, 0.0),
    ("no answer in here\nat all", "12", 0.0, 0.0),
    ("12", "12", 1.0, 1.0),                 # no box: the whole response, as lmms-eval reads it
]


@pytest.mark.parametrize("response, gold, verdict, official", RELAXED)
def test_chartqa_evaluation_and_reward_agree(hooks, relaxed_correctness, response, gold, verdict,
                                             official):
    """The table number is lmms-eval's official metric (its own rule on the box's raw contents,
    which counts right answers spelled with a percent, a unit or a separator wrong: the table
    keeps it, comparable with published numbers); the reward's verdict rides beside it."""
    raw = response[len("\\boxed{"):-1] if response.startswith("\\boxed{") else response
    assert float(relaxed_correctness(raw, gold)) == official
    reward = compute_score("chartqa", response, gold)["acc"]
    doc = {"type": "human_test", "answer": gold}
    evaluation = hooks.chartqa_reasoning_process_results(doc, [response])
    assert reward == verdict
    assert evaluation == {"relaxed_overall": official, "relaxed_human_split": official,
                          "relaxed_overall_reward": verdict,
                          "relaxed_human_split_reward": verdict}
    augmented = chartqa_scores({"type": "augmented_test", "answer": gold}, response)
    assert augmented == {"relaxed_overall": verdict, "relaxed_augmented_split": verdict}


CHOICES = ["a square", "a triangle", "a circle"]
# ScienceQA (choice): (response, gold index, the reward's verdict, lmms-eval's official exact match
# on the box's raw contents, both by hand)
CHOICE = [
    (r"\boxed{B}", 1, 1.0, 1.0),
    (r"\boxed{(B)}", 1, 1.0, 0.0),
    (r"\boxed{B. a triangle}", 1, 1.0, 1.0),  # "X." then text: the letter X
    (r"\boxed{a triangle}", 1, 1.0, 0.0),     # the option's text instead of its letter
    (r"\boxed{a triangle}", 0, 0.0, 0.0),
    (r"\boxed{A or B}", 1, 0.0, 0.0),         # hedges
    (r"\boxed{A. B. C.}", 1, 0.0, 0.0),
    ("The answer is B, but C is possible", 1, 0.0, 0.0),
    (r"\boxed{D}", 0, 0.0, 0.0),              # no such option
    ("A\nB\nC", 2, 0.0, 0.0),                 # a bare list of the options
    ("so the answer is (C).", 2, 1.0, 0.0),
]


@pytest.mark.parametrize("response, index, verdict, official", CHOICE)
def test_scienceqa_evaluation_and_reward_agree(hooks, response, index, verdict, official):
    gold = "ABC"[index]
    reward = score_one(response, gold, "choice", {"choices": CHOICES})["acc"]
    doc = {"choices": CHOICES, "answer": index}
    assert reward == verdict
    assert hooks.sqa_reasoning_process_results(doc, [response]) == {
        "exact_match": official, "exact_match_reward": verdict}
    assert scienceqa_scores(doc, response) == {"exact_match": verdict}


@pytest.mark.parametrize("response, gold, answer_type, verdict", [
    *[(r, g, "relaxed", v) for r, g, v, _ in RELAXED],
    (r"\boxed{\frac{1}{2}}", "0.5", "math", 1.0),
    (r"\boxed{2^{1/2}}", r"\sqrt{2}", "math", 1.0),
    (r"\boxed{Yes. No.}", "yes", "yesno", 0.0),
    (r"\boxed{No}", "no", "yesno", 1.0),
    (r"\boxed{7}", "7", "number", 1.0),
])
def test_local_tasks_score_with_the_reward(response, gold, answer_type, verdict):
    doc = {"data_source": "synthetic/x", "reward_model": {"ground_truth": gold},
           "extra_info": {"answer_type": answer_type, "index": 3}}
    assert local_task.process_results(doc, [response]) == {"acc": verdict}
    assert score_one(response, gold, answer_type)["acc"] == verdict


def test_scienceqa_gold_outside_the_choices_is_named():
    with pytest.raises(ValueError, match="answer index 5 is not one of its 3 choices"):
        scienceqa_scores({"choices": CHOICES, "answer": 5}, r"\boxed{A}")


@pytest.mark.parametrize("d", DIFFERENCES, ids=lambda d: f"{d.benchmark}:{d.answer}->{d.gold}")
def test_each_named_difference_is_real_and_goes_the_stated_way(d):
    """The reward's verdict and the official rule's verdict on the table's case are the ones
    stated (worked out by hand from the official code), and they differ."""
    info = {"choices": list(d.item["choices"])} if d.answer_type == "choice" else None
    reward = score_one(rf"\boxed{{{d.answer}}}", d.gold, d.answer_type, info)["acc"]
    assert (reward, official_verdict(d)) == (d.reward, d.evaluation)
    assert d.reward != d.evaluation
