"""Rule-based rewards: final-answer extraction and verification by answer type.

Public API: ``compute_score`` (verl's custom-reward signature), ``score_batch`` (local trainer),
``RewardConfig``, ``extract_answer``, ``verify``, ``infer_answer_type``. verl loads
``vade/rewards/verl_entry.py`` (``VERL_ENTRY`` below) with ``name=compute_score``.
"""

from __future__ import annotations

from pathlib import Path

from vade.rewards.api import RewardConfig, compute_score, infer_answer_type, score_batch, score_one
from vade.rewards.extract import Extraction, extract_answer
from vade.rewards.verify import verify

VERL_ENTRY = str(Path(__file__).resolve().with_name("verl_entry.py"))

__all__ = [
           "VERL_ENTRY",
           "Extraction",
           "RewardConfig",
           "compute_score",
           "extract_answer",
           "infer_answer_type",
           "score_batch",
           "score_one",
           "verify",
]
