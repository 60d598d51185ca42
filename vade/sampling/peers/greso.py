"""GRESO-style pre-rollout skipping of prompts that were zero-variance in a row."""

from __future__ import annotations

from typing import Any

import numpy as np

from vade.checks import check_number
from vade.sampling.observation import Observation, validate_observation
from vade.sampling.peers.base import PeerSampler

__all__ = ["GresoSampler"]


class GresoSampler(PeerSampler):
    """Walk a shuffled epoch and skip, before rollout, prompts that keep giving r in {0, G}.

    Published rule (``notes/peers.md``): a prompt whose last k observations were all-correct
    (easy) or all-wrong (hard) is skipped with probability 1 - max(p^k, 0.01), p = p_easy or
    p_hard; p_easy and p_hard adapt so that the share of zero-variance groups in a batch tracks
    a target (0.25).

    This implementation: the epoch order is a seeded shuffle, as in ``UniformSampler``; walking
    it, each prompt is kept with probability max(p^k, ``min_keep``) (k = 0: always kept) and the
    first B kept prompts form the batch, so skipped prompts cost no rollouts. A prompt skipped
    once is skipped for the rest of that epoch. If an epoch runs out, the next one starts (never
    repeating a prompt within a batch); if a fresh epoch is exhausted too, the batch is filled
    at random from the unchosen prompts. After each step, p_easy moves by ``adjust_step`` down
    if the batch's all-correct share exceeds ``target_zero_variance * easy_share`` and up
    otherwise, p_hard likewise with the all-wrong share and the rest of the target; both stay in
    [min_keep, 1].

    Simplifications: the split of the target between easy and hard (``easy_share``, default 0.5)
    and the starting probabilities (``initial_keep``, default 0.5) are this project's choices;
    GRESO's adaptive generation batch size and its post-rollout filter (it sits on top of DAPO
    dynamic sampling) are left out, so a batch may contain zero-variance groups, as VADE's may.

    ``Observation``: ``p_drawn`` is NaN (no estimate), ``gain`` the keep probability.
    """

    kind = "greso"
    _STATE_ARRAYS = ("streak", "_perm")
    _STATE_SCALARS = ("p_easy", "p_hard", "_cursor", "epoch")

    def __init__(
        self,
        n_samples: int,
        batch_size: int,
        *,
        target_zero_variance: float = 0.25,
        easy_share: float = 0.5,
        initial_keep: float = 0.5,
        adjust_step: float = 0.01,
        min_keep: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(n_samples, batch_size, seed)
        check_number("target_zero_variance", target_zero_variance, 0.0, 1.0)
        check_number("easy_share", easy_share, 0.0, 1.0)
        check_number("min_keep", min_keep, 0.0, 1.0, lo_open=True)
        check_number("initial_keep", initial_keep, min_keep, 1.0)
        check_number("adjust_step", adjust_step, 0.0, 1.0)
        self.target_zero_variance = float(target_zero_variance)
        self.easy_share = float(easy_share)
        self.initial_keep = float(initial_keep)
        self.adjust_step = float(adjust_step)
        self.min_keep = float(min_keep)
        self.p_easy = self.initial_keep
        self.p_hard = self.initial_keep
        # +k: k consecutive all-correct observations; -k: all-wrong; 0: informative or unseen.
        self.streak = np.zeros(self.n_samples, dtype=np.int64)
        self.epoch = 0
        self._perm = self._rng.permutation(self.n_samples)
        self._cursor = 0

    def _hyper(self) -> dict[str, Any]:
        return {"target_zero_variance": self.target_zero_variance,
                "easy_share": self.easy_share, "initial_keep": self.initial_keep,
                "adjust_step": self.adjust_step, "min_keep": self.min_keep}

    def sample_state(self) -> dict[str, np.ndarray]:
        """The streak (+k all-correct, -k all-wrong in a row) and the keep probability it gives."""
        return {"streak": self.streak, "keep_probability": self.keep_probability()}

    def keep_probability(self) -> np.ndarray:
        """Per prompt: max(p^k, min_keep), p = p_easy for easy streaks, p_hard for hard ones."""
        base = np.where(self.streak > 0, self.p_easy, self.p_hard)
        return np.maximum(base ** np.abs(self.streak), self.min_keep)

    def _new_epoch(self) -> None:
        self._perm = self._rng.permutation(self.n_samples)
        self._cursor = 0
        self.epoch += 1

    def select(self) -> np.ndarray:
        """The next B prompts of the epoch order that survive their skip draw."""
        keep = self.keep_probability()
        taken = np.zeros(self.n_samples, dtype=bool)
        parts: list[np.ndarray] = []
        need = self.batch_size
        fresh_epochs = 0
        while need > 0:
            if self._cursor >= self.n_samples:
                if fresh_epochs == 1:  # a whole fresh epoch did not fill the batch
                    rest = np.flatnonzero(~taken)
                    parts.append(self._rng.choice(rest, size=need, replace=False))
                    break
                self._new_epoch()
                fresh_epochs += 1
            rest = self._perm[self._cursor:]
            ok = (self._rng.random(rest.size) < keep[rest]) & ~taken[rest]
            pos = np.flatnonzero(ok)[:need]
            parts.append(rest[pos])
            taken[rest[pos]] = True
            need -= pos.size
            self._cursor = self._cursor + int(pos[-1]) + 1 if need == 0 else self.n_samples
        chosen = np.concatenate(parts)
        return self._remember(chosen, np.full(chosen.size, np.nan), keep[chosen])

    def observe(
        self, indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float
    ) -> Observation:
        """Update the zero-variance streaks and adapt p_easy / p_hard toward the target."""
        idx, r, g = validate_observation(indices, correct, rollouts, self.n_samples)
        easy = r >= g
        hard = r <= 0
        s = self.streak[idx]
        self.streak[idx] = np.where(easy, np.maximum(s, 0) + 1,
                                    np.where(hard, np.minimum(s, 0) - 1, 0))
        target_easy = self.target_zero_variance * self.easy_share
        target_hard = self.target_zero_variance - target_easy
        step_easy = -self.adjust_step if easy.mean() > target_easy else self.adjust_step
        step_hard = -self.adjust_step if hard.mean() > target_hard else self.adjust_step
        self.p_easy = float(np.clip(self.p_easy + step_easy, self.min_keep, 1.0))
        self.p_hard = float(np.clip(self.p_hard + step_hard, self.min_keep, 1.0))
        self.step += 1
        p, gain = self._last_for(idx)
        return Observation(step=self.step, indices=idx, correct=r, rollouts=g, p_drawn=p,
                           gain=gain)
