"""Golden cases of the judged benchmarks, scored as their official code scores them.

Real: our MathVista / MathVerse / MathVision scorers (``vade.eval.mathvista``, ``.mathverse``,
``.mathvision``), the judge client and its strict verdict parsing (``vade.eval.judge_client``),
HTTP to a server on 127.0.0.1. Stand-in: the judge model, a scripted OpenAI-compatible server
(``judge_stub.ScriptedJudge``) returning fixed extractions and verdicts, one of them malformed.
Each expected verdict was worked out by hand from the official code (lupantech/MathVista
``evaluation/``, ZrrSkywalker/MathVerse ``evaluation/``, mathllm/MATH-V ``evaluation/``).
"""

from __future__ import annotations

import pytest
from judge_stub import ScriptedJudge
from official_stub import stage_stand_in

from vade.eval import judge_client, mathverse, mathvision, mathvista


@pytest.fixture
def judge(monkeypatch, tmp_path):
    """Point the client at a scripted judge (tests set ``judge.rules``), with MathVerse's
    prompt file staged (a stand-in: ``official_stub``)."""
    stage_stand_in(tmp_path / "official", monkeypatch)
    stub = ScriptedJudge([])
    monkeypatch.setenv("OPENAI_API_URL", stub.url)
    monkeypatch.setenv("MODEL_VERSION", "judge")
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    judge_client.STATS.reset()
    yield stub
    stub.close()


def vista(answer_type, answer, *, choices=None, precision=None):
    mc = choices is not None
    return {"question_type": "multi_choice" if mc else "free_form", "answer_type": answer_type,
            "answer": answer, "choices": choices, "precision": precision,
            "query": "Hint: the hint of this item.\nQuestion: QID"}


R = "Let me reason about the figure step by step ... so the result follows. "
# (item, response, the judge's scripted extraction or None (quick path: no judge), verdict)
MATHVISTA = [
    (vista("integer", "5"), "5", None, 1.0),
    (vista("integer", "5"), "6", None, 0.0),
    (vista("float", "1.5", precision=1), "1.5", None, 1.0),
    (vista("text", "blue", choices=["red", "blue"]), "blue", None, 1.0),
    (vista("text", "5", choices=["3", "5"]), R + "(B)", "B", 1.0),
    (vista("text", "5", choices=["3", "5"]), R + "It is A: 3", "(A) 3", 0.0),
    (vista("integer", "3"), R + "about 3.7", "3.7", 1.0),               # truncated
    (vista("float", "1.54", precision=2), R + "1.54", "1.54 ", 1.0),
    (vista("float", "1.5", precision=1), R + "1.56", "1.56", 0.0),    # rounds to 1.6
    (vista("list", "[2007, 2008]"), R + "2007 and 2008", "[2007, 2008]", 1.0),
    (vista("list", "[2007, 2008]"), R + "2007 and 2008", "[2007,2008]", 0.0),
    (vista("text", "1", choices=["1", "2"]), R + "A or B", "A or B", 1.0),  # hedge: nearest
    (vista("text", "2", choices=["1", "2"]), R + "A or B", "A or B", 0.0),
    (vista("integer", "4"), R + "cannot tell", "I cannot determine it", 0.0),  # no number
    (vista("integer", "4"), R + "nothing", "", 0.0),                   # empty extraction
    (vista("integer", "4"), "", None, 0.0),                            # empty response
    (vista("float", "50.0", precision=1), R + "50%", "50%", 0.0),
    (vista("integer", "1200"), R + "1,200", "1,200", 0.0),
]


@pytest.mark.parametrize("item, response, extraction, verdict", MATHVISTA)
def test_mathvista_golden(judge, item, response, extraction, verdict):
    judge.rules = [("QID", extraction if extraction is not None else "UNEXPECTED")]
    scored = mathvista.score_doc(item, response)
    assert scored["correct"] == verdict
    if extraction is None:  # the official quick path: the judge is not asked
        assert judge.prompts == []
    else:
        assert len(judge.prompts) == 1
        prompt = judge.prompts[0]
        assert "Hint: the hint of this item.\nQuestion: QID" in prompt
        assert prompt.endswith(f"{response.strip()}\n\nExtracted answer: ")
        assert scored["extraction"] == extraction.strip()  # the reply, stripped


