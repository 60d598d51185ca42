"""SEC: a bandit over the data's difficulty labels (as published), and ``sec-passrate``, the
variant over bins of the initial pass rate."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from vade.checks import check_number
from vade.sampling.observation import Observation, validate_observation
from vade.sampling.peers.base import PeerSampler, initial_pass_rate

__all__ = ["SECPassRateSampler", "SECSampler", "difficulty_categories", "label_categories",
           "mean_abs_advantage"]


def difficulty_categories(pass_rate: np.ndarray, n_categories: int = 5) -> np.ndarray:
    """Difficulty category per sample from its pass rate p: min(n - 1, floor(n (1 - p))), so 0
    is the easiest (p near 1) and n - 1 the hardest (p near 0); with n = 5 and G = 8 the bands
    are r in {7, 8}, {5, 6}, {4}, {2, 3}, {0, 1}. Stands in for a dataset's difficulty labels
    (SEC uses MATH's levels 1-5)."""
    p = np.asarray(pass_rate, np.float64)
    if np.any(~np.isfinite(p) | (p < 0) | (p > 1)):
        raise ValueError("pass rates must lie in [0, 1]")
    return np.minimum(n_categories - 1, np.floor(n_categories * (1.0 - p))).astype(np.int64)


def label_categories(labels: Sequence[Any], n_levels: int = 5) -> np.ndarray:
    """Arms from the data's own difficulty labels (``extra_info.difficulty``), one per sample.

    Integer labels (MATH's levels 1-5, as SEC uses) are arms as they are, numbered in sorted
    order; float labels must lie in [0, 1] (the synthetic data's rendering difficulty) and are
    cut into ``n_levels`` equal-width levels, floor(n d), d = 1 in the top level. A missing label
    is an error naming its row: SEC without labels is the ``sec-passrate`` variant, not SEC.
    """
    values: list[float] = []
    integers = True
    for row, label in enumerate(labels):
        if isinstance(label, np.generic):
            label = label.item()
        if isinstance(label, bool) or not isinstance(label, (int, float)) \
                or not np.isfinite(label):
            raise ValueError(f"training row {row}: extra_info.difficulty is {label!r}; method sec "
                             "bandits over the data's difficulty labels (use sec-passrate for "
                             "bins of the initial pass rate)")
        integers = integers and isinstance(label, int)
        values.append(float(label))
    d = np.asarray(values, np.float64)
    if integers:
        return np.unique(d, return_inverse=True)[1].astype(np.int64)
    bad = (d < 0) | (d > 1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"training row {row}: extra_info.difficulty = {d[row]:g} is a float "
                         "outside [0, 1] (integer levels or a difficulty in [0, 1] expected)")
    return np.minimum(np.floor(d * n_levels), n_levels - 1).astype(np.int64)


def mean_abs_advantage(correct: np.ndarray, rollouts: np.ndarray) -> np.ndarray:
    """Mean |A| of a GRPO group with r correct of G binary rewards, per group.

    A_j = (R_j - mean) / std with the unbiased std (``torch.std``'s default), so for p = r/G:
    mean |A| = 2 sqrt(p(1-p)) sqrt((G-1)/G); 0 for r in {0, G} (GRPO's epsilon ignored) and for
    G = 1.
    """
    r = np.asarray(correct, dtype=np.float64)
    g = np.asarray(rollouts, dtype=np.float64)
    p = r / g
    factor = np.sqrt(np.clip(g - 1.0, 0.0, None) / g)
    return 2.0 * np.sqrt(p * (1.0 - p)) * factor


class SECSampler(PeerSampler):
    """Boltzmann choice of difficulty categories by their recent mean |advantage|.

    The published method (SEC's release; README commands, mirrored in Vincent-La/cofa
    ``sec/README.md``): the arms are the dataset's own difficulty labels (MATH's levels 1-5;
    ``priority.py:38-39`` of the release); after a step every arm's value moves
    Q <- (1-a) Q + a * reward, a = 0.5 (``trainer.sec.bandit.lr=0.5``), where reward is the mean
    |advantage| of the arm's groups this step and 0 for an arm not trained on, so every arm
    decays; arms are drawn with probability softmax(Q / tau), tau = 0.4 for MATH
    (``trainer.sec.bandit.temperature=0.4``; 1.0 Countdown, 0.2 the 2D puzzles). ``for_run``
    takes the arms from ``extra_info.difficulty`` (``label_categories``): it reads no rollouts.

    Here: B arm draws per step (multinomial over the softmax), then that many distinct samples
    uniformly within each arm (SEC keeps a shuffled queue per arm: no repeats within a batch
    either); an arm with too few samples passes its excess draws on to the others in proportion
    to their probabilities. Empty arms are never drawn. Q starts at ``initial_value`` (default 0:
    uniform over arms at first). ``categories`` (one non-negative integer per sample) is
    required; its CRC is part of ``config``, so a state from other arms is refused.

    ``Observation``: ``p_drawn`` is NaN, ``gain`` the Q of the sample's category at selection.
    """

    kind = "sec"
    DEFAULTS: ClassVar[dict[str, Any]] = {"temperature": 0.4, "decay_all": True}
    _STATE_ARRAYS = ("q",)

    def __init__(
        self,
        n_samples: int,
        batch_size: int,
        *,
        categories: np.ndarray,
        step_size: float = 0.5,
        temperature: float | None = None,
        decay_all: bool | None = None,
        initial_value: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(n_samples, batch_size, seed)
        cat = np.asarray(categories)
        if cat.shape != (self.n_samples,):
            raise ValueError(f"categories has shape {cat.shape}, expected ({self.n_samples},)")
        if cat.size and (not np.issubdtype(cat.dtype, np.integer) or cat.min() < 0):
            raise ValueError("categories must be non-negative integers (one per sample)")
        temperature = self.DEFAULTS["temperature"] if temperature is None else temperature
        decay_all = self.DEFAULTS["decay_all"] if decay_all is None else decay_all
        check_number("step_size", step_size, 0.0, 1.0)
        check_number("temperature", temperature, 0.0, 1e9, lo_open=True)
        check_number("initial_value", initial_value, -1e9, 1e9)
        if not isinstance(decay_all, (bool, np.bool_)):
            raise ValueError(f"decay_all must be true or false, got {decay_all!r}")
        self.categories = cat.astype(np.int64)
        self.n_categories = int(self.categories.max()) + 1
        self.sizes = np.bincount(self.categories, minlength=self.n_categories)
        self.step_size = float(step_size)
        self.temperature = float(temperature)
        self.decay_all = bool(decay_all)
        self.initial_value = float(initial_value)
        self.q = np.full(self.n_categories, self.initial_value)
        # Where category c begins once samples are sorted by category.
        self._starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])

    @classmethod
    def for_run(cls, n_samples: int, batch_size: int, *, seed: int,
                alpha: np.ndarray | None = None, beta: np.ndarray | None = None,
                labels: Sequence[Any] | None = None) -> SECSampler:
        """Arms from the data's difficulty labels (``label_categories``)."""
        if labels is None:
            raise ValueError("method sec needs the training rows' extra_info.difficulty labels")
        if len(labels) != n_samples:
            raise ValueError(f"method sec: {len(labels)} difficulty labels for {n_samples} rows")
        return cls(n_samples, batch_size, seed=seed, categories=label_categories(labels))

    def sample_state(self) -> dict[str, np.ndarray]:
        """Each sample's category and its category's value Q."""
        return {"category": self.categories, "q": self.q[self.categories]}

    def scalar_state(self) -> dict[str, float]:
        """Q of every category (``q0`` .. ``q<n-1>``)."""
        return {f"q{c}": float(v) for c, v in enumerate(self.q)}

    def _hyper(self) -> dict[str, Any]:
        crc = zlib.crc32(self.categories.astype("<i8").tobytes())
        return {"n_categories": self.n_categories, "categories_crc32": crc,
                "step_size": self.step_size, "temperature": self.temperature,
                "decay_all": self.decay_all, "initial_value": self.initial_value}

    def category_probabilities(self) -> np.ndarray:
        """softmax(Q / tau) over non-empty categories (0 for empty ones)."""
        logits = np.where(self.sizes > 0, self.q / self.temperature, -np.inf)
        e = np.exp(logits - logits.max())
        return e / e.sum()

    def _counts(self, probs: np.ndarray) -> np.ndarray:
        """Draws per category: multinomial, excess over a category's size passed on."""
        counts = self._rng.multinomial(self.batch_size, probs)
        # Excess only goes where there is room, and total room >= B: this ends (a few passes).
        while (excess := int(np.maximum(counts - self.sizes, 0).sum())) > 0:
            counts = np.minimum(counts, self.sizes)
            room = np.where(counts < self.sizes, probs, 0.0)
            if room.sum() <= 0:  # probabilities underflowed: spread by remaining room instead
                room = (self.sizes - counts).astype(np.float64)
            counts = counts + self._rng.multinomial(excess, room / room.sum())
        return counts

    def select(self) -> np.ndarray:
        """Category counts from the Boltzmann policy, then distinct samples within each."""
        probs = self.category_probabilities()
        counts = self._counts(probs)
        keys = self._rng.random(self.n_samples)
        # Within each category, a random order: sort by (category, key).
        order = np.lexsort((keys, self.categories))
        cat_sorted = self.categories[order]
        rank = np.arange(self.n_samples) - self._starts[cat_sorted]
        chosen = self._rng.permutation(order[rank < counts[cat_sorted]])
        cat = self.categories[chosen]
        return self._remember(chosen, np.full(chosen.size, np.nan), self.q[cat])

    def observe(
        self, indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float
    ) -> Observation:
        """Move each trained category's Q toward its groups' mean |advantage|."""
        idx, r, g = validate_observation(indices, correct, rollouts, self.n_samples)
        cat = self.categories[idx]
        n = np.bincount(cat, minlength=self.n_categories)
        total = np.bincount(cat, weights=mean_abs_advantage(r, g), minlength=self.n_categories)
        seen = n > 0
        moved = seen | self.decay_all  # published: an arm not trained on gets reward 0
        reward = np.divide(total, n, out=np.zeros(self.n_categories), where=seen)
        self.q[moved] = (1.0 - self.step_size) * self.q[moved] + self.step_size * reward[moved]
        self.step += 1
        p, gain = self._last_for(idx)
        return Observation(step=self.step, indices=idx, correct=r, rollouts=g, p_drawn=p,
                           gain=gain)


class SECPassRateSampler(SECSampler):
    """``sec-passrate`` (a variant, not SEC): arms are 5 bins of each sample's initial pass
    rate (``difficulty_categories``), read from the initial difficulty rollouts that VADE pays
    for (N x G rollouts, counted on this method's cost axis); tau 0.5 and only trained arms
    move. This is what this project ran as "SEC" before the data's labels were used; it knows
    each prompt's measured difficulty, which published SEC does not."""

    kind = "sec-passrate"
    DEFAULTS: ClassVar[dict[str, Any]] = {"temperature": 0.5, "decay_all": False}

    @classmethod
    def for_run(cls, n_samples: int, batch_size: int, *, seed: int,
                alpha: np.ndarray | None = None, beta: np.ndarray | None = None,
                labels: Sequence[Any] | None = None) -> SECPassRateSampler:
        """Categories from the initial difficulty rollouts (``difficulty_categories``, 5)."""
        p = initial_pass_rate(alpha, beta, n_samples, "sec-passrate")
        return cls(n_samples, batch_size, seed=seed, categories=difficulty_categories(p))
