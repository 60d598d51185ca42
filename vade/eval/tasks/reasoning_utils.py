"""Answer extraction for the reasoning-length task variants (ChartQA, ScienceQA-IMG).

lmms-eval's own scorers compare the whole response with the answer, which suits a model told to
answer in one word. A model that reasons first ends with ``\\boxed{answer}`` (the prompt asks for
it, as in training); these hooks pass only that final answer, read and normalised as the training
reward reads it (``vade.eval.answers``), to lmms-eval's scorers.
"""

from __future__ import annotations

from lmms_eval.tasks.chartqa.utils import chartqa_process_results
from lmms_eval.tasks.scienceqa.utils import sqa_process_results

from vade.eval.answers import chartqa_answer, scienceqa_answer


def chartqa_reasoning_process_results(doc, results):
    return chartqa_process_results(doc, [chartqa_answer(results[0], doc["answer"])])


def sqa_reasoning_process_results(doc, results):
    return sqa_process_results(doc, [scienceqa_answer(results[0], len(doc["choices"]))])
