"""lmms-eval hooks of our judged math tasks: MathVista, MathVerse, MathVision (two variants).

Each task scores an item as its benchmark's official pipeline does (``vade.eval.mathvista``,
``vade.eval.mathverse``, ``vade.eval.mathvision``); the judge is the endpoint ``vade evaluate``
puts in the environment. Metrics: ``accuracy`` (0/1 per item, mean) and ``judge_error`` (1 when
the judge gave no clean verdict: scored 0 and counted, never a pass).
"""

from __future__ import annotations

from vade.eval.mathverse import score_response
from vade.eval.mathvision import judge_question, score_judge, score_rule
from vade.eval.mathvista import score_doc
from vade.eval.pixels import limited

POST_PROMPT = "\nThink step by step, then give the final answer in \\boxed{}."


def _post(kwargs) -> str:
    return (kwargs or {}).get("post_prompt", POST_PROMPT)


def decoded_image_to_visual(doc):
    return limited([doc["decoded_image"].convert("RGB")])


def mathverse_doc_to_visual(doc):
    image = doc.get("image")
    return limited([image.convert("RGB")]) if hasattr(image, "convert") else []


def mathvista_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["query"] + _post(lmms_eval_specific_kwargs)


def mathverse_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The official query of the task's setting (``query_wo``: the primary metric; ``query_cot``:
    the CoT setting), verbatim unless the task adds a post prompt."""
    kwargs = lmms_eval_specific_kwargs or {}
    return doc[kwargs.get("query_type", "query_wo")] + kwargs.get("post_prompt", "")


def mathvision_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return judge_question(doc) + _post(lmms_eval_specific_kwargs)


def mathvista_process_results(doc, results):
    return {"accuracy": score_doc(doc, results[0] if results else "")["correct"],
            "judge_error": 0.0}


def mathverse_process_results(doc, results):
    # the version's own question (empty for Vision Only), as score_answer_s2.py sends it
    scored = score_response(str(doc.get("question") or ""), str(doc["answer"]),
                            results[0] if results else "")
    return {"accuracy": scored["correct"], "judge_error": scored["judge_error"]}


def mathvision_judge_process_results(doc, results):
    scored = score_judge(doc, results[0] if results else "")
    return {"accuracy": scored["correct"], "judge_error": scored["judge_error"]}


def mathvision_rule_process_results(doc, results):
    return {"accuracy": score_rule(doc, results[0] if results else ""), "judge_error": 0.0}
