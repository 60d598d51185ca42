"""Properties over random inputs (hypothesis): top-k exactness, the update rule, the baseline."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vade.sampling import UniformSampler, VadeSampler, effective_gradient_ratio, top_k_random_ties

scores_strategy = arrays(np.float32, st.integers(1, 3000),
                         elements=st.floats(0, 1, width=32) | st.sampled_from([0.25, 0.5]))


@given(scores=scores_strategy, data=st.data())
@settings(max_examples=150, deadline=None)
def test_top_k_is_exactly_the_k_largest(scores, data):
    k = data.draw(st.integers(1, scores.size))
    chosen = top_k_random_ties(scores, k, np.random.default_rng(0))
    assert chosen.size == k and np.unique(chosen).size == k
    kth = np.sort(scores)[::-1][k - 1]
    # every score above the k-th largest is in, every chosen score is >= it
    assert np.all(scores[chosen] >= kth)
    assert np.count_nonzero(scores > kth) <= k
    assert set(np.flatnonzero(scores > kth)) <= set(chosen.tolist())
    assert np.all(np.diff(scores[chosen]) <= 0)  # highest first


def test_top_k_survives_an_adversarial_order():
    # ascending scores defeat the strided threshold estimate; the result must still be exact
    scores = np.linspace(0, 1, 200_000, dtype=np.float32)
    chosen = top_k_random_ties(scores, 512, np.random.default_rng(0))
    np.testing.assert_array_equal(np.sort(chosen), np.arange(200_000 - 512, 200_000))


def test_ties_are_broken_uniformly_not_by_index():
    scores = np.zeros(10, dtype=np.float32)
    rng = np.random.default_rng(0)
    counts = np.zeros(10)
    trials = 4000
    for _ in range(trials):
        counts[top_k_random_ties(scores, 3, rng)] += 1
    freq = counts / trials  # each index should win with probability 3/10
    assert np.all(np.abs(freq - 0.3) < 5 * np.sqrt(0.3 * 0.7 / trials))


@given(
    n=st.integers(2, 200),
    lam=st.tuples(st.floats(0, 1), st.floats(0, 1)).map(sorted),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
@settings(max_examples=100, deadline=None)
def test_observe_applies_eq5_to_observed_and_eq6_to_the_rest(n, lam, seed, data):
    rng = np.random.default_rng(seed)
    alpha, beta = rng.random(n) * 10, rng.random(n) * 10
    s = VadeSampler(n, 1, alpha=alpha, beta=beta, lambda1=lam[0], lambda2=lam[1], seed=seed)
    m = data.draw(st.integers(1, n))
    idx = rng.choice(n, m, replace=False)
    g = rng.integers(1, 17, m).astype(float)
    r = np.floor(rng.random(m) * (g + 1))
    s.observe(idx, r, g)
    rest = np.setdiff1d(np.arange(n), idx)
    np.testing.assert_allclose(s.alpha[idx], lam[0] * alpha[idx] + r, rtol=1e-12)
    np.testing.assert_allclose(s.beta[idx], lam[0] * beta[idx] + (g - r), rtol=1e-12)
    np.testing.assert_allclose(s.alpha[rest], lam[1] * alpha[rest], rtol=1e-12)
    np.testing.assert_allclose(s.beta[rest], lam[1] * beta[rest], rtol=1e-12)
    assert np.all(s.alpha >= 0) and np.all(s.beta >= 0)


@given(n=st.integers(1, 5000), data=st.data(), seed=st.integers(0, 1000))
@settings(max_examples=60, deadline=None)
def test_select_returns_batch_size_distinct_valid_indices(n, data, seed):
    b = data.draw(st.integers(1, n))
    idx = VadeSampler(n, b, seed=seed).select()
    assert idx.size == b and np.unique(idx).size == b
    assert idx.min() >= 0 and idx.max() < n


@pytest.mark.parametrize("n, b", [(12, 4), (10, 3), (7, 7)])
def test_uniform_visits_each_sample_at_most_once_per_epoch(n, b):
    s = UniformSampler(n, b, seed=1)
    per_epoch = n // b
    for _ in range(3):
        epoch = np.concatenate([s.select() for _ in range(per_epoch)])
        assert np.unique(epoch).size == epoch.size == per_epoch * b
    assert s.epoch == 2


def test_uniform_epochs_differ_and_are_seeded():
    a, b = UniformSampler(100, 10, seed=1), UniformSampler(100, 10, seed=1)
    first = [a.select() for _ in range(20)]
    assert all(np.array_equal(x, b.select()) for x in first)
    assert not np.array_equal(np.concatenate(first[:10]), np.concatenate(first[10:]))


def test_effective_gradient_ratio_by_hand():
    assert effective_gradient_ratio([0, 3, 8, 5], 8) == 0.5
    assert effective_gradient_ratio([0, 3, 4, 1], [4, 4, 4, 1]) == 0.25
    assert np.isnan(effective_gradient_ratio([], 8))
