"""From a method's name (``vade.methods``) to the sampler that chooses its prompts.

The method table lives in ``vade.methods`` (plain Python, no numpy); this module turns a row's
chooser into a sampler. A method with a shaping (DAPO filters, DIVA makes variants) gets the
sampler of its chooser: ``dapo`` and ``diva`` draw uniform epochs, ``vade-diva`` VADE's posterior.
A ``peer`` row is the class registered under its name in ``vade.sampling.peers.PEERS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from vade.methods import METHODS as _TABLE
from vade.methods import get as _method
from vade.sampling.observation import Observation
from vade.sampling.peers import PEERS
from vade.sampling.uniform import UniformSampler
from vade.sampling.vade import VadeSampler

__all__ = ["SAMPLER_OPTIONS", "Sampler", "make_sampler"]


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


# the methods that are a sampler alone -> VadeSampler keyword overrides (None: uniform epochs);
# the peer rows are built by ``vade.sampling.peers.PEERS`` instead
SAMPLER_OPTIONS: dict[str, dict[str, str] | None] = {
    m.name: (dict(m.vade_options) if m.uses_posterior else None)
    for m in _TABLE.values() if m.shaping is None and m.chooser != "peer"
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
    labels: Sequence[Any] | None = None,
) -> Sampler:
    """The sampler that chooses ``method``'s prompts (any name of ``vade.methods``);
    ``alpha``/``beta`` come from the initial rollouts and are ignored by a uniform chooser; a
    peer row gets ``PEERS[method].for_run`` (its published defaults), with ``labels`` (the
    rows' ``extra_info.difficulty``) for a row that ``reads_labels``."""
    row = _method(method)
    if row.chooser == "peer":
        if row.sampler_name not in PEERS:
            raise ValueError(f"method {method!r} has chooser 'peer' but no class in "
                             "vade.sampling.peers.PEERS")
        return PEERS[row.sampler_name].for_run(n_samples, batch_size, seed=seed, alpha=alpha,
                                               beta=beta, labels=labels)
    if not row.uses_posterior:
        return UniformSampler(n_samples, batch_size, seed=seed)
    return VadeSampler(n_samples, batch_size, lambda1=lambda1, lambda2=lambda2, seed=seed,
                       alpha=alpha, beta=beta, threads=threads, **row.vade_options)
