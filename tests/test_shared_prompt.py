"""Prompt sharing (``vade.models.shared_prompt``): each distinct prompt runs once, its KV cache is
gathered to its group's rows. It must be the same function as the full per-row pass.

Real: transformers' Qwen2.5-VL at toy sizes (``tiny_policy``, random weights, so responses and
log-probs are varied), real image patches and mrope positions, left-padded prompts of different
lengths, ragged responses. The reference is the full pass (``share_prompts=False``) and
transformers' own ``generate``.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from test_rollout_engines import policy  # noqa: F401  (the same tiny policy fixture)

from vade.models.policy import encode_prompts, suppressed_token_ids, token_logprobs
from vade.models.shared_prompt import distinct_prompts
from vade.models.testing import bar_examples
from vade.rollout import HFEngine


@pytest.fixture(scope="module")
def prompts(policy):  # noqa: F811 (the imported fixture)
    exs = bar_examples(4, seed=5)
    longer = [{"role": "user", "content": m["content"] + " Look carefully at every bar first."}
              for m in exs[1].messages]
    exs[1] = dataclasses.replace(exs[1], messages=longer)  # a longer prompt: real left padding
    # repeats out of order, as a DAPO batch kept from several pieces may hold them
    return encode_prompts(policy.processor, exs).select([0, 0, 1, 2, 1, 3, 3, 0])


def _responses(pol, n: int, length: int = 7) -> tuple[torch.Tensor, torch.Tensor]:
    """Random response tokens (never a vision placeholder), ragged lengths 1..length."""
    g = torch.Generator().manual_seed(0)
    vocab = pol.model.config.text_config.vocab_size
    banned = set(suppressed_token_ids(pol.model))
    allowed = torch.tensor([t for t in range(vocab) if t not in banned])
    ids = allowed[torch.randint(len(allowed), (n, length), generator=g)]
    lengths = torch.tensor([1, 7, 3, 5, 7, 2, 6, 4])[:n]
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    return ids, mask


def test_distinct_prompts_groups_equal_rows(prompts):
    order, inverse = distinct_prompts(prompts)
    assert order == [0, 2, 3, 5]
    assert inverse.tolist() == [0, 0, 1, 2, 1, 3, 3, 0]


def test_shared_logprobs_and_gradients_equal_the_full_pass(policy, prompts):  # noqa: F811
    ids, mask = _responses(policy, len(prompts))
    model = policy.model
    full = token_logprobs(model, prompts, ids, mask, temperature=0.7, share_prompts=False)
    shared = token_logprobs(model, prompts, ids, mask, temperature=0.7)
    assert (full != 0).sum() == mask.sum()  # every real token scored
    torch.testing.assert_close(shared, full, atol=1e-5, rtol=1e-5)
    grads = []
    for share in (False, True):
        model.zero_grad(set_to_none=True)
        (token_logprobs(model, prompts, ids, mask, share_prompts=share) * 0.1).sum().backward()
        grads.append({k: p.grad.clone() for k, p in model.named_parameters()
                      if p.grad is not None})
    model.zero_grad(set_to_none=True)
    assert grads[0].keys() == grads[1].keys()
    assert any("visual" in k for k in grads[0])  # the vision tower gets its gradient too
    for k in grads[0]:
        torch.testing.assert_close(grads[1][k], grads[0][k], atol=1e-4, rtol=1e-4)


def test_shared_sampling_draws_what_generate_draws(policy):  # noqa: F811
    """Same seed, same RNG use: the shared sampler and ``model.generate`` give the same tokens
    (sampled at T=1 and greedy), ragged endings and padding included."""
    exs = bar_examples(5, seed=8)
    plain = HFEngine(policy, batch_size=12, share_prompts=False)
    shared = HFEngine(policy, batch_size=12)
    # A random model rarely ends a turn: also stop on its most frequent token, so rows end at
    # different steps and the padding of finished rows is compared too.
    probe = plain.generate(exs, 4, temperature=1.0, max_new_tokens=9, seed=11)
    frequent = int(torch.mode(probe.response_ids.flatten()).values)
    for engine in (plain, shared):
        engine.eos_token_ids = [*engine.eos_token_ids, frequent]
    for temperature in (1.0, 0.0):
        a = plain.generate(exs, 4, temperature=temperature, max_new_tokens=9, seed=11)
        b = shared.generate(exs, 4, temperature=temperature, max_new_tokens=9, seed=11)
        assert a.texts == b.texts
        assert torch.equal(a.response_ids, b.response_ids)
        assert torch.equal(a.response_mask, b.response_mask)
        if temperature:
            assert len(set(a.texts)) > 3  # varied responses: a real comparison
            assert a.response_mask.sum(1).unique().numel() > 2  # ragged lengths
