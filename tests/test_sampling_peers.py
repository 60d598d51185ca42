"""Peer samplers (MoPPS, GRESO, MMR1, SEC): the sampler contract and hand-computed rules."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from vade.sampling.observation import Observation
from vade.sampling.peers import (
    PEERS,
    GresoSampler,
    GresoSkipSampler,
    MMR1Sampler,
    MoPPSPriorSampler,
    MoPPSSampler,
    SECPassRateSampler,
    SECSampler,
    label_categories,
    mean_abs_advantage,
)

N, B, G = 60, 8, 8
CATS = np.arange(N) % 3


def _make(name: str, seed: int = 0, **kw):
    if name.startswith("sec"):
        kw.setdefault("categories", CATS)
    return PEERS[name](N, B, seed=seed, **kw)


def _outcome(idx: np.ndarray) -> np.ndarray:
    """A fixed, index-dependent outcome so runs are comparable without an environment."""
    return (idx * 7 + 3) % (G + 1)


def _same_rng_state(a: dict, b: dict) -> bool:
    """bit_generator.state dicts hold numpy arrays (SFC64): compare them element-wise."""
    return a["bit_generator"] == b["bit_generator"] and all(
        np.array_equal(a["state"][k], b["state"][k]) for k in a["state"]
    ) and a.get("has_uint32") == b.get("has_uint32") and a.get("uinteger") == b.get("uinteger")


def _drive(sampler, steps: int) -> list[np.ndarray]:
    picks = []
    for _ in range(steps):
        request = getattr(sampler, "rescore_request", lambda: None)()
        if request is not None:
            ridx, n = request
            sampler.observe_rescore(ridx, (ridx * 3) % (n + 1), n)
        idx = sampler.select()
        picks.append(idx)
        sampler.observe(idx, _outcome(idx), G)
    return picks


@pytest.mark.parametrize("name", sorted(PEERS))
def test_select_gives_distinct_valid_indices_and_observe_returns_an_observation(name):
    s = _make(name)
    for step in range(1, 12):
        idx = s.select()
        assert idx.shape == (B,) and np.unique(idx).size == B
        assert idx.min() >= 0 and idx.max() < N
        obs = s.observe(idx, _outcome(idx), G)
        assert isinstance(obs, Observation) and obs.step == step == s.step
        np.testing.assert_array_equal(obs.indices, idx)
    assert s.config["kind"] == name and s.config["seed"] == 0


@pytest.mark.parametrize("name", sorted(PEERS))
def test_observe_reuses_validate_observation(name):
    s = _make(name)
    with pytest.raises(ValueError, match="duplicate index"):
        s.observe(np.array([1, 1]), np.array([0, 1]), G)
    with pytest.raises(ValueError, match="exceeds rollouts"):
        s.observe(np.array([1]), np.array([9]), G)


@pytest.mark.parametrize("name", sorted(PEERS))
def test_same_seed_same_selections_other_seed_differs(name):
    a, b, c = _drive(_make(name), 15), _drive(_make(name), 15), _drive(_make(name, seed=1), 15)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


@pytest.mark.parametrize("name", sorted(PEERS))
def test_state_dict_round_trips_exactly(name):
    s = _make(name)
    _drive(s, 7)
    state = copy.deepcopy(s.state_dict())
    tail = _drive(s, 9)
    end = s.state_dict()
    r = _make(name)
    r.load_state_dict(state)
    assert all(np.array_equal(x, y) for x, y in zip(tail, _drive(r, 9)))
    again = r.state_dict()
    assert again["step"] == end["step"] and again["scalars"] == end["scalars"]
    assert _same_rng_state(again["rng"], end["rng"])
    for key in end["arrays"]:
        np.testing.assert_array_equal(again["arrays"][key], end["arrays"][key])


@pytest.mark.parametrize("name, kw, key", [
    ("mopps", {"decay": 1.0}, "decay"),
    ("greso", {"min_keep": 0.05}, "min_keep"),
    ("mmr1", {"rescore_every": 2}, "rescore_every"),
    ("sec", {"temperature": 2}, "temperature"),
    ("sec", {"categories": (CATS + 1) % 3}, "categories_crc32"),
], ids=["mopps-decay", "greso-min_keep", "mmr1-rescore_every", "sec-temperature",
        "sec-categories"])
def test_state_of_another_configuration_is_refused_naming_the_key(name, kw, key):
    state = _make(name).state_dict()
    with pytest.raises(ValueError, match=f"sampler state has {key} = "):
        _make(name, **kw).load_state_dict(state)


@pytest.mark.parametrize("cls, kw, param", [
    (MoPPSSampler, {"decay": 1.5}, "decay"),
    (MoPPSSampler, {"prior_alpha": 0}, "prior_alpha"),
    (MoPPSSampler, {"pool_factor": 0.5}, "pool_factor"),
    (MoPPSSampler, {"n_samples": 5, "batch_size": 6}, "batch_size"),
    (GresoSampler, {"target_zero_variance": -0.1}, "target_zero_variance"),
    (GresoSampler, {"min_keep": 0}, "min_keep"),
    (GresoSampler, {"initial_keep": 0.001}, "initial_keep"),
    (MMR1Sampler, {"rescore_every": 0}, "rescore_every"),
    (MMR1Sampler, {"rescore_rollouts": 2.5}, "rescore_rollouts"),
    (MMR1Sampler, {"weighted_share": 2}, "weighted_share"),
    (SECSampler, {"categories": CATS, "temperature": 0}, "temperature"),
    (SECSampler, {"categories": CATS, "step_size": 1.5}, "step_size"),
    pytest.param(SECSampler, {"categories": CATS[:5]}, "categories", id="sec-categories-short"),
    pytest.param(SECSampler, {"categories": CATS - 1}, "categories",
                 id="sec-categories-negative"),
], ids=lambda v: v.kind if isinstance(v, type) else v if isinstance(v, str) else "bad")
def test_bad_sizes_and_hyperparameters_name_the_parameter(cls, kw, param):
    with pytest.raises(ValueError, match=param):
        cls(**{"n_samples": N, "batch_size": B, **kw})


PUBLISHED = {
    "greso": {"target_zero_variance": 0.25, "easy_share": 1 / 3, "initial_keep": 0.5,
              "p_min": 0.05, "p_max": 0.95, "adapt_from_epoch": 1, "min_keep": 0.01,
              "filter_feedback": True},
    "greso-skip": {"filter_feedback": False},
    "mmr1": {"rescore_every": 4, "rescore_rollouts": 8, "pending_extra_rollouts": N * 8},
    "sec": {"temperature": 0.4, "decay_all": True},  # tau of SEC's MATH scripts
    "sec-passrate": {"temperature": 0.5, "decay_all": False},
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_defaults(name):
    s = _make(name)
    assert {key: getattr(s, key) for key in PUBLISHED[name]} == PUBLISHED[name]


# --- MoPPS -------------------------------------------------------------------------------


def test_mopps_update_decays_sampled_prompts_only():
    s = MoPPSSampler(N, B, decay=0.5, prior_alpha=1.0, prior_beta=2.0)
    s.a[:] = 5.0
    s.b[:] = 3.0
    s.observe(np.array([2, 9]), np.array([3, 8]), G)
    # a <- 0.5 * 5 + 0.5 * 1 + r ; b <- 0.5 * 3 + 0.5 * 2 + (G - r)
    assert s.a[[2, 9]].tolist() == [6.0, 11.0]
    assert s.b[[2, 9]].tolist() == [7.5, 2.5]
    untouched = np.setdiff1d(np.arange(N), [2, 9])
    assert np.all(s.a[untouched] == 5.0) and np.all(s.b[untouched] == 3.0)


def test_mopps_picks_posteriors_closest_to_the_target():
    s = MoPPSSampler(N, B, pool_factor=N / B)  # the pool is the whole dataset
    s.a[:], s.b[:] = 20.0, 980.0  # p ~ 0.02
    half = np.arange(5, 5 + B)
    s.a[half], s.b[half] = 1000.0, 1000.0  # p ~ 0.5
    assert set(s.select().tolist()) == set(half.tolist())


def _one_prompt_at_the_target(pool_factor: float) -> MoPPSSampler:
    """Batch 2; prompt 17 at p ~ 0.5 (the target), every other prompt at p ~ 1e-6."""
    s = MoPPSSampler(N, 2, pool_factor=pool_factor, seed=5)
    s.a[:], s.b[:] = 1.0, 1e6
    s.a[17], s.b[17] = 1e6, 1e6
    return s


def test_mopps_pool_limits_candidates():
    """Only a pool of pool_factor x B prompts is scored: the one prompt at p = 0.5 (the others
    near 0) is chosen exactly when the uniform pool holds it, 6/60 = 10% of steps; scoring all
    prompts would choose it every step. 2000 steps: 3 sigma = 2 points."""
    s = _one_prompt_at_the_target(3)
    assert s.pool_size == 6
    share = np.mean([17 in s.select() for _ in range(2000)])
    assert share == pytest.approx(0.1, abs=0.02)
    whole = _one_prompt_at_the_target(30)  # pool = all 60
    assert all(17 in whole.select() for _ in range(50))


def test_mopps_prior_from_initial_successes():
    """MoPPS's published prior: a = 3 successes + 1, b = 3 failures + 1."""
    r = np.arange(N) % (G + 1)
    s = MoPPSPriorSampler.for_run(N, B, seed=0, alpha=r, beta=G - r)
    np.testing.assert_allclose(s.a, 3 * r + 1)
    np.testing.assert_allclose(s.b, 3 * (G - r) + 1)
    assert s.config["from_initial"] and not MoPPSSampler(N, B).config["from_initial"]
    flat = MoPPSSampler.for_run(N, B, seed=0, alpha=r, beta=G - r)
    assert np.all(flat.a == 1.0) and np.all(flat.b == 1.0)