def mathverse_rules(extraction, verdict):
    return [("Extracted Answer: ", f"Extracted Answer: {extraction}"), ("[Model_answer]", verdict)]


# (question, gold, scripted extraction, scripted verdict reply(ies), correct, judge error)
MATHVERSE = [
    ("Find x.", "5", "5", "1", 1.0, 0.0),
    ("Find x.", "5", "6", "0", 0.0, 0.0),
    ("Find x.", "5", "5", "Judgement: 1", 1.0, 0.0),
    ("Find x.", "5", "5", "1.", 1.0, 0.0),
    ("Find x.", "5", "5", " 0 \n", 0.0, 0.0),
    ("Find x.", "10 m", "1000 cm", "1", 1.0, 0.0),
    ("Which?\nChoices:\nA:yes\nB:no", "B", "B", "1", 1.0, 0.0),
    ("Which?\nChoices:\nA:yes\nB:no", "B", "A or B", "0", 0.0, 0.0),   # hedge: the judge's 0
    ("Find x.", "5", "null", "0", 0.0, 0.0),                            # no answer
    # malformed verdicts: re-asked, then a judge error scored 0 (lmms-eval would pass "1 ...")
    ("Find x.", "5", "5", "1 (they are consistent)", 0.0, 1.0),
    ("Find x.", "5", "5", "The answer is 1", 0.0, 1.0),
    ("Find x.", "5", "5", "10", 0.0, 1.0),
    ("Find x.", "5", "5", "yes", 0.0, 1.0),
    ("Find x.", "5", "5", "", 0.0, 1.0),
    ("Find x.", "5", "5", ["I think so", "1"], 1.0, 0.0),               # re-asked, then clean
    ("Find x.", "5", "5", ["?", "??", "0"], 0.0, 0.0),
]


@pytest.mark.parametrize("question, gold, extraction, reply, correct, error", MATHVERSE)
def test_mathverse_golden(judge, question, gold, extraction, reply, correct, error):
    judge.rules = mathverse_rules(extraction, reply)
    scored = mathverse.score_response(question, gold, R + " the end")
    assert (scored["correct"], scored["judge_error"]) == (correct, error)
    assert scored["extraction"] == extraction  # the repeated "Extracted Answer: " is removed
    extract_prompt, match_prompt = judge.prompts[0], judge.prompts[1]
    assert extract_prompt.endswith(f"Model response: '{R} the end'\nExtracted Answer: ")
    assert match_prompt.endswith(f"[Question]: {question}\n[Standard Answer]: {gold}\n"
                                 f"[Model_answer] : {extraction}\nJudgement:")  # stripped
    asked = len(judge.prompts) - 1
    assert asked == (judge_client.RETRIES + 1 if error else
                     (len(reply) if isinstance(reply, list) else 1))
    assert judge_client.STATS.malformed == error


