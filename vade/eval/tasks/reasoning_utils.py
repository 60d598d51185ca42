"""lmms-eval hooks of the reasoning-length task variants (ChartQA, ScienceQA-IMG).

lmms-eval's own scorers compare the whole response with the answer, which suits a model told to
answer in one word. A model that reasons first ends with ``\\boxed{answer}`` (the prompt asks for
it, as in training); these hooks score that final answer with the training reward's verdict
(``vade.eval.answers``: one answer semantics for reward and evaluation).
"""

from __future__ import annotations

from vade.eval.answers import chartqa_scores, scienceqa_scores
from vade.eval.pixels import limited


def chartqa_doc_to_visual(doc):
    return limited([doc["image"].convert("RGB")])


def sqa_doc_to_visual(doc):
    return [] if doc["image"] is None else limited([doc["image"].convert("RGB")])


def chartqa_reasoning_process_results(doc, results):
    return chartqa_scores(doc, results[0] if results else "")


def sqa_reasoning_process_results(doc, results):
    return scienceqa_scores(doc, results[0] if results else "")