# --- GRESO -------------------------------------------------------------------------------


def test_greso_keep_probability_and_streaks():
    s = GresoSampler(N, B, initial_keep=0.5, min_keep=0.01)
    s.streak[:4] = [2, -3, 0, 9]
    s.p_hard = 0.4
    np.testing.assert_allclose(s.keep_probability()[:4], [0.25, 0.064, 1.0, 0.01])
    s.observe(np.array([0, 1, 2, 3]), np.array([8, 8, 0, 4]), G)
    assert s.streak[:4].tolist() == [3, 1, -1, 0]


def test_greso_skip_adapts_toward_the_zero_variance_target_from_the_first_step():
    s = GresoSkipSampler(N, B)
    idx = np.arange(B)
    s.observe(idx, np.full(B, G), G)  # all easy: easy share 1 > 0.125, hard share 0 <= 0.125
    assert s.p_easy == pytest.approx(0.49) and s.p_hard == pytest.approx(0.51)
    # at its target exactly (1 of 8 = 0.125) the skip variant raises p (share not above it)
    s.observe(idx, np.array([0, 4, 4, 4, 4, 4, 4, 4]), G)
    assert s.p_hard == pytest.approx(0.52)


def test_greso_adapts_only_after_epoch_0_with_published_targets():
    """Targets 0.25/3 = 0.0833 (easy) and 0.25*2/3 = 0.1667 (hard), over every observed group;
    a share at its target lowers p; nothing moves during epoch 0."""
    s = GresoSampler(N, B)
    idx = np.arange(12)
    r = np.array([8] + [0, 0] + [4] * 9)  # easy 1/12 = target; hard 2/12 = target
    s.observe(idx, r, G)
    assert (s.p_easy, s.p_hard) == (0.5, 0.5)  # epoch 0: no adaptation
    s.epoch = 1
    s.observe(idx, r, G)
    assert s.p_easy == pytest.approx(0.49) and s.p_hard == pytest.approx(0.49)
    s.observe(idx, np.full(12, 4), G)  # no zero-variance group: both rise
    assert s.p_easy == pytest.approx(0.50) and s.p_hard == pytest.approx(0.50)


