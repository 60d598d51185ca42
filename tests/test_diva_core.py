"""DIVA-GRPO's numpy core against hand-computed numbers: levels, offsets, the advantage.

Everything here is the real code (numpy only); there is nothing to stand in for.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from vade.diva import diva_advantages, draw_offsets, initial_levels, plan_variant, update_levels
from vade.diva.advantage import grpo_advantages
from vade.diva.offsets import ALL_STEPS


def test_initial_levels_give_each_success_count_of_eight_its_own_level():
    assert initial_levels(np.arange(9), 8).tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1]
    # G = 4: p = 0, .25, .5, .75, 1 -> 1 + floor(9 (1 - p)) = 10 -> 9, 7.75 -> 7, 5.5 -> 5, 3.25 -> 3, 1
    assert initial_levels(np.arange(5), 4).tolist() == [9, 7, 5, 3, 1]


def test_initial_levels_refuse_impossible_counts():
    with pytest.raises(ValueError, match=r"pass rate r/G\[1\] = 1.5"):
        initial_levels(np.array([1, 12]), 8)
    with pytest.raises(ValueError, match="G >= 1"):
        initial_levels(np.array([0]), 0)


@pytest.mark.parametrize(
    "mean, move",
    [(0.0, 2), (0.05, 2), (0.051, 1), (0.3, 1), (0.31, 0), (0.5, 0), (0.51, -1), (0.7, -1),
     (0.71, -2), (1.0, -2)],
)
def test_update_follows_the_interval_table_at_its_edges(mean, move):
    assert update_levels(np.array([5]), np.array([mean])).tolist() == [5 + move]


def test_update_clamps_to_one_and_nine():
    out = update_levels(np.array([1, 2, 9, 8]), np.array([1.0, 0.9, 0.0, 0.0]))
    assert out.tolist() == [1, 1, 9, 9]
    with pytest.raises(ValueError, match=r"mean_reward\[0\]"):
        update_levels(np.array([3]), np.array([1.2]))


def test_offsets_centre_on_the_level_means_and_stay_in_range():
    rng = np.random.default_rng(0)
    levels = np.repeat(np.arange(1, 10), 4000)
    d = draw_offsets(levels, rng).astype(float)
    means = [d[levels == x].mean() for x in range(1, 10)]
    # rounding and clipping at +-8 leave the means within 0.05 of mu (mu +6 clips least than 1%)
    np.testing.assert_allclose(means, [6, 5, 4, 3, 2, 1, -1, -3, -5], atol=0.05)
    assert d.min() >= -8 and d.max() <= 8
    assert np.array_equal(draw_offsets(levels[:50], np.random.default_rng(3)),
                          draw_offsets(levels[:50], np.random.default_rng(3)))


@pytest.mark.parametrize(
    "offset, kind, steps, ops",
    [(-8, "hint", ALL_STEPS, 0), (-7, "hint", ALL_STEPS, 0), (-6, "hint", 3, 0), (-5, "hint", 3, 0),
     (-4, "hint", 2, 0), (-3, "hint", 2, 0), (-2, "hint", 1, 0), (-1, "hint", 1, 0),
     (0, "rephrase", 0, 0), (1, "perturb", 0, 1), (2, "perturb", 0, 1), (3, "perturb", 0, 2),
     (4, "perturb", 0, 2), (5, "perturb", 0, 3), (6, "perturb", 0, 4), (7, "text_in_image", 0, 0),
     (8, "text_in_image", 0, 0)],
)
def test_plan_maps_every_offset(offset, kind, steps, ops):
    plan = plan_variant(5, offset)
    assert (plan.kind, plan.hint_steps, plan.perturb_ops) == (kind, steps, ops)
    assert plan.level == min(max(5 + offset, 1), 9)


def test_grpo_term_matches_the_textbook_formula():
    adv = grpo_advantages(np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.5]), np.array([0, 0, 0, 1, 1, 2]))
    # group 0: mean 1/3, unbiased std sqrt(1/3); group 1 tied -> 0; group 2 singleton -> 0
    s = math.sqrt(1 / 3)
    np.testing.assert_allclose(adv, [(2 / 3) / s, -(1 / 3) / s, -(1 / 3) / s, 0, 0, 0], atol=1e-5)


def _two_originals():
    """Originals O1 (level 3) and O2 (level 7), one variant each (levels 5 and 4), 2 rollouts each."""
    rewards = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=float)
    local = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    glob = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    levels = np.array([3, 3, 5, 5, 7, 7, 4, 4])
    return rewards, local, glob, levels


def test_advantage_equals_the_hand_computed_groups():
    # Local: O1 (1,0) -> +-sqrt(.5)/... = +-0.7071, V1 and O2 tied -> 0, V2 (1,0) -> +-0.7071.
    # Batch z-score: mean 0, unbiased std sqrt(2/7) -> +-0.7071 / 0.5345 = +-1.3229.
    loc = 0.70711 / math.sqrt(2 / 7)
    # Global: G1 (1,0,1,1) mean .75, std .5 -> (.5, -1.5, .5, .5); G2 (0,0,1,0) -> (-.5, -.5, 1.5, -.5);
    # batch std sqrt(6/7) = 0.9258. Levels: G1 mean 4 -> dd (-1,-1,1,1); G2 mean 5.5 -> (1.5,1.5,-1.5,-1.5).
    z = 1 / math.sqrt(6 / 7)
    glob = [0.5 * z * math.exp(-0.1), -1.5 * z * math.exp(0.1), 0.5 * z * math.exp(0.1),
            0.5 * z * math.exp(0.1), -0.5 * z * math.exp(-0.15), -0.5 * z * math.exp(-0.15),
            1.5 * z * math.exp(-0.15), -0.5 * z * math.exp(0.15)]
    expected = np.array([loc, -loc, 0, 0, 0, 0, loc, -loc]) + np.array(glob)
    np.testing.assert_allclose(diva_advantages(*_two_originals()), expected, atol=1e-4)
    assert np.allclose(expected[:2], [1.8116, -3.1135], atol=1e-4)


def test_difficulty_weighting_is_off_at_k_zero_and_favours_hard_correct_answers():
    r, local, glob, lv = _two_originals()
    flat = diva_advantages(r, local, glob, lv, k=0.0)
    weighted = diva_advantages(r, local, glob, lv, k=0.1)
    # row 2: correct on the harder variant (dd = +1) counts more; row 0: correct on the easier less
    assert weighted[2] > flat[2] and weighted[0] < flat[0]
    # row 1: wrong on the easier original (dd = -1) is punished more
    assert weighted[1] < flat[1]


def test_low_reward_groups_are_scaled_down():
    # format-only rewards: O1's local group and its whole global group stay below 0.15
    r = np.array([0.1, 0.0, 0.1, 0.1, 1.0, 0.0, 1.0, 1.0])
    local = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    glob = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    lv = np.full(8, 5)
    full = diva_advantages(r, local, glob, lv, low_reward_scale=1.0)
    scaled = diva_advantages(r, local, glob, lv, low_reward_scale=0.1)
    np.testing.assert_allclose(scaled[:4], 0.1 * full[:4], atol=1e-12)
    np.testing.assert_allclose(scaled[4:], full[4:], atol=1e-12)
    assert np.abs(full[:2]).max() > 0.1  # the scaled rows did carry a signal


def test_bad_inputs_name_what_is_wrong():
    r, local, glob, lv = _two_originals()
    with pytest.raises(ValueError, match="local group 1 spans several global groups"):
        diva_advantages(r, local, np.array([0, 0, 0, 1, 1, 1, 1, 1]), lv)
    with pytest.raises(ValueError, match=r"levels has shape \(3,\)"):
        diva_advantages(r, local, glob, lv[:3])
    with pytest.raises(ValueError, match=r"rewards\[2\] is not finite"):
        diva_advantages(np.where(np.arange(8) == 2, np.nan, r), local, glob, lv)
    with pytest.raises(ValueError, match="k must be"):
        diva_advantages(r, local, glob, lv, k=-1.0)
