"""The simulated environment: hand-computed learning and drift, validation, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from vade.simulate.dynamics import DynamicsParams, PassRateEnv


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p) - np.log1p(-p)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _env(**kw) -> PassRateEnv:
    base = dict(n_samples=10, group_size=8, unlearnable_fraction=0.0, noisy_fraction=0.0,
                n_categories=2)
    base.update(kw)
    return PassRateEnv(DynamicsParams(**base), seed=3)


def test_unselected_non_generalising_sample_keeps_its_rate():
    env = _env(generalisation_rate=0.0)
    before = env.pass_rate
    env.train(np.array([0, 1]), np.array([4, 2]))
    after = env.pass_rate
    np.testing.assert_array_equal(after[2:], before[2:])
    assert after[0] > before[0] and after[1] > before[1]


def test_trained_informative_sample_moves_by_the_learning_rule():
    env = _env(learning_rate=0.5, learning_exponent=0.0, generalisation_rate=0.0)
    z = env.logit.copy()
    env.train(np.array([3]), np.array([5]))
    assert env.pass_rate[3] == pytest.approx(_sigmoid(z[3] + 0.5), rel=1e-12)

    env = _env(learning_rate=0.8, learning_exponent=1.0, generalisation_rate=0.0)
    z = env.logit.copy()
    env.train(np.array([3]), np.array([5]))
    expected = z[3] + 0.8 * (1.0 - _sigmoid(z[3]))
    assert env.logit[3] == pytest.approx(expected, rel=1e-12)


def test_uninformative_groups_teach_nothing():
    env = _env(generalisation_rate=0.0)
    z = env.logit.copy()
    learned = env.train(np.array([0, 1]), np.array([0, 8]))
    assert learned == 0
    np.testing.assert_array_equal(env.logit, z)


def test_generalisation_spreads_a_share_of_the_learning_evenly():
    env = _env(learning_rate=0.5, learning_exponent=0.0, generalisation_rate=2.0)
    z = env.logit.copy()
    env.train(np.array([4, 7]), np.array([3, 0]))  # only sample 4 learns (dz = 0.5)
    drift = 2.0 * 0.5 / 10
    np.testing.assert_allclose(env.logit[4], z[4] + 0.5, rtol=1e-12)
    others = np.setdiff1d(np.arange(10), [4])  # 7 was trained on an r = 0 group: it drifts
    np.testing.assert_allclose(env.logit[others], z[others] + drift, rtol=1e-12)


def test_unlearnable_samples_never_move_and_never_succeed():
    env = PassRateEnv(DynamicsParams(n_samples=200, unlearnable_fraction=0.25,
                                     noisy_fraction=0.0, generalisation_rate=5.0), seed=0)
    dead = ~env.learnable
    assert dead.sum() == 50
    for _ in range(5):
        idx = np.arange(200)
        r = env.rollout(idx)
        assert np.all(r[dead] == 0)
        env.train(idx, np.where(dead, 4, r))  # even an "informative" outcome teaches nothing
    assert np.all(env.pass_rate[dead] == 0.0)
    assert env.mean_pass_rate() <= 0.75


def test_noisy_samples_stay_below_their_ceiling():
    params = DynamicsParams(n_samples=400, unlearnable_fraction=0.1, noisy_fraction=0.2,
                            noisy_ceiling_low=0.3, noisy_ceiling_high=0.6, learning_rate=5.0)
    env = PassRateEnv(params, seed=1)
    noisy = env.learnable & (env.ceiling < 1.0)
    assert noisy.sum() == 80 and (~env.learnable).sum() == 40
    assert np.all((env.ceiling[noisy] >= 0.3) & (env.ceiling[noisy] <= 0.6))
    idx = np.flatnonzero(noisy)
    for _ in range(20):
        env.train(idx, np.full(idx.size, 4))
    assert np.all(env.pass_rate[noisy] <= env.ceiling[noisy])
    assert np.all(env.pass_rate[noisy] > 0.95 * env.ceiling[noisy])


def test_rollouts_are_binomial_draws_and_change_nothing():
    env = PassRateEnv(DynamicsParams(n_samples=4, noisy_fraction=0.0,
                                     unlearnable_fraction=0.0, n_categories=1), seed=0)
    env.logit[:] = _logit(np.array([0.5, 0.5, 0.5, 0.5]))
    z = env.logit.copy()
    draws = np.concatenate([env.rollout(np.arange(4), n=10) for _ in range(2000)])
    assert draws.min() >= 0 and draws.max() <= 10
    assert draws.mean() == pytest.approx(5.0, abs=0.1)
    assert draws.var() == pytest.approx(2.5, abs=0.2)
    np.testing.assert_array_equal(env.logit, z)


def test_same_seed_same_environment_and_outcomes():
    params = DynamicsParams(n_samples=300)
    a, b = PassRateEnv(params, 7), PassRateEnv(params, 7)
    np.testing.assert_array_equal(a.pass_rate, b.pass_rate)
    np.testing.assert_array_equal(a.category, b.category)
    idx = np.arange(0, 300, 3)
    np.testing.assert_array_equal(a.step(idx), b.step(idx))
    np.testing.assert_array_equal(a.logit, b.logit)
    c = PassRateEnv(DynamicsParams(n_samples=300), 8)
    assert not np.array_equal(a.initial_pass_rate, c.initial_pass_rate)


def test_categories_are_equal_size_difficulty_levels():
    env = PassRateEnv(DynamicsParams(n_samples=1000, n_categories=4), seed=2)
    assert np.bincount(env.category).tolist() == [250, 250, 250, 250]
    means = [env.initial_pass_rate[env.category == c].mean() for c in range(4)]
    assert means == sorted(means)
    assert env.initial_pass_rate[env.category == 0].max() <= \
        env.initial_pass_rate[env.category == 1].min()


def test_train_rejects_duplicates_and_bad_shapes():
    env = _env()
    with pytest.raises(ValueError, match="distinct"):
        env.train(np.array([1, 1]), np.array([2, 3]))
    with pytest.raises(ValueError, match="shape"):
        env.train(np.array([1, 2]), np.array([2]))
    with pytest.raises(ValueError, match=r"\[0, 10\)"):
        env.rollout(np.array([10]))


@pytest.mark.parametrize("kwargs, name", [
    ({"n_samples": 0}, "n_samples"),
    ({"group_size": 2.5}, "group_size"),
    ({"learning_rate": -0.1}, "learning_rate"),
    ({"generalisation_rate": float("nan")}, "generalisation_rate"),
    ({"unlearnable_fraction": 1.5}, "unlearnable_fraction"),
    ({"unlearnable_fraction": 0.6, "noisy_fraction": 0.6}, "noisy_fraction"),
    ({"noisy_ceiling_low": 0.0}, "noisy_ceiling_low"),
    ({"noisy_ceiling_low": 0.7, "noisy_ceiling_high": 0.5}, "noisy_ceiling_high"),
    ({"difficulty_a": 0}, "difficulty_a"),
    ({"n_samples": 3, "n_categories": 5}, "n_categories"),
    ({"learning_rate": True}, "learning_rate"),
])
def test_bad_parameters_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DynamicsParams(**kwargs)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="dynamics.learning_rat"):
        DynamicsParams.from_dict({"learning_rat": 0.1})
    assert DynamicsParams.from_dict({"learning_rate": 0.1}).learning_rate == 0.1