def test_greso_p_stays_in_its_published_bounds():
    s = GresoSampler(N, B)
    s.epoch = 1
    idx = np.arange(B)
    for _ in range(80):  # informative only: p rises by 0.01 a step, 0.5 + 0.8 would pass 1
        s.observe(idx, np.full(B, 4), G)
    assert s.p_easy == pytest.approx(0.95) and s.p_hard == pytest.approx(0.95)
    for _ in range(120):
        s.observe(idx, np.full(B, G), G)  # all easy: p_easy falls, p_hard keeps rising
    assert s.p_easy == pytest.approx(0.05) and s.p_hard == pytest.approx(0.95)


def test_greso_refills_within_a_step_are_all_observed():
    """DAPO's filter draws several times in one step: the observation of the step matches each
    observed prompt with the keep probability of the draw that chose it."""
    s = GresoSampler(N, B)
    s.streak[:] = 1  # every prompt easy once: keep probability 0.5
    first, second = s.select(), s.select()
    both = np.concatenate([first, second])
    obs = s.observe(both, np.full(both.size, 4), G)
    np.testing.assert_allclose(obs.gain, 0.5)
    assert np.isnan(obs.p_drawn).all() and s.step == 1


def test_greso_with_nothing_to_skip_walks_epochs_without_repeats():
    s = GresoSampler(64, B)
    seen = np.concatenate([s.select() for _ in range(8)])
    assert np.sort(seen).tolist() == list(range(64))


