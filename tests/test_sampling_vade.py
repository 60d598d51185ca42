"""VadeSampler: the paper's update rules, objectives, exploration, determinism and resume."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from vade.sampling import VadeSampler, make_sampler
from vade.sampling.draws import CHUNK_SIZE, greedy_estimate

ALPHA = np.array([2.0, 0.0, 5.0, 1.0])
BETA = np.array([6.0, 8.0, 3.0, 7.0])


def test_two_scale_decay_matches_hand_computed_eqs_5_and_6():
    s = VadeSampler(4, 2, alpha=ALPHA, beta=BETA, lambda1=0.2, lambda2=0.999)
    obs = s.observe([0, 2], [3, 8], 8)
    # eq. 5 on observed: 0.2*2+3, 0.2*6+5 ; 0.2*5+8, 0.2*3+0
    # eq. 6 on the others: 0.999*0, 0.999*8 ; 0.999*1, 0.999*7
    np.testing.assert_allclose(s.alpha, [3.4, 0.0, 9.0, 0.999], rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.beta, [6.2, 7.992, 0.6, 6.993], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(obs.alpha_before, [2.0, 5.0])
    np.testing.assert_allclose(obs.alpha_after, [3.4, 9.0], atol=1e-12)
    # a second step: sample 1 observed with r=4 of G=8, the rest decay again
    s.observe([1], [4], 8)
    np.testing.assert_allclose(s.alpha, [3.4 * 0.999, 0.2 * 0.0 + 4, 9.0 * 0.999, 0.999 ** 2],
                               atol=1e-12)
    np.testing.assert_allclose(s.beta, [6.2 * 0.999, 0.2 * 7.992 + 4, 0.6 * 0.999, 6.993 * 0.999],
                               atol=1e-12)
    assert s.step == 2


def test_per_index_rollouts_are_used_per_sample():
    s = VadeSampler(4, 2, alpha=ALPHA, beta=BETA, lambda1=0.5, lambda2=1.0)
    s.observe([1, 3], [2, 5], [4, 6])
    np.testing.assert_allclose(s.alpha, [2.0, 2.0, 5.0, 5.5])
    np.testing.assert_allclose(s.beta, [6.0, 0.5 * 8 + 2, 3.0, 0.5 * 7 + 1])


def test_last_update_keeps_only_latest_observation_and_freezes_the_rest():
    s = VadeSampler(4, 2, alpha=ALPHA, beta=BETA, decay="last-update")
    s.observe([0, 2], [3, 8], 8)
    np.testing.assert_array_equal(s.alpha, [3.0, 0.0, 8.0, 1.0])
    np.testing.assert_array_equal(s.beta, [5.0, 8.0, 0.0, 7.0])
    assert (s.lambda1, s.lambda2) == (0.0, 1.0)


def test_no_decay_accumulates_counts():
    s = VadeSampler(4, 1, alpha=ALPHA, beta=BETA, decay="none")
    s.observe([3], [2], 8)
    s.observe([3], [1], 8)
    np.testing.assert_array_equal(s.alpha, [2.0, 0.0, 5.0, 4.0])
    np.testing.assert_array_equal(s.beta, [6.0, 8.0, 3.0, 20.0])


def test_initialisation_from_initial_rollouts_is_algorithm_1_lines_1_to_4():
    s = VadeSampler.from_rollouts([0, 3, 8], 8, batch_size=1)
    np.testing.assert_array_equal(s.alpha, [0, 3, 8])
    np.testing.assert_array_equal(s.beta, [8, 5, 0])
    with pytest.raises(ValueError, match=r"correct\[1\] = 9 exceeds rollouts\[1\] = 8"):
        VadeSampler.from_rollouts([0, 9], 8, batch_size=1)


def _greedy(method: str, alpha, beta, seed: int = 0, k: int = 1):
    return make_sampler(method if method != "vade" else "greedy", len(alpha), k, seed=seed,
                        alpha=np.asarray(alpha, float), beta=np.asarray(beta, float))


def test_asymmetric_objective_prefers_the_harder_sample_at_equal_variance():
    # greedy estimates a/(a+b): 3/10 = 0.3 and 7/10 = 0.7, equal p(1-p) = 0.21
    alpha, beta = [3.0, 7.0], [7.0, 3.0]
    picks = [VadeSampler(2, 1, alpha=np.array(alpha), beta=np.array(beta), exploration="greedy",
                         seed=seed).select()[0] for seed in range(40)]
    assert set(picks) == {0}  # 0.3 * 0.49 = 0.147 > 0.7 * 0.09 = 0.063
    sym = [VadeSampler(2, 1, alpha=np.array(alpha), beta=np.array(beta), exploration="greedy",
                       objective="symmetric", seed=seed).select()[0] for seed in range(40)]
    assert set(sym) == {0, 1}  # a tie: broken by the seeded RNG, both win sometimes


def test_objectives_peak_where_the_paper_says():
    # greedy estimates on a grid: the asymmetric gain peaks at p = 1/3, the symmetric at p = 1/2
    a = np.arange(1, 20, dtype=float)
    b = 20 - a  # estimates a / 20 = 0.05 ... 0.95
    means = a / 20
    asym = VadeSampler(19, 1, alpha=a, beta=b, exploration="greedy").select()[0]
    sym = VadeSampler(19, 1, alpha=a, beta=b, exploration="greedy",
                      objective="symmetric").select()[0]
    assert means[asym] == pytest.approx(0.35)  # the grid point nearest 1/3
    assert means[sym] == pytest.approx(0.5)


def test_greedy_is_deterministic_and_ignores_the_seed_without_ties():
    rng = np.random.default_rng(3)
    alpha, beta = rng.random(500) * 8, rng.random(500) * 8
    picks = {tuple(VadeSampler(500, 32, alpha=alpha, beta=beta, exploration="greedy",
                               seed=seed).select()) for seed in range(5)}
    assert len(picks) == 1
    mean = alpha / (alpha + beta)
    gain = mean * (1 - mean) ** 2
    np.testing.assert_array_equal(np.sort(next(iter(picks))), np.sort(np.argsort(-gain)[:32]))


def test_greedy_estimate_is_the_papers_ratio_with_one_half_when_undefined():
    # hand values: 3/8, 0/8, 8/8, undefined -> 0.5, decayed (0.9*2)/(0.9*2 + 0.9*6) = 0.25
    alpha = np.array([3.0, 0.0, 8.0, 0.0, 1.8, 1e-300])
    beta = np.array([5.0, 8.0, 0.0, 0.0, 5.4, 0.0])
    np.testing.assert_allclose(greedy_estimate(alpha, beta),
                               [0.375, 0.0, 1.0, 0.5, 0.25, 1.0], rtol=1e-15)
    out = np.empty(6, dtype=np.float32)
    assert greedy_estimate(alpha, beta, out=out) is out
    np.testing.assert_array_equal(out, np.float32([0.375, 0.0, 1.0, 0.5, 0.25, 1.0]))


def test_greedy_never_prefers_a_never_solved_sample_over_a_partly_solved_one():
    """Issue 13: with the posterior mean, r = 0 of 8 (mean 0.1, gain 0.081) outranked every
    r >= 6 of 8 (mean 0.7, gain 0.063); with the paper's estimate its gain is 0."""
    r = np.arange(0, 9, dtype=float)  # sample i was solved i times of 8
    s = VadeSampler.from_rollouts(r, 8, batch_size=9, exploration="greedy")
    order = list(s.select())
    # gains p(1-p)^2 at p = r/8, by hand: r=3 0.1465 > r=2 0.1406 > r=4 0.125 > r=1 0.0957
    # > r=5 0.0879 > r=6 0.0469 > r=7 0.0137 > r=0 = r=8 = 0
    assert order[:7] == [3, 2, 4, 1, 5, 6, 7]
    assert set(order[7:]) == {0, 8}
    never = VadeSampler(2, 1, alpha=np.array([0.0, 6.0]), beta=np.array([8.0, 2.0]),
                        exploration="greedy")
    assert [never.select()[0] for _ in range(5)] == [1] * 5
    # an unobserved sample (flat prior) is estimated at 0.5: gain 0.125, above r = 1 of 8
    flat = VadeSampler(2, 1, alpha=np.array([0.0, 1.0]), beta=np.array([0.0, 7.0]),
                       exploration="greedy")
    assert flat.select()[0] == 0


