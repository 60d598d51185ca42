"""Training methods by name: the one place that maps a config's ``method`` to a sampler.

The names are those of the paper's tables: ``vanilla`` (uniform), ``vade`` and its Table 2
ablations. DAPO is not a sampler (it filters after generation) and is handled by the trainers.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from vade.sampling.observation import Observation
from vade.sampling.uniform import UniformSampler
from vade.sampling.vade import VadeSampler

__all__ = ["METHODS", "Sampler", "make_sampler"]


class Sampler(Protocol):
    """What every trainer may rely on."""

    n_samples: int
    batch_size: int
    step: int

    @property
    def config(self) -> dict[str, Any]: ...

    def select(self) -> np.ndarray: ...

    def observe(self, indices: np.ndarray, correct: np.ndarray,
                rollouts: np.ndarray | float) -> Observation: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


# method name -> VadeSampler keyword overrides (None: the uniform baseline)
METHODS: dict[str, dict[str, str] | None] = {
    "vanilla": None,
    "vade": {},
    "symmetric": {"objective": "symmetric"},
    "greedy": {"exploration": "greedy"},
    "last-update": {"decay": "last-update"},
}


def make_sampler(
    method: str,
    n_samples: int,
    batch_size: int,
    *,
    seed: int = 0,
    lambda1: float = 0.2,
    lambda2: float = 0.999,
    alpha: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    threads: int | None = None,
) -> Sampler:
    """Build the sampler of a named method; ``alpha``/``beta`` come from initial rollouts."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {method!r}")
    overrides = METHODS[method]
    if overrides is None:
        return UniformSampler(n_samples, batch_size, seed=seed)
    return VadeSampler(n_samples, batch_size, lambda1=lambda1, lambda2=lambda2, seed=seed,
                       alpha=alpha, beta=beta, threads=threads, **overrides)
