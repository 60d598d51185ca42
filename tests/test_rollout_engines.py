"""Generation engines: grouping, determinism, masks, texts, and the vLLM engine's missing-install
error. The HF engine's outputs must feed ``token_logprobs`` directly (the trainer's path)."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from vade.models.policy import token_logprobs
from vade.models.testing import bar_examples, tiny_policy
from vade.rollout import GenerationEngine, HFEngine, Rollouts, make_engine


@pytest.fixture(scope="module")
def policy():
    return tiny_policy(bar_examples(6, seed=3))


@pytest.fixture(scope="module")
def examples():
    return bar_examples(5, seed=8)


def _gen(engine, examples, seed, n=3, temperature=1.0, max_new_tokens=6):
    return engine.generate(examples, n, temperature=temperature, max_new_tokens=max_new_tokens,
                           seed=seed)


def test_hf_engine_groups_and_masks(policy, examples):
    engine = HFEngine(policy, batch_size=4)  # 4 rows per call: 1 example (3 rows) per chunk
    assert isinstance(engine, GenerationEngine)
    ro = _gen(engine, examples, seed=1)
    assert len(ro) == 15 and ro.n == 3
    assert ro.example_pos.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    assert ro.response_ids.shape == ro.response_mask.shape and ro.response_ids.shape[1] <= 6
    assert len(ro.prompt_inputs) == 15
    eos = set(engine.eos_token_ids)
    for ids, mask, text in zip(ro.response_ids.tolist(), ro.response_mask.tolist(), ro.texts):
        n = sum(mask)
        assert mask == [1] * n + [0] * (len(mask) - n)  # ones, then zeros
        assert not any(t in eos for t in ids[:n - 1])  # no end of turn before the last kept token
        assert all(t == engine.pad_token_id for t in ids[n:])
        assert text == policy.tokenizer.decode(ids[:n], skip_special_tokens=True)
    banned = {policy.model.config.to_dict()[k] for k in ("image_token_id", "video_token_id")}
    assert not banned & set(ro.response_ids.flatten().tolist())
    # the prompt of response row k is the prompt of example k // 3
    for k in (0, 7, 14):
        one = engine.generate([examples[k // 3]], 1, max_new_tokens=1, seed=0).prompt_inputs
        mask = ro.prompt_inputs.attention_mask[k].bool()
        assert ro.prompt_inputs.input_ids[k][mask].tolist() == one.input_ids[0].tolist()


def test_hf_engine_is_deterministic_per_seed_and_keeps_global_rng(policy, examples):
    engine = HFEngine(policy.model, policy.processor, batch_size=8)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = _gen(engine, examples, seed=7)
    after = torch.rand(1)
    b = _gen(engine, examples, seed=7)
    c = _gen(engine, examples, seed=8)
    assert torch.equal(before, after)  # the caller's RNG stream is untouched
    assert a.texts == b.texts and torch.equal(a.response_ids, b.response_ids)
    assert a.texts != c.texts


def test_greedy_gives_identical_group_members(policy, examples):
    ro = _gen(HFEngine(policy, batch_size=16), examples, seed=0, n=4, temperature=0.0)
    for g in range(len(examples)):
        rows = ro.response_ids[ro.example_pos == g]
        assert all(torch.equal(rows[0], r) for r in rows)


def test_rollouts_feed_token_logprobs_and_select(policy, examples):
    ro = _gen(HFEngine(policy, batch_size=6), examples, seed=2)
    lp = token_logprobs(policy.model, ro.prompt_inputs, ro.response_ids, ro.response_mask)
    assert lp.shape == ro.response_ids.shape and torch.isfinite(lp).all()
    sub = ro.select([14, 0])
    assert sub.example_pos.tolist() == [4, 0] and sub.texts == [ro.texts[14], ro.texts[0]]
    lp_sub = token_logprobs(policy.model, sub.prompt_inputs, sub.response_ids, sub.response_mask)
    torch.testing.assert_close(lp_sub, lp[[14, 0]], atol=1e-5, rtol=1e-5)


def test_correct_counts_per_group():
    ro = Rollouts(example_pos=np.repeat(np.arange(3), 2), texts=list("abcdef"), n=2)
    assert ro.correct_counts(np.array([1, 1, 0, 1, 0, 0.0])).tolist() == [2, 1, 0]
    with pytest.raises(ValueError, match="expected \\(6,\\)"):
        ro.correct_counts(np.ones(5))
    with pytest.raises(ValueError, match="example_pos"):
        Rollouts(example_pos=np.zeros(2, dtype=np.int64), texts=["a"], n=1)


def test_bad_generation_arguments(policy, examples):
    engine = HFEngine(policy)
    with pytest.raises(ValueError, match="n must be >= 1"):
        _gen(engine, examples, seed=0, n=0)
    with pytest.raises(ValueError, match="temperature"):
        _gen(engine, examples, seed=0, temperature=-1.0)
    with pytest.raises(ValueError, match="unknown generation engine 'sglang'"):
        make_engine("sglang", "/nonexistent")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_engine_missing_is_a_clear_error():
    with pytest.raises(RuntimeError, match="needs the vllm package.*engine 'hf'"):
        make_engine("vllm", "/nonexistent/model")
