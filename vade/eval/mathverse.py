"""MathVerse scored as its official pipeline scores it (ZrrSkywalker/MathVerse, ``evaluation/``).

Two judge steps, each ours, written from what the official code does:

1. Extraction (``extract_answer_s1.py``): the judge reads the whole response and writes the
   final answer only, or ``null`` when there is none (``EXTRACTION_PROMPT``, worked examples of
   an interval, an option letter, a two-part answer, no answer, a rounded value, an equation).
   A leading "Extracted Answer:" that the judge repeats is removed, as the official code does.
2. Match (``score_answer_s2.py``): the judge compares the extraction with the standard answer
   for the question (``question_for_eval``, which lists the options of a multiple-choice item)
   and replies 0 or 1 (``MATCH_PROMPT``: consistent only when the extraction completely matches;
   for free-form answers the same meaning in another form counts, 0.5 m and 50 cm). The reply
   must be a clean verdict (``judge_client.verdict``: re-asked, as the official loop re-asks,
   then a judge error, never a pass).

MathVision's judge variant (``vade.eval.mathvision``) uses the same two steps.
"""

from __future__ import annotations

__all__ = ["EXTRACTION_PROMPT", "MATCH_PROMPT", "extract", "match", "score_response"]

EXTRACTION_PROMPT = """You are given the response of a model to a math problem ('Model \
response'). Extract the model's final answer as 'Extracted Answer' and output it directly, with \
no explanation. If the response gives no answer, output null.

1.
Model response: 'Rounding to two decimals, the interval where f is positive is:\\n\\n(-3, 2)'
Extracted Answer: (-3, 2)

2.
Model response: 'Comparing the slopes, the statement that holds is:\\n\\nC. The lines are \
parallel.'
Extracted Answer: C

3.
Model response: 'From the graph, the domain is [-2, 4) and the range is (0, 5].'
Extracted Answer: Domain: [-2, 4)\\nRange: (0, 5]

4.
Model response: 'The figure does not show the length of the base, so the height cannot be \
found.'
Extracted Answer: null

5.
Model response: 'Using the cosine rule, x = 7.9 / cos(35°), so x is approximately 9.6 cm.'
Extracted Answer: 9.6

6.
Model response: 'Putting the intercepts together, the line is y = -2x + 3.'
Extracted Answer: y = -2x + 3"""

MATCH_PROMPT = """Below are two answers to a math question: [Standard Answer] is the correct \
answer and [Model_answer] is the answer extracted from a model's response. Decide whether they \
are consistent. They are consistent only when [Model_answer] completely matches [Standard \
Answer]; for a question that is not multiple choice, the same value written another way also \
counts (for example 0.5m and 50cm). Reply 1 if they are consistent and 0 if not, and nothing else.

[Question]: Write the solution set of the inequality shown on the number line in interval \
notation.
[Standard Answer]: [-1,3)
[Model_answer] : (-1, 3)
Judgement: 0

[Question]: Is the relation shown a function?\\nChoices:\\nA:Yes\\nB:No
[Standard Answer]: B
[Model_answer] : No
Judgement: 1

[Question]: Find the perimeter of the square with side 2.5 m.
[Standard Answer]: 10 m
[Model_answer] : 1000 cm
Judgement: 1

[Question]: Which expression equals the shaded area?\\nChoices:\\nA. 2\\pi r\\nB. \\pi r^2
[Standard Answer]: B
[Model_answer] : A
Judgement: 0

[Question]: {question}
[Standard Answer]: {answer}
[Model_answer] : {extraction}
Judgement: """


def extract(response: str) -> str:
    """Step 1; "" when the judge cannot be reached (counted by the relay)."""
    from vade.eval.judge_client import JudgeError, chat

    prompt = f"{EXTRACTION_PROMPT}\n\nModel response: '{response}'\nExtracted Answer: "
    try:
        reply = chat(prompt)
    except JudgeError:
        return ""
    return reply.replace("Extracted Answer: ", "").strip()


def match(question: str, answer: str, extraction: str) -> int | None:
    """Step 2: 1 consistent, 0 not, None a judge error (see ``judge_client.verdict``)."""
    from vade.eval.judge_client import verdict

    return verdict(MATCH_PROMPT.replace("{question}", question).replace("{answer}", answer)
                   .replace("{extraction}", extraction))


def score_response(question: str, answer: str, response: str) -> dict[str, object]:
    """Both steps for one response; a judge error scores 0 and is marked."""
    extraction = extract(response.strip())
    found = match(question, str(answer), extraction)
    return {"extraction": extraction, "verdict": found, "correct": float(found == 1),
            "judge_error": float(found is None)}
