"""One step's rollouts as the update sees them: rows, groups, rewards, and log-probs on demand.

The adapter between the trainer and the generation/scoring packages (``vade.rollout``,
``vade.models.policy``, ``vade.rewards``): everything the loop knows about their types is here.
A step's batch may come from several generation calls (DAPO regenerates), each a ``Rollouts``
with its own padding; the batch keeps them as pieces plus the rows kept from each, and computes
log-probs piece by piece, padding the (rows, tokens) results to one width. Rows are ordered by
prompt, G consecutive rows per group, so verl-style mini-batches of ``k * G`` rows hold whole
groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from vade.rewards import score_one

__all__ = ["StepBatch", "derive_seed", "generate_groups"]


def derive_seed(seed: int, *parts: int) -> int:
    """The engine's seed for (run seed, step, generation batch): stateless, so a resumed step
    regenerates exactly what the interrupted one did."""
    return int(np.random.SeedSequence([int(seed), *map(int, parts)]).generate_state(1)[0])


@dataclass
class GeneratedPiece:
    """One generation call: its rollouts, the sample id and reward of each rollout row."""

    rollouts: Any
    sample_ids: np.ndarray   # (rows,) sample id (train row) of each rollout
    rewards: np.ndarray      # (rows,) float 0/1
    prompt_pos: np.ndarray   # (rows,) position of the row's prompt in the call's prompt list


def score_rollouts(texts: Sequence[str], examples: Sequence[Any], pos: np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(score, acc) per rollout: the score is the reward the advantage uses, acc the binary
    correctness the sampler and DAPO's filter use (verl's ``acc``); equal by default."""
    out = np.empty((len(texts), 2))
    for i, (text, p) in enumerate(zip(texts, pos)):
        ex = examples[int(p)]
        s = score_one(text, ex.ground_truth, ex.answer_type, ex.extra_info,
                      where=f"train row {ex.index} rollout {i}")
        out[i] = s["score"], s["acc"]
    return out[:, 0], out[:, 1]


def generate_groups(engine: Any, examples: Sequence[Any], ids: np.ndarray, group_size: int, *,
                    temperature: float, max_new_tokens: int, seed: int, phases: Any = None,
                    ) -> tuple[np.ndarray, GeneratedPiece]:
    """G rollouts for each prompt ``ids``; returns (r = correct rollouts per prompt, piece).
    ``phases`` (a ``vade.train.local.timing.Phases``) gets the generation and reward seconds."""
    def timed(phase: str) -> Any:
        return nullcontext() if phases is None else phases.time(phase)

    chosen = [examples[int(i)] for i in ids]
    with timed("generate"):
        ro = engine.generate(chosen, group_size, temperature=temperature,
                             max_new_tokens=max_new_tokens, seed=seed)
    pos = np.asarray(ro.example_pos, dtype=np.int64)
    counts = np.bincount(pos, minlength=len(chosen))
    if np.any(counts != group_size):
        raise ValueError(f"engine returned {counts.tolist()} rollouts per prompt, "
                         f"expected {group_size} each")
    with timed("reward"):
        rewards, acc = score_rollouts(list(ro.texts), chosen, pos)
    correct = np.bincount(pos, weights=acc, minlength=len(chosen))
    return correct, GeneratedPiece(ro, np.asarray(ids, np.int64)[pos], rewards, pos)


def _select(rollouts: Any, rows: np.ndarray) -> Any:
    """The rollouts of ``rows`` (an engine's ``Rollouts.select`` when it has one)."""
    return rollouts.select(rows.tolist())


class StepBatch:
    """Rows kept for training this step, from one or more generated pieces."""

    def __init__(self, pieces: Sequence[tuple[GeneratedPiece, np.ndarray]]) -> None:
        """``pieces``: (piece, prompt positions kept from it, in training order)."""
        self.pieces: list[GeneratedPiece] = []
        refs: list[tuple[int, int]] = []  # (piece, row within piece) per batch row
        for piece, keep in pieces:
            if len(keep) == 0:
                continue
            k = len(self.pieces)
            self.pieces.append(piece)
            for p in keep:
                refs.extend((k, int(r)) for r in np.flatnonzero(piece.prompt_pos == p))
        self._refs = np.array(refs, dtype=np.int64).reshape(-1, 2)
        self.sample_ids = np.array([self.pieces[k].sample_ids[r] for k, r in self._refs],
                                   dtype=np.int64)
        self.rewards = np.array([self.pieces[k].rewards[r] for k, r in self._refs])
        self.width = max((self._mask(k).shape[1] for k in range(len(self.pieces))), default=0)

    def __len__(self) -> int:
        return len(self._refs)

    def _mask(self, k: int) -> Any:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        return torch.as_tensor(self.pieces[k].rollouts.response_mask)

    def _gather(self, rows: np.ndarray, fn: Any) -> Any:
        """Apply ``fn(rollouts_subset) -> (n, L_piece)`` per piece; pad and reorder to ``rows``."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        rows = np.asarray(rows, dtype=np.int64)
        out = None
        for k in np.unique(self._refs[rows, 0]):
            at = np.flatnonzero(self._refs[rows, 0] == k)
            values = fn(_select(self.pieces[k].rollouts, self._refs[rows[at], 1]))
            values = torch.nn.functional.pad(values, (0, self.width - values.shape[1]))
            if out is None:
                out = values.new_zeros((len(rows), self.width))
            out = out.index_copy(0, torch.as_tensor(at), values)
        return out

    def response_mask(self, rows: np.ndarray) -> Any:
        return self._gather(rows, lambda ro: torch_float(ro.response_mask))

    def logprobs(self, token_logprobs: Any, model: Any, rows: np.ndarray) -> Any:
        """Per-token log-probs of the responses of ``rows`` under ``model`` (grad if enabled);
        ``token_logprobs(model, prompt_inputs, response_ids, response_mask)`` is the policy's."""
        return self._gather(rows, lambda ro: token_logprobs(
            model, ro.prompt_inputs, ro.response_ids, ro.response_mask))

    def response_lengths(self) -> np.ndarray:
        return self.response_mask(np.arange(len(self))).sum(-1).numpy()


def torch_float(x: Any) -> Any:
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    return torch.as_tensor(x).float()