# (response, gold, options, verdict) -- mathllm/MATH-V's rules
MATHVISION_RULE = [
    (r"so \boxed{5}", "5", [], 1.0),
    (r"so \boxed{6}", "5", [], 0.0),
    ("Checking each option, the answer is B.", "B", ["1", "2"], 1.0),
    ("Checking each option, it must be (C).", "C", ["1", "2", "3"], 1.0),
    (r"\boxed{0.5}", r"\frac{1}{2}", [], 1.0),          # 0.5 is rewritten as \frac{1}{2}
    (r"\boxed{\frac{1}{3}}", "0.33", [], 1.0),          # equal to 2 decimals
    (r"\boxed{0.04}", "0", [], 0.0),
    (r"\boxed{12\text{ cm}}", "12", [], 0.0),           # units other than km stay: unequal
    (r"\boxed{90^\circ}", "90", [], 1.0),
    (r"\boxed{triangle}", "B", ["square", "triangle"], 1.0),  # the gold option's text
    (r"\boxed{A or B}", "A", ["1", "2"], 0.0),
    (r"\boxed{x=3}", "3", [], 1.0),                     # the value after "="
    (r"\boxed{(1, 2)}", "(1,2)", [], 1.0),
    ("The answer is 7", "7", [], 1.0),                  # no box: the number after "is "
    (r"\boxed{3/4}", "0.75", [], 1.0),
    ("", "5", [], 0.0),
    (r"first \boxed{1}, then \boxed{2}", "2", [], 1.0),  # the last box
    (r"first \boxed{1}, then \boxed{2}", "1", [], 0.0),
    (r"\boxed{\sqrt{3}}", r"\sqrt{3}", [], 1.0),
    (r"\boxed{1.73}", r"\sqrt{3}", [], 1.0),  # sqrt(3) is 1.73 to 2 decimals, computed without eval
    (r"\boxed{3,2,1}", "1,3,2", [], 0.0),    # a list, never a set
    (r"\boxed{PTT}", "TTP", [], 0.0),        # letters are symbols, never a commutative product
    (r"\boxed{A}", "B", ["1", "$e+d=a$"], 0.0),
    (r"\boxed{--3/4}", "0.75", [], 1.0),     # no crash; latex2sympy reads --3/4 as 3/4
    (r"\boxed{\operatorname{exit}(1)}", "1", [], 0.0),  # never called
    (r"\boxed{2^{10^{10}}}", "1", [], 0.0),  # too large to compute: unequal, at once
    # an expression followed by unit letters: latex2sympy2 1.9.1 (the official run) reads the
    # letters as symbols, so no value; 1.5.4 dropped them and these were accepted (issue 49)
    (r"\boxed{\pi r}", r"\pi", [], 0.0),
    (r"\boxed{2+3cm}", "5", [], 0.0),
    (r"\boxed{3\sqrt{2} cm}", r"3\sqrt{2}", [], 0.0),
    (r"\boxed{\frac{1}{2} m}", "0.5", [], 0.0),
    (r"\boxed{2\pi}", "6.28", [], 1.0),       # commands are not symbols
    (r"\boxed{\alpha=30}", "30", [], 1.0),
]


@pytest.mark.parametrize("response, gold, options, verdict", MATHVISION_RULE)
def test_mathvision_rule_golden(response, gold, options, verdict):
    assert mathvision.score_rule({"answer": gold, "options": options}, response) == verdict


def test_mathvision_judge_variant_shows_the_options_and_reads_verdicts_strictly(judge):
    doc = {"question": "Which shape has 3 sides?", "options": ["square", "triangle"],
           "answer": "B"}
    judge.rules = mathverse_rules("triangle", "1")
    assert mathvision.score_judge(doc, R + "a triangle")["correct"] == 1.0
    assert "[Question]: Which shape has 3 sides?\nChoices:\nA. square\nB. triangle\n" \
        "[Standard Answer]: B\n[Model_answer] : triangle" in judge.prompts[1]
    judge.prompts.clear()
    judge.rules = mathverse_rules("triangle", "1 because B is a triangle")
    scored = mathvision.score_judge(doc, R + "a triangle")
    assert (scored["correct"], scored["judge_error"]) == (0.0, 1.0)
    free = {"question": "Find x.", "options": [], "answer": "4"}
    assert mathvision.judge_question(free) == "Find x."


