"""Plumbing shared by the peer samplers: argument checks, RNG, last-selection record, state.

Each peer keeps its per-sample state in numpy arrays and a few scalars; listing their attribute
names in ``_STATE_ARRAYS`` / ``_STATE_SCALARS`` is all a subclass does to get an exact
``state_dict``/``load_state_dict`` round trip (RNG included), with the same refusal of a state
saved by a differently configured sampler as ``VadeSampler`` and ``UniformSampler``.

As a training method (a ``peer`` row of ``vade.methods``), ``for_run`` builds the peer from what
the run contract gives every chooser (sizes, seed, and the initial difficulty rollouts r and
G - r when the row says ``reads_difficulty``); ``sample_state`` and ``scalar_state`` are what
the run's DuckDB history records of it (``peer_state`` rows and ``peer/*`` metrics).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vade.checks import check_number
from vade.sampling.observation import draws_for
from vade.sampling.state import check_sizes, check_state, saved_state

__all__ = ["PeerSampler", "initial_pass_rate"]

_STATE_VERSION = 1


def initial_pass_rate(alpha: np.ndarray | None, beta: np.ndarray | None, n_samples: int,
                      method: str) -> np.ndarray:
    """r / G per sample from the initial difficulty rollouts (alpha = r, beta = G - r); a clear
    error when a peer that reads them was built without them."""
    if alpha is None or beta is None:
        raise ValueError(f"{method} starts from the initial difficulty rollouts: pass alpha/beta "
                         "(train.method needs --difficulty)")
    a = np.asarray(alpha, np.float64)
    g = a + np.asarray(beta, np.float64)
    if a.shape != (n_samples,) or g.shape != (n_samples,) or np.any(g <= 0):
        raise ValueError(f"{method}: initial difficulty must give r and G - r >= 0 with G > 0 for "
                         f"each of the {n_samples} samples")
    return a / g


class PeerSampler:
    """Base class: ``n_samples``, ``batch_size``, ``step``, ``config``, state round trip."""

    kind = "peer"
    alpha = None  # no VADE-style (alpha, beta) posterior to log
    beta = None
    _STATE_ARRAYS: tuple[str, ...] = ()
    _STATE_SCALARS: tuple[str, ...] = ()

    def __init__(self, n_samples: int, batch_size: int, seed: int) -> None:
        check_sizes(n_samples, batch_size)
        check_number("seed", seed, 0, 2**63 - 1, integer=True)
        self.n_samples = int(n_samples)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.step = 0
        self._rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence(self.seed)))
        self._last = (np.empty(0, np.int64), np.empty(0), np.empty(0))

    @classmethod
    def for_run(cls, n_samples: int, batch_size: int, *, seed: int,
                alpha: np.ndarray | None = None, beta: np.ndarray | None = None,
                labels: Sequence[Any] | None = None) -> PeerSampler:
        """The peer with its published defaults for a training run. ``alpha``/``beta`` are the
        initial difficulty rollouts (r, G - r per sample), ``labels`` the training rows'
        ``extra_info.difficulty``; a peer ignores what it does not read (MoPPS and GRESO start
        flat, as published)."""
        return cls(n_samples, batch_size, seed=seed)

    def sample_state(self) -> dict[str, np.ndarray]:
        """What the peer keeps per sample (name -> array of ``n_samples``), for the history."""
        return {name: getattr(self, name) for name in self._STATE_ARRAYS
                if not name.startswith("_")}

    def scalar_state(self) -> dict[str, float]:
        """The peer's state that is not per sample (name -> value), for the history."""
        return {name: float(getattr(self, name)) for name in self._STATE_SCALARS
                if not name.startswith("_")}

    def _hyper(self) -> dict[str, Any]:
        """The subclass's hyper-parameters (part of ``config``)."""
        return {}

    @property
    def config(self) -> dict[str, Any]:
        """Everything that defines the sampler's behaviour (for run records and resume checks)."""
        return {"kind": self.kind, "n_samples": self.n_samples, "batch_size": self.batch_size,
                **self._hyper(), "seed": self.seed}

    def _remember(self, chosen: np.ndarray, p: np.ndarray, gain: np.ndarray) -> np.ndarray:
        """Record what ``select`` scored, for the next ``observe``; return a copy of ``chosen``."""
        self._last = (chosen.astype(np.int64), np.asarray(p, np.float64).copy(),
                      np.asarray(gain, np.float64).copy())
        return self._last[0].copy()

    def _last_for(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p, gain) of the last selection for each observed index; NaN where not selected."""
        return draws_for(*self._last, idx)

    def state_dict(self) -> dict[str, Any]:
        return saved_state(
            _STATE_VERSION, self, rng=self._rng.bit_generator.state,
            arrays={name: getattr(self, name).copy() for name in self._STATE_ARRAYS},
            scalars={name: getattr(self, name) for name in self._STATE_SCALARS})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict``; refuses one from a differently configured sampler."""
        check_state(state, _STATE_VERSION, self.config)
        arrays = {}
        for name in self._STATE_ARRAYS:
            current = getattr(self, name)
            value = np.array(state["arrays"][name], dtype=current.dtype)
            if value.shape != current.shape:
                raise ValueError(f"sampler state {name} has shape {value.shape}, "
                                 f"expected {current.shape}")
            arrays[name] = value
        for name, value in arrays.items():
            setattr(self, name, value)
        for name in self._STATE_SCALARS:
            setattr(self, name, type(getattr(self, name))(state["scalars"][name]))
        self.step = int(state["step"])
        self._rng.bit_generator.state = state["rng"]
        last = state["last_selection"]
        self._last = (np.array(last["indices"], dtype=np.int64), np.array(last["p"], np.float64),
                      np.array(last["gain"], np.float64))
