"""Answer extraction for the reasoning-length task variants (ChartQA, ScienceQA-IMG).

lmms-eval's own scorers compare the whole response with the answer, which suits a model told to
answer in one word. A model that reasons first ends with ``\\boxed{answer}`` (the prompt asks for
it, as in training); these hooks pass only that final answer to lmms-eval's scorers.
"""

from __future__ import annotations

from lmms_eval.tasks.chartqa.utils import chartqa_process_results
from lmms_eval.tasks.scienceqa.utils import sqa_process_results


def final_answer(response: str) -> str:
    """The content of the last ``\\boxed{...}`` (nested braces allowed), else the last line."""
    start = response.rfind("\\boxed{")
    if start >= 0:
        i, depth = start + len("\\boxed{"), 1
        for j in range(i, len(response)):
            depth += {"{": 1, "}": -1}.get(response[j], 0)
            if depth == 0:
                return response[i:j].strip()
    lines = [line.strip() for line in response.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def chartqa_reasoning_process_results(doc, results):
    return chartqa_process_results(doc, [final_answer(results[0])])


def sqa_reasoning_process_results(doc, results):
    return sqa_process_results(doc, [final_answer(results[0])])