def _reference_win_rates(alpha, beta, offset: float, draws: int = 1_000_000) -> np.ndarray:
    """P(arm i has the highest p(1-p)^2) with p_i ~ Beta(alpha_i + offset, beta_i + offset),
    estimated with numpy's own Beta sampler (an algorithm independent of the sampler's)."""
    rng = np.random.default_rng(12345)
    p = rng.beta(np.asarray(alpha) + offset, np.asarray(beta) + offset,
                 size=(draws, len(alpha)))
    gain = p * (1 - p) ** 2
    return np.bincount(gain.argmax(axis=1), minlength=len(alpha)) / draws


def test_thompson_selection_frequencies_follow_the_posterior():
    alpha = np.array([1.0, 2.0, 6.0, 3.0, 9.0])
    beta = np.array([7.0, 5.0, 2.0, 3.0, 1.0])
    trials = 20_000
    s = VadeSampler(5, 1, alpha=alpha, beta=beta, seed=7)
    counts = np.bincount([s.select()[0] for _ in range(trials)], minlength=5)
    freq = counts / trials
    expected = _reference_win_rates(alpha, beta, offset=1.0)
    # 5 standard errors per arm: a false failure has probability < 1e-5 per arm
    tol = 5 * np.sqrt(expected * (1 - expected) / trials) + 2e-3
    assert np.all(np.abs(freq - expected) <= tol), (freq, expected, tol)
    # the test can tell a wrong posterior (Beta(alpha, beta), no +1) from the right one
    wrong = _reference_win_rates(alpha, beta, offset=0.0)
    assert np.max(np.abs(wrong - expected) - tol) > 0.02