def test_an_unreachable_judge_is_an_error_not_a_pass(monkeypatch, tmp_path):
    stage_stand_in(tmp_path, monkeypatch)
    monkeypatch.setenv("OPENAI_API_URL", "http://127.0.0.1:9/v1")  # nothing listens on 9
    monkeypatch.setenv("MODEL_VERSION", "judge")
    monkeypatch.setattr(judge_client.time, "sleep", lambda s: None)
    scored = mathverse.score_response("Find x.", "5", "5")
    assert (scored["correct"], scored["verdict"]) == (0.0, None)
    assert mathvista.extract(R + "5", vista("integer", "5")) == ""


@pytest.mark.parametrize("reply, parsed", [
    ("1", 1), ("0", 0), ("Judgement: 1", 1), ("judgment:0", 0), ("1.", 1), ("\n0\n", 0),
    ("10", None), ("1 0", None), ("score: 1", None), ("[1]", None), ("", None), ("yes", None),
])
def test_verdict_parsing_is_strict(reply, parsed):
    assert judge_client.parse_verdict(reply) == parsed


def test_malformed_verdicts_count_toward_the_judges_error_rate(judge, monkeypatch):
    """Through the counting relay, as in a job: the third item gets no clean verdict, 1 error in
    8 judge calls (12.5%) exceeds max_error_fraction 0.1, and the job's check refuses to write
    scores (before the fix, lmms-eval counted a reply containing "1" as a pass)."""
    from vade.eval.config import JudgeConfig
    from vade.eval.judge import JudgeHandle, JudgeRelay

    relay = JudgeRelay(judge.url)
    monkeypatch.setenv("OPENAI_API_URL", relay.url)
    cfg = JudgeConfig.from_dict({"mode": "external", "url": judge.url, "served_name": "judge",
                                 "max_error_fraction": 0.1})
    handle = JudgeHandle(cfg, {"OPENAI_API_KEY": "EMPTY"}, relay=relay)
    try:
        judge.rules = mathverse_rules("5", "1")
        for _ in range(2):
            assert mathverse.score_response("Find x.", "5", "5")["correct"] == 1.0
        handle.check(0)  # 4 calls, none failed
        judge.rules = mathverse_rules("5", "maybe")
        assert mathverse.score_response("Find x.", "5", "5")["judge_error"] == 1.0
        # calls: 4 + 1 extraction + (RETRIES + 1) verdict tries = 8; errors: 1 item
        assert relay.calls == 5 + judge_client.RETRIES + 1
        with pytest.raises(RuntimeError, match=r"judge failed on 1 of 8 calls .*not a verdict"):
            handle.check(1)
    finally:
        relay.close()


def test_mathverse_extraction_sees_only_the_last_30_words(judge):
    """The official ``--trunk_response 30``: the judge extracts from the response's last 30
    words. Before issue 49 no test failed when the truncation was removed."""
    words = [f"w{i}" for i in range(40)]
    judge.rules = mathverse_rules("w39", "1")
    assert mathverse.score_response("Find x.", "w39", " ".join(words))["correct"] == 1.0
    assert judge.prompts[0].endswith(f"Model response: '{' '.join(words[10:])}'\n"
                                     "Extracted Answer: ")


@pytest.mark.parametrize("question, question_for_eval", [
    ("", "Find x (the Vision Only version's text for the judge)."),
    ("As shown, AB = 5. Find x.", "In the isosceles triangle, find x."),
])
def test_the_mathverse_hook_sends_the_versions_own_question(judge, question, question_for_eval):
    """``score_answer_s2.py`` sends the version's ``question`` (empty for Vision Only), not
    ``question_for_eval``. Before issue 49 no test failed when the hook sent the other."""
    from vade.eval.tasks.judged_utils import mathverse_process_results

    judge.rules = mathverse_rules("5", "1")
    doc = {"question": question, "question_for_eval": question_for_eval, "answer": "5"}
    assert mathverse_process_results(doc, [R + "so 5"]) == {"accuracy": 1.0, "judge_error": 0.0}
    from vade.eval.official import mathverse_match_prompt

    assert judge.prompts[-1] == mathverse_match_prompt(question, "5", "5")
    assert question_for_eval not in judge.prompts[-1]
