"""What a generation engine returns (``Rollouts``) and promises (``GenerationEngine``).

``generate(examples, n, *, temperature, max_new_tokens, seed) -> Rollouts`` samples ``n``
responses per example. Responses are grouped: rows ``k*n .. k*n+n-1`` belong to ``examples[k]``
and ``example_pos`` says so explicitly, so callers group by it instead of by arithmetic.

The HF engine also returns token tensors (``response_ids``, ``response_mask``) and the prompt
batch (``prompt_inputs``, already repeated ``n`` times, row-aligned with the responses) so the local
trainer can recompute log-probs with ``vade.models.policy.token_logprobs`` without re-encoding.
The vLLM engine fills ``texts`` (and token ids when asked); verl does its own log-prob work.
These types sit here, below the engines (``vade.models.hf_engine``, ``vade.rollout``), so that
every engine and ``make_engine`` import them one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from vade.data.records import Example
    from vade.models.policy import PromptInputs

__all__ = ["GenerationEngine", "Rollouts"]


@dataclass(frozen=True)
class Rollouts:
    """``len(examples) * n`` responses, grouped by example."""

    example_pos: np.ndarray  # int64 (M,): index into the ``examples`` passed to ``generate``
    texts: list[str]  # decoded responses, special tokens removed
    n: int
    response_ids: torch.Tensor | None = None  # (M, L) long, pad after the end of turn
    response_mask: torch.Tensor | None = None  # (M, L) long, 1 up to and incl. <|im_end|>
    prompt_inputs: PromptInputs | None = None  # M rows, row i is the prompt of response i

    def __post_init__(self) -> None:
        m = len(self.texts)
        if self.example_pos.shape != (m,):
            raise ValueError(f"Rollouts: example_pos has shape {self.example_pos.shape}, "
                             f"expected ({m},)")
        for name in ("response_ids", "response_mask"):
            t = getattr(self, name)
            if t is not None and t.shape[0] != m:
                raise ValueError(f"Rollouts: {name} has {t.shape[0]} rows, expected {m}")
        if self.prompt_inputs is not None and len(self.prompt_inputs) != m:
            raise ValueError(f"Rollouts: prompt_inputs has {len(self.prompt_inputs)} rows, "
                             f"expected {m}")

    def __len__(self) -> int:
        return len(self.texts)

    def select(self, rows: Sequence[int] | np.ndarray) -> Rollouts:
        """The given response rows (order kept; ``example_pos`` keeps its original values)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) and (rows.min() < -len(self) or rows.max() >= len(self)):
            raise IndexError(f"Rollouts.select: rows out of range for {len(self)} responses")
        ids = mask = prompts = None
        if self.response_ids is not None:
            import torch  # lazy: torch (cpu/verl envs), seconds to load

            idx = torch.as_tensor(rows)
            ids, mask = self.response_ids[idx], self.response_mask[idx]
        if self.prompt_inputs is not None:
            prompts = self.prompt_inputs.select(rows)
        return Rollouts(self.example_pos[rows], [self.texts[int(r)] for r in rows], self.n,
                        ids, mask, prompts)

    def correct_counts(self, rewards: np.ndarray) -> np.ndarray:
        """r per example: number of rewards == 1 in each group (rewards aligned with texts)."""
        rewards = np.asarray(rewards, dtype=float)
        if rewards.shape != (len(self),):
            raise ValueError(f"rewards has shape {rewards.shape}, expected ({len(self)},)")
        n_examples = int(self.example_pos.max()) + 1 if len(self) else 0
        return np.bincount(self.example_pos, weights=(rewards > 0.5), minlength=n_examples
                           ).astype(np.int64)


@runtime_checkable
class GenerationEngine(Protocol):
    """Anything that samples ``n`` responses per example; deterministic for a given seed."""

    def generate(self, examples: Sequence[Example], n: int, *, temperature: float,
                 max_new_tokens: int, seed: int) -> Rollouts:
        ...
