"""Advantage, policy loss, KL and aggregation: hand-computed numbers, then identity with verl.

The hand-computed cases pin the math; the verl cases run the same random inputs through
``verl.trainer.ppo.core_algos`` (0.7.1) and through ``vade.train.algos`` and require equal values
and equal gradients, so the local trainer and the verl backend optimise the same objective.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vade.train.algos import agg_loss, group_advantages, kl_penalty, policy_loss, total_loss

torch.set_num_threads(1)


# ---------------------------------------------------------------- hand-computed
def test_group_advantage_hand_computed_and_grouped_by_id_not_position():
    # three groups of G = 4, interleaved so that grouping by position would be wrong
    #   A: 1 0 0 1 -> mean .5, unbiased std sqrt(4 * .25 / 3) = .57735 -> +-.866025
    #   B: 1 1 1 1 -> zero variance -> 0 (no gradient: the groups VADE avoids)
    #   C: 0 1 0 0 -> mean .25, std sqrt((3 * .0625 + .5625) / 3) = .5 -> -.5, 1.5, -.5, -.5
    ids = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2])
    r = torch.tensor([1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0], dtype=torch.float32)
    adv = group_advantages(r, ids)
    a = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    expected = [a, 0, -0.5, -a, 0, 1.5, -a, 0, -0.5, a, 0, -0.5]
    np.testing.assert_allclose(adv.numpy(), expected, atol=1e-5)
    assert torch.all(adv[ids == 1] == 0)  # exactly zero, not eps-small
    # Dr.GRPO variant: no std scaling
    np.testing.assert_allclose(group_advantages(r, ids, norm_by_std=False)[[0, 2, 5]].numpy(),
                               [0.5, -0.25, 0.75], atol=1e-7)


def test_zero_variance_group_is_exactly_zero_for_non_binary_rewards_and_singleton_is_verls():
    r = torch.tensor([0.1, 0.1, 0.1, 0.7], dtype=torch.float32)
    adv = group_advantages(r, np.array([5, 5, 5, 9]))
    assert torch.all(adv[:3] == 0)
    assert adv[3].item() == pytest.approx(0.7 / (1 + 1e-6))  # singleton: mean 0, std 1 (verl)


def test_ppo_clip_and_dual_clip_hand_computed():
    # one response, 4 tokens: (A, ratio) = (+1, 1.5) (-1, 5) (-1, .5) (+1, .5), clip .2, c = 3
    #   +1, 1.5: max(-1.5, -1.2) = -1.2   (clipped above)
    #   -1, 5  : max(5, 1.2) = 5, dual min(3, 5) = 3
    #   -1, .5 : max(.5, .8) = .8
    #   +1, .5 : max(-.5, -.8) = -.5
    ratio = torch.tensor([[1.5, 5.0, 0.5, 0.5]])
    adv = torch.tensor([[1.0, -1.0, -1.0, 1.0]])
    old = torch.zeros(1, 4)
    loss, m = policy_loss(old, torch.log(ratio), adv, torch.ones(1, 4))
    assert loss.item() == pytest.approx((-1.2 + 3 + 0.8 - 0.5) / 4, abs=1e-6)
    assert m["actor/pg_clipfrac"] == pytest.approx(0.5)  # tokens 1 and 3: the clipped term won
    assert m["actor/pg_clipfrac_lower"] == pytest.approx(0.25)  # token 2 hit the dual clip
    # asymmetric clip (DAPO clip-higher): high .28 lets the first token reach 1.28
    loss_hi, _ = policy_loss(old, torch.log(ratio), adv, torch.ones(1, 4), clip_ratio_high=0.28)
    assert loss_hi.item() == pytest.approx((-1.28 + 3 + 0.8 - 0.5) / 4, abs=1e-6)


def test_gspo_sequence_ratio_hand_computed():
    # seq 1: token log-ratios (ln 2, 0) -> s = exp(ln2 / 2) = 1.414, A = +1 -> clipped to -1.2
    # seq 2: (ln .5, ln .5) -> s = .5, A = -1 -> max(.5, .8) = .8; seq-mean -> (-1.2 + .8) / 2
    logp = torch.log(torch.tensor([[2.0, 1.0], [0.5, 0.5]]))
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    loss, _ = policy_loss(torch.zeros(2, 2), logp, adv, torch.ones(2, 2), loss_mode="gspo",
                          loss_agg_mode="token-mean")  # ignored for gspo, as in verl
    assert loss.item() == pytest.approx(-0.2, abs=1e-6)
    # unclipped: the gradient of each token is -A * s / |y| (straight-through sequence ratio)
    logp2 = torch.log(torch.tensor([[1.1, 1.0]])).requires_grad_()
    loss2, _ = policy_loss(torch.zeros(1, 2), logp2, torch.ones(1, 2), torch.ones(1, 2),
                           loss_mode="gspo", clip_ratio_low=0.5, clip_ratio_high=0.5)
    loss2.backward()
    s = math.sqrt(1.1)
    np.testing.assert_allclose(logp2.grad.numpy(), [[-s / 2, -s / 2]], rtol=1e-5)


def test_k3_kl_and_aggregation_modes_hand_computed():
    # logp = ln .5, ref = ln .25: d = ln .5, k3 = e^d - d - 1 = .5 + .693147 - 1
    k3 = kl_penalty(torch.log(torch.tensor([0.5])), torch.log(torch.tensor([0.25])))
    assert k3.item() == pytest.approx(0.5 + math.log(2) - 1, abs=1e-6)
    assert kl_penalty(torch.zeros(3), torch.zeros(3)).abs().max().item() == 0
    # rows: [1 2 3] all valid, [4 . .] one valid, [9 9 9] fully masked (excluded)
    mat = torch.tensor([[1.0, 2, 3], [4, 0, 0], [9, 9, 9]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]])
    assert agg_loss(mat, mask, "token-mean").item() == pytest.approx(10 / 4)
    assert agg_loss(mat, mask, "seq-mean-token-mean").item() == pytest.approx((2 + 4) / 2)
    assert agg_loss(mat, mask, "seq-mean-token-sum").item() == pytest.approx((6 + 4) / 2)
    with pytest.raises(ValueError, match="loss_agg_mode"):
        agg_loss(mat, mask, "sum")


def test_total_loss_adds_weighted_kl_and_skips_it_without_reference():
    logp = torch.log(torch.tensor([[0.5, 0.5]]))
    ref = torch.log(torch.tensor([[0.25, 0.25]]))
    adv = torch.ones(1, 2)
    base, _ = total_loss(logp, logp, adv, torch.ones(1, 2), ref_logp=None, kl_coef=0.1,
                         kl_type="low_var_kl")
    with_kl, m = total_loss(logp, logp, adv, torch.ones(1, 2), ref_logp=ref, kl_coef=0.1,
                            kl_type="low_var_kl")
    assert base.item() == pytest.approx(-1.0)  # ratio 1, A = 1
    assert with_kl.item() == pytest.approx(-1.0 + 0.1 * (0.5 + math.log(2) - 1), abs=1e-6)
    assert m["actor/kl_loss"] == pytest.approx(0.5 + math.log(2) - 1, abs=1e-6)


# ---------------------------------------------------------------- identity with verl
@pytest.fixture(scope="module")
def verl_algos():
    core = pytest.importorskip("verl.trainer.ppo.core_algos")
    return core


def _random_batch(seed: int, n_groups=5, g=4, length=9):
    gen = torch.Generator().manual_seed(seed)
    n = n_groups * g
    ids = np.repeat(np.arange(n_groups), g)[torch.randperm(n, generator=gen).numpy()]
    rewards = torch.randint(0, 2, (n,), generator=gen).float()
    rewards[ids == 0] = 1.0  # one zero-variance group
    lengths = torch.randint(1, length + 1, (n,), generator=gen)
    mask = (torch.arange(length)[None] < lengths[:, None]).float()
    old = -torch.rand(n, length, generator=gen) * 3
    logp = old + torch.randn(n, length, generator=gen) * 0.3
    ref = old + torch.randn(n, length, generator=gen) * 0.2
    return ids, rewards, mask, old, logp, ref


def _actor_config(loss_mode, low, high, c, agg):
    from verl.workers.config import ActorConfig, PolicyLossConfig

    return ActorConfig(strategy="fsdp", rollout_n=4, ppo_mini_batch_size=4,
                       ppo_micro_batch_size_per_gpu=4, clip_ratio=0.2, clip_ratio_low=low,
                       clip_ratio_high=high, clip_ratio_c=c, loss_agg_mode=agg,
                       policy_loss=PolicyLossConfig(loss_mode=loss_mode), use_kl_loss=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("norm", [True, False])
def test_grpo_advantage_equals_verl(verl_algos, seed, norm):
    ids, rewards, mask, *_ = _random_batch(seed)
    token_rewards = torch.zeros_like(mask)
    last = mask.sum(-1).long() - 1
    token_rewards[torch.arange(len(ids)), last] = rewards  # score on the last token, as verl
    theirs, _ = verl_algos.compute_grpo_outcome_advantage(token_rewards, mask, ids,
                                                          norm_adv_by_std_in_grpo=norm)
    ours = group_advantages(rewards, ids, norm_by_std=norm)[:, None] * mask
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("loss_mode,low,high,agg", [
    ("vanilla", 0.2, 0.2, "token-mean"),
    ("vanilla", 0.2, 0.28, "seq-mean-token-mean"),
    ("vanilla", 0.1, 0.3, "seq-mean-token-sum"),
    ("gspo", 3e-4, 4e-4, "seq-mean-token-mean"),
    ("gspo", 0.05, 0.1, "token-mean"),
])
@pytest.mark.parametrize("seed", [0, 3])
def test_policy_and_kl_loss_and_gradients_equal_verl(verl_algos, loss_mode, low, high, agg, seed):
    ids, rewards, mask, old, logp, ref = _random_batch(seed)
    adv = group_advantages(rewards, ids)[:, None] * mask
    cfg = _actor_config(loss_mode, low, high, 3.0, agg)
    theirs_logp = logp.clone().requires_grad_()
    ours_logp = logp.clone().requires_grad_()

    fn = verl_algos.get_policy_loss_fn(loss_mode)
    pg, theirs_m = fn(old_log_prob=old, log_prob=theirs_logp, advantages=adv,
                      response_mask=mask, loss_agg_mode=agg, config=cfg)
    kl = verl_algos.agg_loss(loss_mat=verl_algos.kl_penalty(theirs_logp, ref, "low_var_kl"),
                             loss_mask=mask, loss_agg_mode=agg)
    (pg + 0.01 * kl).backward()

    ours, ours_m = total_loss(old, ours_logp, adv, mask, ref_logp=ref, kl_coef=0.01,
                              kl_type="low_var_kl", loss_mode=loss_mode, clip_ratio_low=low,
                              clip_ratio_high=high, clip_ratio_c=3.0, loss_agg_mode=agg)
    ours.backward()
    torch.testing.assert_close(ours.detach(), (pg + 0.01 * kl).detach(), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ours_logp.grad, theirs_logp.grad, atol=1e-7, rtol=1e-5)
    assert ours_m["actor/kl_loss"] == pytest.approx(kl.item(), abs=1e-6)
    for key, value in theirs_m.items():
        assert ours_m[key] == pytest.approx(value, abs=1e-6), key


@pytest.mark.parametrize("kind", ["low_var_kl", "kl", "mse", "abs"])
def test_kl_penalty_equals_verl(verl_algos, kind):
    _, _, _, _, logp, ref = _random_batch(4)
    logp = logp * 8  # reach the clamps
    torch.testing.assert_close(kl_penalty(logp, ref, kind),
                               verl_algos.kl_penalty(logp, ref, kind))