def test_greso_skips_prompts_with_long_zero_variance_streaks():
    s = GresoSampler(N, B, min_keep=1e-9, initial_keep=0.05)
    s.streak[B:] = 50  # keep probability ~ 1e-9: effectively always skipped
    for _ in range(5):
        idx = s.select()
        assert np.all(idx < B)
        s.streak[B:] = 50


# --- MMR1 --------------------------------------------------------------------------------


def test_mmr1_rescoring_is_requested_every_k_steps_and_costs_budget():
    s = MMR1Sampler(N, B, rescore_every=3, rescore_rollouts=4)
    due = []
    for _ in range(7):
        request = s.rescore_request()
        due.append(s.pending_extra_rollouts)
        if request is not None:
            ridx, n = request
            assert n == 4 and np.array_equal(ridx, np.arange(N))
            s.observe_rescore(ridx, np.full(N, 1), n)
            assert s.pending_extra_rollouts == 0 and s.rescore_request() is None
            assert np.all(s.p_hat == 0.25)
        idx = s.select()
        s.observe(idx, np.full(B, 6), G)
        assert np.all(s.p_hat[idx] == 0.75)
    assert due == [N * 4, 0, 0, N * 4, 0, 0, N * 4]


def test_mmr1_weighted_half_comes_from_learnable_samples():
    s = MMR1Sampler(N, B, weighted_share=0.5)
    s.p_hat[:] = 1.0  # weight p(1-p) = 0
    good = np.array([3, 17, 40, 51])  # exactly B / 2 samples with positive weight
    s.p_hat[good] = 0.5
    for _ in range(5):
        idx = s.select()
        assert np.unique(idx).size == B
        assert set(good.tolist()) <= set(idx[:4].tolist())


def test_mmr1_fully_weighted_prefers_p_near_half():
    s = MMR1Sampler(N, B, weighted_share=1.0)
    s.p_hat[:] = 0.0
    s.p_hat[:B] = 0.5
    assert set(s.select().tolist()) == set(range(B))


# --- SEC ---------------------------------------------------------------------------------


def test_mean_abs_advantage_matches_grpo_normalisation():
    rewards = np.array([1, 1, 1, 0, 0, 0, 0, 0], dtype=float)
    adv = (rewards - rewards.mean()) / rewards.std(ddof=1)
    assert mean_abs_advantage(np.array([3]), np.array([8]))[0] == pytest.approx(
        np.abs(adv).mean())
    assert mean_abs_advantage(np.array([4]), np.array([8]))[0] == pytest.approx(
        np.sqrt(7 / 8))
    np.testing.assert_array_equal(mean_abs_advantage(np.array([0, 8]), np.array([8, 8])), 0.0)


