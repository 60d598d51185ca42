"""The simulated environment: N samples whose latent pass rates move as the policy trains.

The model, stated plainly (it is a model of the paper's *story*, not of any network):

* Sample i has a latent logit z_i and pass rate p_i = c_i * sigmoid(z_i), with ceiling c_i = 1
  except for the unlearnable and noisy samples below. Initial pass rates are drawn
  from Beta(difficulty_a, difficulty_b), clipped to [1e-3, 1 - 1e-3]; a U-shaped Beta gives the
  bimodal "mostly solved or mostly failed" start that LLM pass rates show.
* A share ``unlearnable_fraction`` of samples is unlearnable: p = 0 forever (a wrong reference
  answer, or a problem beyond the model). They never move and always give r = 0.
* A share ``noisy_fraction`` is noisy: p = c_i * sigmoid(z_i) with a ceiling c_i drawn uniformly
  from [noisy_ceiling_low, noisy_ceiling_high] (an ambiguous question, a brittle verifier). They
  learn like the others but never get solved, so they stay informative forever: the pool that
  keeps a difficulty-tracking sampler's ratio high late in training, and a reminder that an
  informative group is not the same as progress.
* Rollouts: r_i ~ Binomial(G, p_i) at the current pass rate. Generating changes nothing.
* Learning: a learnable sample trained on with an informative group (0 < r < G) moves its logit
  by dz = learning_rate * (1 - sigmoid(z))^learning_exponent. The default exponent 0 (a constant
  logit step, expected pass-rate gain p(1-p)) is deliberately neutral: exponent 1 would make the
  gain p(1-p)^2, the paper's eq. 4 taken as ground truth, and so build VADE's premise into the
  judge. A group with r in {0, G} has zero advantage in GRPO/GSPO, so it teaches nothing.
* Generalisation: a share ``generalisation_rate`` of a step's total logit learning spreads evenly
  over the whole dataset: every learnable sample not learned from this step moves by
  generalisation_rate * sum(dz) / N. Hard samples (r = 0 today) become solvable only this way,
  which is why a sampler must revisit stale estimates (VADE's lambda2).

Why the defaults reproduce Figure 1 (uniform sampling, effective-gradient ratio decaying to about
10% late in training) is documented on :class:`DynamicsParams` and in ``config/simulate.yaml``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from vade.checks import check_number as _check_number

__all__ = ["DynamicsParams", "PassRateEnv"]

_P_CLIP = 1e-3


@dataclass(frozen=True)
class DynamicsParams:
    """Parameters of the environment; validated on construction.

    Defaults mirror the paper's training setup (9,471 samples, G = 8; B = 512 and 15 epochs live
    in ``RunSettings``) and were tuned so that uniform sampling reproduces Figure 1's left half:
    the effective-gradient ratio starts near 0.6 (a U-shaped Beta(0.6, 0.6) start: many samples
    already solved or failed) and decays to about 0.1 in the last tenth of training, because
    trained and generalised samples get solved (r = G) while the 5% unlearnable ones stay at
    r = 0. The 8% noisy samples (ceilings 0.2-0.8) are the informative pool that a sampler which
    tracks difficulty can still fill its batches from late in training (Figure 1's right half);
    since they cannot be solved, a high late ratio is not by itself progress.
    """

    n_samples: int = 9471
    group_size: int = 8
    learning_rate: float = 0.5
    learning_exponent: float = 0.0
    generalisation_rate: float = 3.0
    unlearnable_fraction: float = 0.05
    noisy_fraction: float = 0.08
    noisy_ceiling_low: float = 0.2
    noisy_ceiling_high: float = 0.8
    difficulty_a: float = 0.6
    difficulty_b: float = 0.6
    n_categories: int = 5

    def __post_init__(self) -> None:
        _check_number("n_samples", self.n_samples, 1, 1e9, integer=True)
        _check_number("group_size", self.group_size, 1, 1e6, integer=True)
        _check_number("learning_rate", self.learning_rate, 0.0, 100.0)
        _check_number("learning_exponent", self.learning_exponent, 0.0, 10.0)
        _check_number("generalisation_rate", self.generalisation_rate, 0.0, 1e6)
        _check_number("unlearnable_fraction", self.unlearnable_fraction, 0.0, 1.0)
        _check_number("noisy_fraction", self.noisy_fraction, 0.0, 1.0)
        if self.unlearnable_fraction + self.noisy_fraction > 1.0:
            raise ValueError(
                f"unlearnable_fraction + noisy_fraction = "
                f"{self.unlearnable_fraction + self.noisy_fraction} exceeds 1"
            )
        _check_number("noisy_ceiling_low", self.noisy_ceiling_low, 0.0, 1.0, lo_open=True)
        _check_number("noisy_ceiling_high", self.noisy_ceiling_high, self.noisy_ceiling_low, 1.0)
        _check_number("difficulty_a", self.difficulty_a, 0.0, 1e6, lo_open=True)
        _check_number("difficulty_b", self.difficulty_b, 0.0, 1e6, lo_open=True)
        _check_number("n_categories", self.n_categories, 1, self.n_samples, integer=True)

    @classmethod
    def from_dict(cls, values: dict[str, Any], where: str = "dynamics") -> "DynamicsParams":
        """Build from a config mapping; unknown keys are an error naming the key."""
        known = {f.name for f in fields(cls)}
        for key in values:
            if key not in known:
                raise ValueError(f"unknown key {where}.{key} (known: {', '.join(sorted(known))})")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic


class PassRateEnv:
    """Latent pass rates of N samples; ``rollout`` draws outcomes, ``train`` moves the rates.

    ``step(indices)`` is one plain training step (generate G rollouts each, train on them).
    Samplers never see this object: they see only (indices, r, G), as in a real trainer.
    """

    def __init__(self, params: DynamicsParams, seed: int = 0) -> None:
        self.params = params
        self.seed = int(seed)
        # Entropy distinct from the samplers' SeedSequence(seed): independent streams.
        init_seq, outcome_seq = np.random.SeedSequence([self.seed, 0x51A]).spawn(2)
        init = np.random.Generator(np.random.SFC64(init_seq))
        self._rng = np.random.Generator(np.random.SFC64(outcome_seq))
        n = params.n_samples
        p0 = np.clip(init.beta(params.difficulty_a, params.difficulty_b, size=n),
                     _P_CLIP, 1.0 - _P_CLIP)
        self.logit = np.log(p0) - np.log1p(-p0)
        n_unlearnable = int(round(params.unlearnable_fraction * n))
        n_noisy = int(round(params.noisy_fraction * n))
        order = init.permutation(n)
        self.ceiling = np.ones(n)
        self.ceiling[order[:n_unlearnable]] = 0.0
        noisy = order[n_unlearnable:n_unlearnable + n_noisy]
        self.ceiling[noisy] = init.uniform(params.noisy_ceiling_low, params.noisy_ceiling_high,
                                           size=n_noisy)
        self.learnable = self.ceiling > 0.0
        # Difficulty levels (SEC's arms): equal-size quantile bins of the initial pass rate,
        # hardest first, ties broken at random. A stand-in for a dataset's difficulty labels.
        rank = np.empty(n, dtype=np.int64)
        rank[np.lexsort((init.random(n), self.pass_rate))] = np.arange(n)
        self.category = (rank * params.n_categories) // n
        self.initial_pass_rate = self.pass_rate
        self.steps_trained = 0

    @property
    def pass_rate(self) -> np.ndarray:
        """Current true pass rates (a fresh array): ceiling * sigmoid(logit)."""
        return self.ceiling * _sigmoid(self.logit)

    def mean_pass_rate(self) -> float:
        """The simulator's stand-in for accuracy: the mean true pass rate over the dataset."""
        return float(self.pass_rate.mean())

    def _check_indices(self, indices: np.ndarray) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64)
        if idx.ndim != 1:
            raise ValueError(f"indices must be 1-D, got shape {idx.shape}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.params.n_samples):
            raise ValueError(f"indices must lie in [0, {self.params.n_samples})")
        return idx

    def rollout(self, indices: np.ndarray, n: int | None = None) -> np.ndarray:
        """r ~ Binomial(n, p) per index (n defaults to G); draws only, no state change."""
        idx = self._check_indices(indices)
        n = self.params.group_size if n is None else int(n)
        return self._rng.binomial(n, self.pass_rate[idx]).astype(np.int64)

    def train(self, indices: np.ndarray, correct: np.ndarray, rollouts: int | None = None) -> int:
        """Apply one training step on (distinct) ``indices`` with outcomes ``correct``.

        Returns how many samples learned (learnable and informative). Learned samples move by
        the learning rule; every other learnable sample drifts by the generalisation rule.
        """
        idx = self._check_indices(indices)
        r = np.asarray(correct)
        if r.shape != idx.shape:
            raise ValueError(f"correct has shape {r.shape}, expected {idx.shape}")
        if np.unique(idx).size != idx.size:
            raise ValueError("indices trained in one step must be distinct")
        g = self.params.group_size if rollouts is None else int(rollouts)
        informative = (r > 0) & (r < g) & self.learnable[idx]
        learned = idx[informative]
        p = _sigmoid(self.logit[learned])
        dz = self.params.learning_rate * (1.0 - p) ** self.params.learning_exponent
        drift = self.params.generalisation_rate * float(dz.sum()) / self.params.n_samples
        if drift:
            self.logit[self.learnable] += drift
            self.logit[learned] -= drift  # learned samples get their own update instead
        self.logit[learned] += dz
        self.steps_trained += 1
        return int(learned.size)

    def step(self, indices: np.ndarray) -> np.ndarray:
        """One plain step: G rollouts per index, then train on them. Returns r."""
        r = self.rollout(indices)
        self.train(indices, r)
        return r