def _trajectory(sampler, steps: int, seed: int = 99):
    rng = np.random.default_rng(seed)
    picks = []
    for _ in range(steps):
        idx = sampler.select()
        picks.append(idx)
        sampler.observe(idx, rng.integers(0, 9, idx.size), 8)
    return picks


def test_same_seed_same_selections_different_seed_different():
    kw = dict(alpha=np.full(300, 2.0), beta=np.full(300, 6.0))
    a = _trajectory(VadeSampler(300, 16, seed=1, **kw), 20)
    b = _trajectory(VadeSampler(300, 16, seed=1, **kw), 20)
    c = _trajectory(VadeSampler(300, 16, seed=2, **kw), 20)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_draws_do_not_depend_on_the_thread_count():
    n = 2 * CHUNK_SIZE + 123  # three chunks
    one = _trajectory(VadeSampler(n, 64, seed=5, threads=1), 3)
    two = _trajectory(VadeSampler(n, 64, seed=5, threads=2), 3)
    assert all(np.array_equal(x, y) for x, y in zip(one, two))


@pytest.mark.parametrize("method", ["vade", "symmetric", "greedy", "last-update", "vanilla"])
def test_exact_resume_after_save_and_load(method):
    n, k, steps, cut = 2 * CHUNK_SIZE + 7, 32, 12, 5
    rng = np.random.default_rng(0)
    init = dict(alpha=rng.integers(0, 9, n).astype(float)) if method != "vanilla" else {}
    if init:
        init["beta"] = 8 - init["alpha"]
    outcomes = np.random.default_rng(1).integers(0, 9, size=(steps, k))

    def run(sampler, start, stop):
        out = []
        for t in range(start, stop):
            idx = sampler.select()
            out.append((idx, sampler.observe(idx, outcomes[t], 8)))
        return out

    full = run(make_sampler(method, n, k, seed=3, **init), 0, steps)
    first = make_sampler(method, n, k, seed=3, **init)
    head = run(first, 0, cut)
    saved = pickle.dumps(first.state_dict())  # through bytes, as a checkpoint would
    resumed = make_sampler(method, n, k, seed=3, **init)
    resumed.load_state_dict(pickle.loads(saved))
    tail = run(resumed, cut, steps)
    for (i1, o1), (i2, o2) in zip(full, head + tail):
        np.testing.assert_array_equal(i1, i2)
        np.testing.assert_array_equal(o1.p_drawn, o2.p_drawn)
        assert o1.step == o2.step
    if method != "vanilla":
        np.testing.assert_array_equal(full[-1][1].alpha_after, tail[-1][1].alpha_after)


def test_resume_between_select_and_observe_keeps_the_drawn_values():
    s = VadeSampler(50, 5, seed=4)
    idx = s.select()
    state = s.state_dict()
    fresh = VadeSampler(50, 5, seed=4)
    fresh.load_state_dict(state)
    a, b = s.observe(idx, [1] * 5, 8), fresh.observe(idx, [1] * 5, 8)
    assert np.all(np.isfinite(b.p_drawn))
    np.testing.assert_array_equal(a.p_drawn, b.p_drawn)
    np.testing.assert_array_equal(a.gain, b.gain)


def test_state_dict_is_a_copy_not_a_view():
    s = VadeSampler(10, 2, alpha=np.ones(10), beta=np.ones(10))
    state = s.state_dict()
    s.observe([0], [1], 2)
    assert state["alpha"][0] == 1.0 and state["step"] == 0


def test_load_refuses_state_of_a_differently_configured_sampler():
    state = VadeSampler(10, 2, lambda1=0.2).state_dict()
    with pytest.raises(ValueError, match="lambda1 = 0.2.*lambda1 = 0.3"):
        VadeSampler(10, 2, lambda1=0.3).load_state_dict(state)
    with pytest.raises(ValueError, match="n_samples"):
        VadeSampler(11, 2).load_state_dict(state)


def test_observed_samples_not_selected_get_nan_draws():
    s = VadeSampler(20, 3, seed=0)
    chosen = s.select()
    other = np.setdiff1d(np.arange(20), chosen)[:1]
    obs = s.observe(np.concatenate([chosen[:1], other]), [1, 1], 4)
    assert np.isfinite(obs.p_drawn[0]) and np.isnan(obs.p_drawn[1])
