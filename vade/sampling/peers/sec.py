"""SEC-style curriculum: a bandit over difficulty categories, not over samples."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from vade.checks import check_number
from vade.sampling.observation import Observation, validate_observation
from vade.sampling.peers.base import PeerSampler, initial_pass_rate

__all__ = ["SECSampler", "difficulty_categories", "mean_abs_advantage"]


def difficulty_categories(pass_rate: np.ndarray, n_categories: int = 5) -> np.ndarray:
    """Difficulty category per sample from its pass rate p: min(n - 1, floor(n (1 - p))), so 0
    is the easiest (p near 1) and n - 1 the hardest (p near 0); with n = 5 and G = 8 the bands
    are r in {7, 8}, {5, 6}, {4}, {2, 3}, {0, 1}. Stands in for a dataset's difficulty labels
    (SEC uses MATH's levels 1-5)."""
    p = np.asarray(pass_rate, np.float64)
    if np.any(~np.isfinite(p) | (p < 0) | (p > 1)):
        raise ValueError("pass rates must lie in [0, 1]")
    return np.minimum(n_categories - 1, np.floor(n_categories * (1.0 - p))).astype(np.int64)


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

    Published rule (``notes/peers.md``): the arms are difficulty categories; after a step each
    trained category's value moves Q <- (1-a)Q + a * mean|advantage| of its groups (a = 0.5);
    categories are drawn with probability softmax(Q / tau) (tau 0.2-1.0).

    This implementation: B category draws per step (multinomial over the softmax), then that
    many distinct samples uniformly within each category; a category with too few samples
    passes its excess draws on to the others in proportion to their probabilities. Empty
    categories are never drawn. Q starts at ``initial_value`` (default 0: uniform over
    categories at first).

    ``categories`` (one non-negative integer per sample) is required: in the simulator it is the
    difficulty level from the initial pass rates, standing in for a dataset's difficulty labels.
    Its CRC is part of ``config``, so a state from another categorisation is refused.

    ``Observation``: ``p_drawn`` is NaN, ``gain`` the Q of the sample's category at selection.
    """

    kind = "sec"
    _STATE_ARRAYS = ("q",)

    def __init__(
        self,
        n_samples: int,
        batch_size: int,
        *,
        categories: np.ndarray,
        step_size: float = 0.5,
        temperature: float = 0.5,
        initial_value: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(n_samples, batch_size, seed)
        cat = np.asarray(categories)
        if cat.shape != (self.n_samples,):
            raise ValueError(f"categories has shape {cat.shape}, expected ({self.n_samples},)")
        if cat.size and (not np.issubdtype(cat.dtype, np.integer) or cat.min() < 0):
            raise ValueError("categories must be non-negative integers (one per sample)")
        check_number("step_size", step_size, 0.0, 1.0)
        check_number("temperature", temperature, 0.0, 1e9, lo_open=True)
        check_number("initial_value", initial_value, -1e9, 1e9)
        self.categories = cat.astype(np.int64)
        self.n_categories = int(self.categories.max()) + 1
        self.sizes = np.bincount(self.categories, minlength=self.n_categories)
        self.step_size = float(step_size)
        self.temperature = float(temperature)
        self.initial_value = float(initial_value)
        self.q = np.full(self.n_categories, self.initial_value)
        # Where category c begins once samples are sorted by category.
        self._starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])

    @classmethod
    def for_run(cls, n_samples: int, batch_size: int, *, seed: int,
                alpha: np.ndarray | None = None, beta: np.ndarray | None = None
                ) -> SECSampler:
        """Categories from the initial difficulty rollouts (``difficulty_categories``, 5)."""
        p = initial_pass_rate(alpha, beta, n_samples, "sec")
        return cls(n_samples, batch_size, seed=seed, categories=difficulty_categories(p))

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
                "initial_value": self.initial_value}

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
        self.q[seen] = ((1.0 - self.step_size) * self.q[seen]
                        + self.step_size * total[seen] / n[seen])
        self.step += 1
        p, gain = self._last_for(idx)
        return Observation(step=self.step, indices=idx, correct=r, rollouts=g, p_drawn=p,
                           gain=gain)
