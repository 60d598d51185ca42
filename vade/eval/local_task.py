"""lmms-eval hooks for the local tasks over the synthetic held-out sets (verl parquet rows).

The generated task YAMLs name these functions (``!function vade.eval.local_task.<name>``;
lmms-eval falls back to an absolute import). A document is one verl row as ``datasets`` reads
the parquet file: ``prompt`` (list of {role, content}), ``images`` (list of {bytes, path}),
``data_source``, ``reward_model.ground_truth``, ``extra_info`` (answer_type, index, ...).
Scoring calls ``vade.rewards.compute_score``, the reward the policy was trained with, so an
evaluation score and a training reward mean the same thing.
"""

from __future__ import annotations

import io
from typing import Any

from vade import rewards

__all__ = ["doc_to_target", "doc_to_text", "doc_to_visual", "process_results"]

IMAGE_TOKEN = "<image>"


def _where(doc: dict[str, Any]) -> str:
    info = doc.get("extra_info") or {}
    return f"row index={info.get('index', '?')} ({doc.get('data_source', '?')})"


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The row's images as RGB PIL images (lmms-eval places them before the text)."""
    from PIL import Image, UnidentifiedImageError  # lazy: pillow, the cpu extra

    out = []
    for i, img in enumerate(doc.get("images") or []):
        data = img.get("bytes") if isinstance(img, dict) else img
        if hasattr(data, "convert"):  # already a PIL image (datasets Image feature)
            out.append(data.convert("RGB"))
            continue
        if not data:
            raise ValueError(f"{_where(doc)}: image {i} has no bytes")
        try:
            out.append(Image.open(io.BytesIO(data)).convert("RGB"))
        except (UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"{_where(doc)}: image {i} cannot be decoded: {exc}") from None
    return out


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict | None = None) -> str:
    """The user turn(s) of the training prompt without ``<image>`` markers (images go first)."""
    turns = [m["content"] for m in doc.get("prompt") or [] if m.get("role") == "user"]
    if not turns:
        raise ValueError(f"{_where(doc)}: prompt has no user turn")
    return "\n".join(t.replace(IMAGE_TOKEN, "").strip() for t in turns)


def doc_to_target(doc: dict[str, Any]) -> str:
    try:
        return str(doc["reward_model"]["ground_truth"])
    except (KeyError, TypeError):
        raise ValueError(f"{_where(doc)}: row has no reward_model.ground_truth") from None


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """``acc`` = the training reward's correctness (0/1) of the single generated response."""
    info = dict(doc.get("extra_info") or {})
    scored = rewards.compute_score(doc["data_source"], results[0] if results else "",
                                   doc_to_target(doc), info)
    return {"acc": float(scored["acc"])}
