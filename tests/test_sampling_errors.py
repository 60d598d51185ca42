"""Bad input to the samplers fails loudly, names the culprit, and changes no state."""

from __future__ import annotations

import numpy as np
import pytest

from vade.sampling import UniformSampler, VadeSampler, make_sampler


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_samples=10, batch_size=11), "batch_size = 11 exceeds n_samples = 10"),
        (dict(n_samples=10, batch_size=0), "batch_size must be a positive integer"),
        (dict(n_samples=0, batch_size=1), "n_samples must be a positive integer"),
        (dict(n_samples=10, batch_size=2, lambda1=-0.1), "0 <= lambda1 <= lambda2 <= 1"),
        (dict(n_samples=10, batch_size=2, lambda2=1.5), "0 <= lambda1 <= lambda2 <= 1"),
        (dict(n_samples=10, batch_size=2, lambda1=0.9, lambda2=0.5), "lambda1 = 0.9"),
        (dict(n_samples=10, batch_size=2, lambda1=float("nan")), "lambda1 must be a finite"),
        (dict(n_samples=10, batch_size=2, objective="cubic"), "objective must be one of"),
        (dict(n_samples=10, batch_size=2, exploration="ucb"), "exploration must be one of"),
        (dict(n_samples=10, batch_size=2, decay="linear"), "decay must be one of"),
        (dict(n_samples=3, batch_size=1, alpha=np.ones(3)), "given together"),
        (dict(n_samples=3, batch_size=1, alpha=np.ones(2), beta=np.ones(2)), r"shape \(2,\)"),
        (dict(n_samples=3, batch_size=1, alpha=np.array([1, -1.0, 0]), beta=np.ones(3)),
         r"alpha\[1\] = -1.0"),
        (dict(n_samples=3, batch_size=1, alpha=np.ones(3), beta=np.array([1, 1, np.nan])),
         r"beta\[2\] = nan"),
    ],
)
def test_constructor_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VadeSampler(**kwargs)


def test_uniform_constructor_checks_sizes_too():
    with pytest.raises(ValueError, match="batch_size = 5 exceeds n_samples = 4"):
        UniformSampler(4, 5)


def test_unknown_method():
    with pytest.raises(ValueError, match="method 'bogus' is unknown"):
        make_sampler("bogus", 10, 2)


def test_shaped_methods_get_their_choosers_sampler():
    """DAPO and DIVA shape what a chooser picked: make_sampler builds that chooser."""
    assert isinstance(make_sampler("dapo", 10, 2), UniformSampler)
    assert isinstance(make_sampler("diva", 10, 2), UniformSampler)
    both = make_sampler("vade-diva", 10, 2, seed=3), make_sampler("vade", 10, 2, seed=3)
    assert isinstance(both[0], VadeSampler) and both[0].config == both[1].config
    assert np.array_equal(both[0].select(), both[1].select())


@pytest.mark.parametrize(
    "indices, correct, rollouts, message",
    [
        ([0, 10], [1, 1], 8, r"indices\[1\] = 10 is out of range for n_samples = 10"),
        ([-1, 2], [1, 1], 8, r"indices\[0\] = -1 is out of range"),
        ([3, 4, 3], [1, 1, 1], 8, r"duplicate index 3 at positions \[0, 2\]"),
        ([1, 2], [9, 1], 8, r"correct\[0\] = 9 exceeds rollouts\[0\] = 8 \(sample 1\)"),
        ([1, 2], [1, -1], 8, r"correct\[1\] = -1 \(sample 2\) is negative"),
        ([1, 2], [1, np.nan], 8, r"correct\[1\] = nan \(sample 2\) is not a finite number"),
        ([1, 2], [1, 1], [8, np.inf], r"rollouts\[1\] = inf \(sample 2\) is not a finite"),
        ([1, 2], [0, 0], [8, 0], r"rollouts\[1\] = 0 \(sample 2\) must be positive"),
        ([1, 2], [1], 8, r"correct has shape \(1,\), expected \(2,\)"),
        ([1, 2], [1, 1], [8, 8, 8], "rollouts must be a scalar or have shape"),
        ([], [], 8, "non-empty 1-D"),
        ([0.5], [1], 8, "indices must be integers"),
    ],
)
@pytest.mark.parametrize("kind", ["vade", "uniform"])
def test_observe_errors_leave_state_untouched(kind, indices, correct, rollouts, message):
    s = (VadeSampler(10, 2, alpha=np.arange(10.0), beta=np.ones(10)) if kind == "vade"
         else UniformSampler(10, 2))
    before = s.state_dict()
    with pytest.raises(ValueError, match=message):
        s.observe(np.array(indices), np.array(correct, dtype=float), rollouts)
    after = s.state_dict()
    assert after["step"] == before["step"] == 0
    if kind == "vade":
        np.testing.assert_array_equal(after["alpha"], before["alpha"])
        np.testing.assert_array_equal(after["beta"], before["beta"])
