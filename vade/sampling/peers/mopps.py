"""MoPPS-style Beta-bandit prompt selection (a peer of VADE, for the simulator and training)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vade.checks import check_number
from vade.sampling.observation import Observation, validate_observation
from vade.sampling.peers.base import PeerSampler, initial_pass_rate
from vade.sampling.topk import top_k_random_ties

__all__ = ["MoPPSPriorSampler", "MoPPSSampler"]


class MoPPSSampler(PeerSampler):
    """Beta posterior per prompt, Thompson draw over a random candidate pool, closest to 0.5.

    Published rule (``notes/peers.md``): a Beta(a_i, b_i) posterior per prompt; only *sampled*
    prompts are updated, a <- l*a + (1-l)*a0 + r, b <- l*b + (1-l)*b0 + (G - r) with l = 0.5
    or 1.0; each step a candidate pool of 8-16x B prompts is drawn, one p~ per candidate from its
    posterior, and the B candidates with the smallest (p~ - 0.5)^2 are trained on.

    Differences from VADE, which the simulator is there to expose: the posterior is Beta(a, b)
    itself (prior a0 = b0 = 1, no "+1"), unsampled prompts never decay (no eq. 6), the target is
    symmetric (0.5, not p(1-p)^2's 1/3), and only a pool is scored.

    Simplifications: the pool is drawn uniformly without replacement (min(N, pool_factor * B)
    prompts); ties in the score are broken by the seeded RNG (``top_k_random_ties``).

    Args: ``decay`` (l, in [0, 1]; default 0.5), ``prior_alpha``/``prior_beta`` (a0, b0 > 0;
    default 1), ``pool_factor`` (>= 1; default 8), ``target`` (in [0, 1]; default 0.5), ``seed``;
    ``initial_correct``/``initial_failed`` (optional, per sample): MoPPS's published prior from
    an initial evaluation, a = ``prior_weight`` * successes + a0, b = ``prior_weight`` *
    failures + b0 (thu-rllab/MoPPS ``recipe/ours/mopps.py:93-94``, weight 3).

    ``Observation``: ``p_drawn`` is the Thompson draw, ``gain`` the score -(p~ - target)^2.
    """

    kind = "mopps"
    _STATE_ARRAYS = ("a", "b")

    def __init__(
        self,
        n_samples: int,
        batch_size: int,
        *,
        decay: float = 0.5,
        prior_alpha: float = 1.0,
        prior_beta: float = 1.0,
        pool_factor: float = 8.0,
        target: float = 0.5,
        prior_weight: float = 3.0,
        initial_correct: np.ndarray | None = None,
        initial_failed: np.ndarray | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(n_samples, batch_size, seed)
        check_number("decay", decay, 0.0, 1.0)
        check_number("prior_alpha", prior_alpha, 0.0, 1e9, lo_open=True)
        check_number("prior_beta", prior_beta, 0.0, 1e9, lo_open=True)
        check_number("pool_factor", pool_factor, 1.0, 1e9)
        check_number("target", target, 0.0, 1.0)
        check_number("prior_weight", prior_weight, 0.0, 1e9)
        self.decay = float(decay)
        self.prior_alpha = float(prior_alpha)
        self.prior_beta = float(prior_beta)
        self.pool_factor = float(pool_factor)
        self.target = float(target)
        self.pool_size = min(self.n_samples, int(np.ceil(self.pool_factor * self.batch_size)))
        self.prior_weight = float(prior_weight)
        self.a = np.full(self.n_samples, self.prior_alpha)
        self.b = np.full(self.n_samples, self.prior_beta)
        self.from_initial = initial_correct is not None or initial_failed is not None
        if self.from_initial:
            if initial_correct is None or initial_failed is None:
                raise ValueError("MoPPS's initial prior needs both initial_correct and "
                                 "initial_failed")
            initial_pass_rate(initial_correct, initial_failed, self.n_samples, "mopps")
            self.a += self.prior_weight * np.asarray(initial_correct, np.float64)
            self.b += self.prior_weight * np.asarray(initial_failed, np.float64)

    def _hyper(self) -> dict[str, Any]:
        return {"decay": self.decay, "prior_alpha": self.prior_alpha,
                "prior_beta": self.prior_beta, "pool_factor": self.pool_factor,
                "target": self.target, "prior_weight": self.prior_weight,
                "from_initial": self.from_initial}

    def posterior_mean(self) -> np.ndarray:
        return self.a / (self.a + self.b)

    def select(self) -> np.ndarray:
        """Thompson draw over the pool; the B candidates closest to ``target``, closest first."""
        if self.pool_size < self.n_samples:
            pool = self._rng.choice(self.n_samples, size=self.pool_size, replace=False)
        else:
            pool = np.arange(self.n_samples)
        p = self._rng.beta(self.a[pool], self.b[pool])
        score = -((p - self.target) ** 2)
        best = top_k_random_ties(score, self.batch_size, self._rng)
        return self._remember(pool[best], p[best], score[best])

    def observe(
        self, indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float
    ) -> Observation:
        """Decay-and-add on the observed prompts only; the others keep their posterior."""
        idx, r, g = validate_observation(indices, correct, rollouts, self.n_samples)
        lam = self.decay
        self.a[idx] = lam * self.a[idx] + (1.0 - lam) * self.prior_alpha + r
        self.b[idx] = lam * self.b[idx] + (1.0 - lam) * self.prior_beta + (g - r)
        self.step += 1
        p, gain = self._last_for(idx)
        return Observation(step=self.step, indices=idx, correct=r, rollouts=g, p_drawn=p,
                           gain=gain)


class MoPPSPriorSampler(MoPPSSampler):
    """``mopps-prior``: MoPPS with its published option of a prior from an initial evaluation
    (a = 3 successes + 1, b = 3 failures + 1), the successes being the initial difficulty
    rollouts VADE also reads (N x G rollouts on this method's cost axis)."""

    kind = "mopps-prior"

    @classmethod
    def for_run(cls, n_samples: int, batch_size: int, *, seed: int,
                alpha: np.ndarray | None = None, beta: np.ndarray | None = None,
                **_: object) -> MoPPSPriorSampler:
        """The prior from the initial rollouts (alpha = r successes, beta = G - r failures)."""
        initial_pass_rate(alpha, beta, n_samples, "mopps-prior")  # present and well formed
        return cls(n_samples, batch_size, seed=seed, initial_correct=alpha, initial_failed=beta)
