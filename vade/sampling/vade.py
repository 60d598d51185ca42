"""The VADE sampler: Beta posteriors per sample, Thompson/greedy scoring, two-scale prior decay.

Paper (VADE, arXiv 2511.18902), section 3 and Algorithm 1:

* state (alpha_i, beta_i), posterior Beta(alpha_i + 1, beta_i + 1); initialised from G initial
  rollouts as alpha = r, beta = G - r (lines 1-4), or zeros (a flat prior) without them;
* each step, draw p_i from the posterior (Thompson) or take its mean (greedy ablation), score
  I_i = p(1-p)^2 (eq. 4; the symmetric ablation uses p(1-p)) and take the top B;
* after the rollouts, observed samples: alpha <- l1*alpha + r, beta <- l1*beta + G - r (eq. 5);
  all others: alpha <- l2*alpha, beta <- l2*beta (eq. 6).

Decay rules: ``two-scale`` (eqs. 5-6 with the given lambdas), ``last-update`` (the paper's
ablation: only the latest observation of a sample counts and unobserved samples keep their state,
i.e. l1 = 0, l2 = 1), ``none`` (stationary Bayesian accumulation, l1 = l2 = 1).

The greedy ablation scores the paper's estimate alpha / (alpha + beta) (section 4.4;
``draws.greedy_estimate``), 0.5 where alpha + beta == 0 (before a first observation under a flat
prior; with the paper's initialisation alpha + beta = G > 0). It is not the posterior mean
(alpha + 1) / (alpha + beta + 2): that one ranks never-solved samples (r = 0 of G) above
well-solved ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vade.sampling.draws import EXPLORATIONS, OBJECTIVES, ChunkedScorer
from vade.sampling.observation import Observation, draws_for, validate_observation
from vade.sampling.state import check_sizes, check_state, saved_state
from vade.sampling.topk import top_k_random_ties

__all__ = ["DECAYS", "VadeSampler"]

DECAYS = ("two-scale", "last-update", "none")
_STATE_VERSION = 1


def _decay_factors(decay: str, lambda1: float, lambda2: float) -> tuple[float, float]:
    if decay == "last-update":
        return 0.0, 1.0
    if decay == "none":
        return 1.0, 1.0
    if decay != "two-scale":
        raise ValueError(f"decay must be one of {DECAYS}, got {decay!r}")
    for name, value in (("lambda1", lambda1), ("lambda2", lambda2)):
        if not isinstance(value, (int, float, np.floating)) or not np.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not 0.0 <= lambda1 <= lambda2 <= 1.0:
        raise ValueError(
            f"two-scale decay needs 0 <= lambda1 <= lambda2 <= 1, got lambda1 = {lambda1}, "
            f"lambda2 = {lambda2} (lambda1 decays observed samples, lambda2 the others)"
        )
    return float(lambda1), float(lambda2)


def _initial_state(name: str, values: np.ndarray | None, n_samples: int) -> np.ndarray:
    if values is None:
        return np.zeros(n_samples, dtype=np.float64)
    arr = np.array(values, dtype=np.float64)  # a copy: the sampler owns its state
    if arr.shape != (n_samples,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({n_samples},)")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{k}] = {arr[k]} must be a finite, non-negative count")
    return arr


class VadeSampler:
    """Selects ``batch_size`` distinct samples per step and learns from their rollouts.

    Call ``select()`` then ``observe(indices, correct, rollouts)`` once per training step.
    ``state_dict()``/``load_state_dict()`` round-trip the posterior, the step counter and every
    RNG exactly, so a resumed run makes the same selections as an uninterrupted one.
    """

    def __init__(
        self,
        n_samples: int,
        batch_size: int,
        *,
        lambda1: float = 0.2,
        lambda2: float = 0.999,
        objective: str = "asymmetric",
        exploration: str = "thompson",
        decay: str = "two-scale",
        seed: int = 0,
        alpha: np.ndarray | None = None,
        beta: np.ndarray | None = None,
        threads: int | None = None,
    ) -> None:
        check_sizes(n_samples, batch_size)
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {tuple(OBJECTIVES)}, got {objective!r}")
        if exploration not in EXPLORATIONS:
            raise ValueError(f"exploration must be one of {EXPLORATIONS}, got {exploration!r}")
        if (alpha is None) != (beta is None):
            raise ValueError("alpha and beta must be given together (or neither)")
        self.n_samples = int(n_samples)
        self.batch_size = int(batch_size)
        self.objective = objective
        self.exploration = exploration
        self.decay = decay
        self.lambda1, self.lambda2 = _decay_factors(decay, lambda1, lambda2)
        self.seed = int(seed)
        self.alpha = _initial_state("alpha", alpha, self.n_samples)
        self.beta = _initial_state("beta", beta, self.n_samples)
        self.step = 0

        root = np.random.SeedSequence(self.seed)
        control_seq, draw_seq = root.spawn(2)
        self._rng = np.random.Generator(np.random.SFC64(control_seq))
        self._scorer = ChunkedScorer(self.n_samples, draw_seq, exploration, objective, threads)
        self._p = np.empty(self.n_samples, dtype=np.float32)
        self._score = np.empty(self.n_samples, dtype=np.float32)
        self._last = (np.empty(0, np.int64), np.empty(0), np.empty(0))

    @classmethod
    def from_rollouts(
        cls, correct: np.ndarray, rollouts: np.ndarray | float, batch_size: int, **kwargs: Any
    ) -> VadeSampler:
        """Algorithm 1, lines 1-4: alpha = r, beta = G - r from G initial rollouts per sample."""
        r = np.asarray(correct, dtype=np.float64)
        _, r, g = validate_observation(np.arange(r.size), r, rollouts, r.size)
        return cls(r.size, batch_size, alpha=r, beta=g - r, **kwargs)

    @property
    def config(self) -> dict[str, Any]:
        """Everything that defines the sampler's behaviour (for run records and resume checks)."""
        return {
            "kind": "vade",
            "n_samples": self.n_samples,
            "batch_size": self.batch_size,
            "objective": self.objective,
            "exploration": self.exploration,
            "decay": self.decay,
            "lambda1": self.lambda1,
            "lambda2": self.lambda2,
            "seed": self.seed,
        }

    def select(self) -> np.ndarray:
        """Indices of the ``batch_size`` samples with the highest (drawn) gain, highest first."""
        self._scorer.fill(self.alpha, self.beta, self._p, self._score)
        chosen = top_k_random_ties(self._score, self.batch_size, self._rng)
        self._last = (chosen, self._p[chosen].astype(np.float64),
                      self._score[chosen].astype(np.float64))
        return chosen.copy()

    def observe(
        self, indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float
    ) -> Observation:
        """Apply eq. 5 to the observed samples and eq. 6 to all others; return the record."""
        idx, r, g = validate_observation(indices, correct, rollouts, self.n_samples)
        a_before = self.alpha[idx]
        b_before = self.beta[idx]
        if self.lambda2 != 1.0:
            self.alpha *= self.lambda2
            self.beta *= self.lambda2
        self.alpha[idx] = self.lambda1 * a_before + r
        self.beta[idx] = self.lambda1 * b_before + (g - r)
        self.step += 1
        p, gain = draws_for(*self._last, idx)
        return Observation(
            step=self.step, indices=idx, correct=r, rollouts=g, p_drawn=p, gain=gain,
            alpha_before=a_before, beta_before=b_before,
            alpha_after=self.alpha[idx], beta_after=self.beta[idx],
        )

    def state_dict(self) -> dict[str, Any]:
        return saved_state(_STATE_VERSION, self, alpha=self.alpha.copy(), beta=self.beta.copy(),
                           rng=self._rng.bit_generator.state,
                           draw_rngs=self._scorer.rng_state())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict``; refuses one from a differently configured sampler."""
        check_state(state, _STATE_VERSION, self.config)
        self.alpha = _initial_state("alpha", state["alpha"], self.n_samples)
        self.beta = _initial_state("beta", state["beta"], self.n_samples)
        self.step = int(state["step"])
        self._rng.bit_generator.state = state["rng"]
        self._scorer.set_rng_state(state["draw_rngs"])
        last = state["last_selection"]
        self._last = (np.array(last["indices"], dtype=np.int64), np.array(last["p"]),
                      np.array(last["gain"]))
