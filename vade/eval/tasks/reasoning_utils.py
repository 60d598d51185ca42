"""lmms-eval hooks of the reasoning-length task variants (ChartQA, ScienceQA-IMG).

A model that reasons first ends with ``\\boxed{answer}`` (the prompt asks for it, as in
training). Each item gets two named numbers:

* the table number, lmms-eval's official metric (``chartqa.utils.relaxed_correctness``,
  ``scienceqa.utils.sqa_process_results``, loaded from lmms-eval's own files) on the final ``\\boxed{}`` answer (lmms-eval's
  own ``extract_boxed_answer``), or on the whole response when there is no box, as lmms-eval
  scores a model that answers directly;
* ``*_reward``: the training reward's verdict (``vade.eval.answers``: one answer semantics for
  reward and evaluation), which also accepts "50%" for 50, "1,200", units and option texts.
"""

from __future__ import annotations

from vade.eval.answers import chartqa_scores, scienceqa_scores
from vade.eval.official import lmms_eval_task_file
from vade.eval.pixels import limited


def chartqa_doc_to_visual(doc):
    return limited([doc["image"].convert("RGB")])


def sqa_doc_to_visual(doc):
    return [] if doc["image"] is None else limited([doc["image"].convert("RGB")])


def final_answer(response: str) -> str:
    """The final ``\\boxed{}`` content (lmms-eval's extractor), else the whole response."""
    extract = lmms_eval_task_file("_task_utils/reasoning_utils.py").extract_boxed_answer
    return extract(response) or response


def chartqa_reasoning_process_results(doc, results):
    official_hook = lmms_eval_task_file("chartqa/utils.py").chartqa_process_results
    response = results[0] if results else ""
    official = official_hook(doc, [final_answer(response)])
    reward = chartqa_scores(doc, response)
    return {**official, **{f"{k}_reward": v for k, v in reward.items()}}


def sqa_reasoning_process_results(doc, results):
    official_hook = lmms_eval_task_file("scienceqa/utils.py").sqa_process_results
    response = results[0] if results else ""
    official = official_hook(doc, [final_answer(response)])
    return {**official, "exact_match_reward": scienceqa_scores(doc, response)["exact_match"]}