@pytest.mark.parametrize("cls, kw, q0, q1", [
    # step size 0.5 from Q = 0: arm 0 gets 0.5 x mean|A| of (4 of 8, 0 of 8) = sqrt(7/8) / 4
    (SECSampler, {"step_size": 0.5, "temperature": 0.5}, [0.0, 0.0, 0.0],
     [np.sqrt(7 / 8) / 4, 0.0, 0.0]),
    # published: Q <- Q/2 + reward/2 for every arm, reward 0 for an arm not trained on
    (SECSampler, {}, [0.0, 0.0, 1.0], [np.sqrt(7 / 8) / 4, 0.0, 0.5]),
    # sec-passrate moves only the trained arms
    (SECPassRateSampler, {}, [0.0, 0.0, 1.0], [np.sqrt(7 / 8) / 4, 0.0, 1.0]),
], ids=["sec-step-0.5-from-0", "sec-published", "sec-passrate"])
def test_sec_q_update_and_boltzmann_probabilities(cls, kw, q0, q1):
    """Arms 0, 0, 1 observe 4, 0, 8 of 8 (arm 2 is not trained on); the draw is a Boltzmann
    distribution over Q at the sampler's temperature."""
    s = cls(N, B, categories=CATS, **kw)
    s.q[:] = q0
    s.observe(np.array([0, 3, 1]), np.array([4, 0, 8]), G)
    assert s.q.tolist() == pytest.approx(q1)
    e = np.exp(s.q / s.temperature)
    np.testing.assert_allclose(s.category_probabilities(), e / e.sum())


def test_label_categories_from_levels_and_from_a_difficulty_in_0_1():
    assert label_categories([1, 3, 5, 3, np.int64(1)]).tolist() == [0, 1, 2, 1, 0]
    got = label_categories([0.0, 0.19, 0.2, 0.5, 0.99, 1.0])
    assert got.tolist() == [0, 0, 1, 2, 4, 4]
    with pytest.raises(ValueError, match="training row 2: extra_info.difficulty is None"):
        label_categories([0.1, 0.2, None])
    with pytest.raises(ValueError, match="training row 1: .* 1.5 is a float outside"):
        label_categories([0.1, 1.5])


def test_sec_for_run_reads_labels_and_sec_passrate_reads_the_initial_rollouts():
    labels = [0.05] * 30 + [0.95] * 30
    s = SECSampler.for_run(N, B, seed=0, labels=labels)
    assert s.n_categories == 5 and s.sizes.tolist() == [30, 0, 0, 0, 30]
    with pytest.raises(ValueError, match="extra_info.difficulty labels"):
        SECSampler.for_run(N, B, seed=0)
    r = np.where(np.arange(N) < 20, 8.0, 0.0)
    v = SECPassRateSampler.for_run(N, B, seed=0, alpha=r, beta=G - r, labels=labels)
    assert v.sizes.tolist() == [20, 0, 0, 0, 40]  # r = 8 -> easiest bin, r = 0 -> hardest
    with pytest.raises(ValueError, match="sec-passrate starts from the initial difficulty"):
        SECPassRateSampler.for_run(N, B, seed=0, labels=labels)


def test_sec_draws_from_the_favoured_category_and_overflows_to_others():
    s = SECSampler(N, B, categories=CATS, temperature=0.01)
    s.q[:] = [0.0, 1.0, 0.0]
    idx = s.select()
    assert np.all(CATS[idx] == 1)
    small = np.zeros(N, dtype=np.int64)
    small[:3] = 1  # category 1 has only 3 samples
    s = SECSampler(N, B, categories=small, temperature=0.01)
    s.q[:] = [0.0, 1.0]
    idx = s.select()
    assert np.unique(idx).size == B and set(range(3)) <= set(idx.tolist())
