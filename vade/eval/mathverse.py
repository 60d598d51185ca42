"""MathVerse scored as its official pipeline scores it (ZrrSkywalker/MathVerse, ``evaluation/``).

Two judge steps with the official prompts (``vade.eval.official``: ``evaluation/prompts.py``
at a pinned commit, never a paraphrase):

1. Extraction (``extract_answer_s1.py``): the response cut to its last 30 words (the README's
   ``--trunk_response 30``), then the judge writes the final answer (``demo_prompt_extract``);
   a leading "Extracted Answer: " that the judge repeats is removed, as the official code does.
2. Match (``score_answer_s2.py``): the judge compares the extraction with the standard answer
   for the version's own ``question`` (empty for Vision Only, as the official script sends it)
   and replies 0 or 1 (``demo_prompt_score``), with the official 256-token budget. The reply
   must be a clean verdict (``judge_client.verdict``: re-asked, as the official loop re-asks,
   then a judge error, never a pass).

MathVision's judge variant (``vade.eval.mathvision``) uses the same two steps.
"""

from __future__ import annotations

from vade.eval.judge_client import JudgeError, chat, verdict
from vade.eval.official import mathverse_extract_prompt, mathverse_match_prompt, trunk_response

__all__ = ["extract", "match", "score_response"]


def extract(response: str) -> str:
    """Step 1; "" when the judge cannot be reached (counted by the relay)."""
    try:
        reply = chat(mathverse_extract_prompt(trunk_response(response)))
    except JudgeError:
        return ""
    return reply.replace("Extracted Answer: ", "").strip()


def match(question: str, answer: str, extraction: str) -> int | None:
    """Step 2: 1 consistent, 0 not, None a judge error (see ``judge_client.verdict``)."""
    return verdict(mathverse_match_prompt(question, answer, extraction))


def score_response(question: str, answer: str, response: str) -> dict[str, object]:
    """Both steps for one response; a judge error scores 0 and is marked."""
    extraction = extract(response.strip())
    found = match(question, str(answer), extraction)
    return {"extraction": extraction, "verdict": found, "correct": float(found == 1),
            "judge_error": float(found is None)}
