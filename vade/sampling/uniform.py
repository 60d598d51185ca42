"""The vanilla GRPO/GSPO baseline: epoch-wise shuffling without replacement.

Matches the training dataloader a verl user gets (shuffle each epoch, ``drop_last=True``): a batch
never straddles two epochs, so the last ``n_samples % batch_size`` of each epoch's permutation are
skipped that epoch (a different few each epoch). There is no posterior; ``observe`` only checks
its input and records the step, so uniform runs log the same per-sample events as VADE runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vade.sampling.observation import Observation, validate_observation
from vade.sampling.state import check_sizes, check_state

__all__ = ["UniformSampler"]

_STATE_VERSION = 1


class UniformSampler:
    """Shuffle every epoch, hand out consecutive batches of the permutation."""

    alpha = None
    beta = None

    def __init__(self, n_samples: int, batch_size: int, seed: int = 0) -> None:
        check_sizes(n_samples, batch_size)
        self.n_samples = int(n_samples)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.step = 0
        self.epoch = 0
        self._rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence(self.seed)))
        self._perm = self._rng.permutation(self.n_samples)
        self._cursor = 0

    @property
    def config(self) -> dict[str, Any]:
        return {"kind": "uniform", "n_samples": self.n_samples,
                "batch_size": self.batch_size, "seed": self.seed}

    def select(self) -> np.ndarray:
        if self._cursor + self.batch_size > self.n_samples:
            self._perm = self._rng.permutation(self.n_samples)
            self._cursor = 0
            self.epoch += 1
        batch = self._perm[self._cursor:self._cursor + self.batch_size].copy()
        self._cursor += self.batch_size
        return batch

    def observe(
        self, indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float
    ) -> Observation:
        idx, r, g = validate_observation(indices, correct, rollouts, self.n_samples)
        self.step += 1
        nan = np.full(idx.shape, np.nan)
        return Observation(step=self.step, indices=idx, correct=r, rollouts=g,
                           p_drawn=nan, gain=nan.copy())

    def state_dict(self) -> dict[str, Any]:
        return {"version": _STATE_VERSION, "config": self.config, "step": self.step,
                "epoch": self.epoch, "perm": self._perm.copy(), "cursor": self._cursor,
                "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        check_state(state, _STATE_VERSION, self.config)
        perm = np.array(state["perm"], dtype=np.int64)
        if perm.shape != (self.n_samples,):
            raise ValueError(f"sampler state perm has shape {perm.shape}")
        self._perm = perm
        self._cursor = int(state["cursor"])
        self.step = int(state["step"])
        self.epoch = int(state["epoch"])
        self._rng.bit_generator.state = state["rng"]
