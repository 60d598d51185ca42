"""The race's pre-registered estimators (``vade.report.estimators``): every number worked out by
hand in the comments. Pure numpy functions on hand-made curves: nothing is a stand-in."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vade.report.curves import first_reaching
from vade.report.estimators import (
    area_under_curve,
    geometric_interval,
    on_grid,
    reach_smoothed,
    smooth,
    step_equivalence,
)
from vade.report.stats import mean_interval


def test_curve_on_a_common_rollout_grid_by_interpolation():
    # validations at 0, 1000, 3000 rollouts; grid 1000: 2000 is halfway between 0.6 and 0.8
    grid, y = on_grid([0, 1000, 3000], [0.5, 0.6, 0.8], 1000)
    assert grid.tolist() == [0, 1000, 2000, 3000]
    assert y == pytest.approx([0.5, 0.6, 0.7, 0.8])
    # nothing extrapolated: a curve from 1500 to 3500 covers grid points 2000 and 3000 only
    assert on_grid([1500, 3500], [0.5, 0.7], 1000)[0].tolist() == [2000, 3000]


def test_trailing_running_mean_of_three():
    s = smooth([1.0, 2.0, 3.0, 4.0, 8.0])
    assert np.isnan(s[:2]).all()
    assert s[2:] == pytest.approx([2.0, 3.0, 5.0])  # (1+2+3)/3, (2+3+4)/3, (3+4+8)/3


def test_one_lucky_score_no_longer_reaches_the_target():
    # a flat curve at 0.70 with one spike of 0.74 at 2,000 rollouts; target 0.735.
    x = [0, 1000, 2000, 3000, 4000, 5000]
    y = [0.70, 0.70, 0.74, 0.70, 0.70, 0.70]
    assert first_reaching(np.array(x), np.array(y), 0.735) == 2000  # the old estimator
    # smoothed: (0.70 + 0.70 + 0.74)/3 = 0.7133 at 2000, 3000: (0.70+0.74+0.70)/3: never
    assert reach_smoothed(x, y, 0.735, 1000) is None
    # a real rise: 0.70, 0.72, 0.74, 0.76 from 3000 on; smoothed at 5000 = (0.72+0.74+0.76)/3
    # = 0.74 >= 0.735 (at 4000: (0.70+0.72+0.74)/3 = 0.72)
    rise = [0.70, 0.70, 0.70, 0.72, 0.74, 0.76]
    assert reach_smoothed(x, rise, 0.735, 1000) == 5000


def test_validating_more_often_buys_no_earlier_reach():
    # one underlying curve 0.5 + 0.05 per 1,000 rollouts; method A validated every 500
    # rollouts, method B every 3,000. On the common 3,000 grid both read 0.5, 0.65, 0.8, 0.95
    # and the smoothed curve (at 6000: 0.65, at 9000: 0.8) first reaches 0.75 at 9,000.
    def line(r):
        return 0.5 + 0.05 * np.asarray(r, float) / 1000

    a = np.arange(0, 9001, 500)
    b = np.arange(0, 9001, 3000)
    assert reach_smoothed(a, line(a), 0.75, 3000) == reach_smoothed(b, line(b), 0.75, 3000) \
        == 9000
    # the old estimator gives A 5,000 and B 6,000: the denser cadence "wins" by 1,000
    assert first_reaching(a, line(a), 0.75) == 5000 and first_reaching(b, line(b), 0.75) == 6000


def test_geometric_interval_of_ratios_never_goes_below_zero():
    # ratios 0.25, 0.5, 1.0: logs -1.3863, -0.6931, 0; mean -0.6931 -> geometric mean 0.5;
    # sd of logs 0.6931; half-width t(2) 4.3027 * 0.6931 / sqrt 3 = 1.7218:
    # [0.5 e^-1.7218, 0.5 e^1.7218] = [0.0894, 2.797]
    g = geometric_interval({0: 0.25, 1: 0.5, 2: 1.0, 3: None})
    assert (g.mean, g.low, g.high) == pytest.approx((0.5, 0.08940, 2.7966), rel=1e-3)
    assert g.n == 3
    assert g.ratios == (0.25, 0.5, 1.0)
    # the arithmetic t-interval on the same ratios goes negative: 0.583 [-0.365, 1.532]
    assert mean_interval([0.25, 0.5, 1.0]).low == pytest.approx(-0.3654, abs=1e-3)
    # a ratio and its inverse: symmetric on the log scale, geometric mean exactly 1
    assert geometric_interval({0: 0.5, 1: 2.0}).mean == pytest.approx(1.0)
    assert "0.25, 0.50, 1.00" in g.text(2)
    assert geometric_interval({}).n == 0 and math.isnan(geometric_interval({0: 0.0}).mean)


def test_area_under_the_validation_curve():
    # steps 0, 10, 20 with 0.5, 0.7, 0.7: area 10 * 0.6 + 10 * 0.7 = 13 over 20 steps = 0.65
    assert area_under_curve([0, 10, 20], [0.5, 0.7, 0.7], 20) == pytest.approx(0.65)
    # up to step 15: 10 * 0.6 + 5 * 0.7 = 9.5 over 15 = 0.63333
    assert area_under_curve([0, 10, 20], [0.5, 0.7, 0.7], 15) == pytest.approx(9.5 / 15)
    assert area_under_curve([0, 10], [0.5, 0.7], 20) is None  # the curve stops short


def test_step_equivalence_factor():
    # reference u(s) = 0.5 + s / 1000 over 0..300; method v(t) = 0.5 + 2 t / 1000 over 0..150:
    # v(t) = u(2 t), so k = 2
    s = np.arange(0, 301, 15)
    t = np.arange(0, 151, 15)
    assert step_equivalence(t, 0.5 + 2 * t / 1000, s, 0.5 + s / 1000) == pytest.approx(2.0)
    # the method is the reference: k = 1
    assert step_equivalence(s, 0.5 + s / 1000, s, 0.5 + s / 1000) == pytest.approx(1.0)
    # a method at half the reference's speed: k = 0.5
    assert step_equivalence(s, 0.5 + s / 2000, s, 0.5 + s / 1000) == pytest.approx(0.5)


def test_step_equivalence_is_symmetric_in_its_two_curves():
    """Swapping method and reference gives 1 / k: the fit scores each k on both curves' points,
    so no k is judged on fewer points than its inverse (fitted one way only, two identical
    noisy curves came out at k about 1.3)."""
    rng = np.random.default_rng(3)
    s = np.arange(0, 301, 25, dtype=float)
    ks = [0.5, 0.8, 1.0, 1.25, 2.0]                  # closed under 1/k
    for _ in range(20):
        a = 0.55 + 0.2 * (1 - np.exp(-s / 90)) + rng.normal(0, 0.012, s.size)
        b = 0.55 + 0.2 * (1 - np.exp(-s / 90)) + rng.normal(0, 0.012, s.size)
        k_ab = step_equivalence(s, a, s, b, ks)
        assert step_equivalence(s, b, s, a, ks) == pytest.approx(1 / k_ab)
