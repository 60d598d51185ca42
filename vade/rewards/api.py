"""The reward as the trainers call it: verl's custom-reward signature and a batch form.

``compute_score(data_source, solution_str, ground_truth, extra_info)`` is what verl's reward
managers call once per response (``custom_reward_function.path`` = ``vade/rewards/verl_entry.py``);
``score_batch`` is the local trainer's vectorised entry. Both go through ``score_one`` so they can
never disagree.

Reward = correctness (the paper's setup): ``score == acc`` in {0.0, 1.0}. An optional format
component exists for experiments: with ``format_weight = w > 0`` the score is
``(1 - w) * acc + w * boxed`` where ``boxed`` is 1 when the answer was given as ``\\boxed{...}``
(the format the prompt asks for); ``acc`` stays binary correctness either way. verl passes it via
``custom_reward_function.reward_kwargs.format_weight``; the local trainer via ``RewardConfig``.

Answer type: ``extra_info["answer_type"]`` when present, else inferred from ``data_source``
(``infer_answer_type``). A ground truth that is a list means "any of these is correct".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vade.checks import reject_unknown
from vade.rewards.candidates import offers_alternatives
from vade.rewards.extract import Extraction, extract_answer
from vade.rewards.verify import MAX_OPTIONS, VERIFIERS, verify

__all__ = ["RewardConfig", "compute_score", "infer_answer_type", "score_batch", "score_one"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class RewardConfig:
    """Reward options. ``format_weight`` in [0, 1]; 0 (default) keeps score == acc."""

    format_weight: float = 0.0

    def __post_init__(self) -> None:
        w = self.format_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= w <= 1.0:
            raise ValueError(f"reward.format_weight must be a number in [0, 1], got {w!r}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None, where: str = "reward") -> RewardConfig:
        """Validate a config section (e.g. ``reward``); unknown keys raise naming the key."""
        values = dict(values or {})
        reject_unknown(values, {"format_weight"}, where)
        return cls(**values)


def infer_answer_type(data_source: str, extra_info: Mapping[str, Any] | None = None) -> str:
    """``extra_info["answer_type"]`` if given, else by source name (see the module table).

    chartqa -> relaxed; scienceqa, ai2d, geo170k -> choice; figureqa -> yesno; clevr-math ->
    number; ``synthetic/<domain>`` must carry its type in extra_info; anything else -> math.
    """
    given = (extra_info or {}).get("answer_type")
    if given:
        if given not in VERIFIERS:
            raise ValueError(f"extra_info.answer_type '{given}' of data_source '{data_source}' is "
                             f"unknown (allowed: {sorted(VERIFIERS)})")
        return str(given)
    ds = str(data_source).lower()
    if "chartqa" in ds:
        return "relaxed"
    if any(k in ds for k in ("scienceqa", "ai2d", "geo170k")):
        return "choice"
    if "figureqa" in ds:
        return "yesno"
    if "clevr-math" in ds or "clevr_math" in ds:
        return "number"
    if ds.startswith("synthetic"):
        raise ValueError(f"data_source '{data_source}' needs extra_info.answer_type "
                         f"(synthetic rows carry their own type)")
    return "math"


def _golds(ground_truth: Any, where: str) -> list[str]:
    if isinstance(ground_truth, (str, int, float)) and not isinstance(ground_truth, bool):
        golds = [str(ground_truth)]
    elif isinstance(ground_truth, (list, tuple, np.ndarray)):
        golds = [str(g) for g in ground_truth]
    else:
        raise ValueError(  # noqa: TRY004 - bad row input is a ValueError (contracts)
            f"{where}: ground_truth must be a string (or list of strings), "
            f"got {type(ground_truth).__name__}")
    golds = [g for g in golds if g.strip()]
    if not golds:
        raise ValueError(f"{where}: empty ground_truth (a row without an answer)")
    return golds


def _choices(extra_info: Mapping[str, Any] | None) -> list[str] | None:
    raw = (extra_info or {}).get("choices")
    if raw is None or isinstance(raw, str) or len(raw) == 0:
        return None
    return [str(c) for c in raw]


def _hedged(found: Extraction, answer_type: str, golds: list[str]) -> bool:
    """Two different boxes joined on a line, or (types without candidates) an "or" between two
    answers: a hedge scores 0 (``vade.rewards.candidates``). Choice and yes/no answers are
    checked by their verifiers, which know the candidates."""
    if found.hedged:
        return True
    return answer_type not in ("choice", "yesno") and all(
        offers_alternatives(found.answer or "", g) for g in golds)


def score_one(solution: str, ground_truth: Any, answer_type: str,
              extra_info: Mapping[str, Any] | None = None,
              config: RewardConfig = RewardConfig(), where: str = "sample") -> dict[str, float]:
    """Score one response: extract its final answer, verify it by type, combine with format."""
    if answer_type not in VERIFIERS:
        raise ValueError(f"{where}: unknown answer_type '{answer_type}' "
                         f"(allowed: {sorted(VERIFIERS)})")
    golds = _golds(ground_truth, where)
    if solution is None:
        solution = ""
    if not isinstance(solution, str):
        raise ValueError(  # noqa: TRY004 - bad row input is a ValueError (contracts)
            f"{where}: solution must be a string, got {type(solution).__name__}")
    choices = _choices(extra_info)
    letters = None
    if answer_type == "choice":
        letters = _LETTERS[:len(choices) if choices else MAX_OPTIONS]
    found = extract_answer(solution, choice_letters=letters, yesno=answer_type == "yesno")
    acc = 0.0
    if found.answer is not None and not _hedged(found, answer_type, golds):
        try:
            acc = float(any(verify(answer_type, found.answer, g, choices) for g in golds))
        except ValueError as exc:  # a bad ground truth: name the row
            raise ValueError(f"{where}: {exc}") from None
    w = config.format_weight
    score = acc if w == 0 else (1.0 - w) * acc + w * float(found.boxed)
    return {"score": float(score), "acc": acc}


_VERL_EXTRAS = frozenset({"reward_router_address", "reward_model_tokenizer"})


def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                  extra_info: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, float]:
    """verl's custom reward: ``{"score": float, "acc": 0.0 | 1.0}`` for one response.

    ``kwargs`` are verl's ``reward_kwargs`` (only ``format_weight``) plus the reward-model router
    arguments verl adds on its own (ignored); any other keyword raises ValueError naming it.
    """
    unknown = sorted(set(kwargs) - _VERL_EXTRAS - {"format_weight"})
    if unknown:
        raise ValueError(f"unknown reward keyword '{unknown[0]}' (allowed: format_weight)")
    config = RewardConfig(format_weight=kwargs.get("format_weight", 0.0))
    info = extra_info if isinstance(extra_info, Mapping) else {}
    where = f"data_source={data_source} index={info.get('index', '?')}"
    answer_type = infer_answer_type(data_source, info)
    return score_one(solution_str, ground_truth, answer_type, info, config, where)


def score_batch(solutions: Sequence[str], ground_truths: Sequence[Any],
                answer_types: Sequence[str] | str,
                extra_infos: Sequence[Mapping[str, Any] | None] | None = None, *,
                config: RewardConfig | None = None, key: str = "score") -> np.ndarray:
    """Scores of many responses as a float64 array (0/1 unless ``format_weight`` > 0).

    ``answer_types`` is one type per response or a single type for all; ``extra_infos`` (optional)
    supplies ``choices`` for choice questions. ``key="acc"`` returns correctness instead of score.
    """
    n = len(solutions)
    if isinstance(answer_types, str):
        answer_types = [answer_types] * n
    if len(ground_truths) != n or len(answer_types) != n:
        raise ValueError(f"score_batch: {n} solutions but {len(ground_truths)} ground truths and "
                         f"{len(answer_types)} answer types")
    if extra_infos is not None and len(extra_infos) != n:
        raise ValueError(f"score_batch: {n} solutions but {len(extra_infos)} extra_infos")
    if key not in ("score", "acc"):
        raise ValueError(f"score_batch: key must be 'score' or 'acc', got {key!r}")
    config = config or RewardConfig()
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        info = extra_infos[i] if extra_infos is not None else None
        out[i] = score_one(solutions[i], ground_truths[i], answer_types[i], info, config,
                           where=f"batch item {i}")[key]
    return out
