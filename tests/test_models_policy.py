"""The trainer's interface to the policy: prompt encoding, batching and teacher-forced log-probs.

The key property: ``token_logprobs`` on a left-padded batch with ragged responses equals the
same computation row by row, and equals the log-softmax of the scores ``generate`` sampled from,
so the RL ratio pi/pi_old is 1 on the first update (mrope positions handled correctly).
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from vade.models.policy import (
    PromptInputs,
    encode_prompts,
    encode_responses,
    response_mask_from_ids,
    suppressed_token_ids,
    token_logprobs,
)
from vade.models.testing import bar_examples, tiny_policy


@pytest.fixture(scope="module")
def policy():
    return tiny_policy(bar_examples(6, seed=3))


@pytest.fixture(scope="module")
def examples():
    exs = bar_examples(4, seed=5)
    # Different prompt lengths, so the batch really is left-padded.
    longer = [{"role": "user", "content": m["content"] + " Look carefully at every bar first."}
              for m in exs[1].messages]
    exs[1] = dataclasses.replace(exs[1], messages=longer)
    exs[3] = dataclasses.replace(exs[3], messages=[{"role": "user", "content": "<image>Tallest?"}])
    return exs


def test_encode_prompts_left_pads_and_places_image_tokens(policy, examples):
    pi = encode_prompts(policy.processor, examples)
    image_id = policy.model.config.image_token_id
    assert len(pi) == 4 and pi.image_counts.tolist() == [1, 1, 1, 1]
    # 56x56 image, patch 14, merge 2 -> grid (1, 4, 4) -> 16 patches -> 4 image tokens per row
    assert pi.image_grid_thw.tolist() == [[1, 4, 4]] * 4
    assert pi.pixel_values.shape[0] == 64
    assert (pi.input_ids == image_id).sum(1).tolist() == [4, 4, 4, 4]
    lengths = pi.attention_mask.sum(1)
    assert lengths[1] > lengths[0] > lengths[3]
    # left padding: every row ends with a real token ("assistant\n"), padding only at the start
    assert pi.attention_mask[:, -1].tolist() == [1, 1, 1, 1]
    assert pi.attention_mask[3, 0] == 0
    text = policy.tokenizer.decode(pi.input_ids[0][pi.attention_mask[0].bool()])
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_select_reorders_pixels_with_their_prompts(policy, examples):
    full = encode_prompts(policy.processor, examples)
    picked = full.select([2, 0, 2])
    direct = encode_prompts(policy.processor, [examples[2], examples[0], examples[2]])
    assert torch.equal(picked.pixel_values, direct.pixel_values)
    assert torch.equal(picked.image_grid_thw, direct.image_grid_thw)
    # rows 0 and 2 have the same prompt length: the all-padding columns are dropped
    assert picked.input_ids.shape == direct.input_ids.shape
    assert torch.equal(picked.input_ids, direct.input_ids)
    both = PromptInputs.concat([full.select([3]), full.select([1])], policy.pad_token_id)
    assert torch.equal(both.pixel_values, full.select([3, 1]).pixel_values)
    assert torch.equal(both.attention_mask, full.select([3, 1]).attention_mask)


def test_corrupt_image_and_marker_mismatch_name_the_row(policy, examples):
    bad = dataclasses.replace(examples[0], images=[b"not a png"])
    with pytest.raises(ValueError, match=r"row index=0: image 0 cannot be decoded"):
        encode_prompts(policy.processor, [bad])
    two = dataclasses.replace(examples[1], images=examples[1].images * 2)
    with pytest.raises(ValueError, match=r"row index=1: 1 '<image>' markers .* 2 images"):
        encode_prompts(policy.processor, [two])


def _ragged_responses(policy, n):
    """Responses of lengths 5, 2, 4, 1 (end of turn included), right-padded with pad ids."""
    ids, mask = encode_responses(policy.tokenizer, ["\\boxed{A} ok", "B", "\\boxed{C}", ""][:n])
    return ids, mask


def test_response_encoding_and_mask(policy):
    ids, mask = _ragged_responses(policy, 4)
    end = policy.tokenizer.convert_tokens_to_ids("<|im_end|>")
    lengths = mask.sum(1).tolist()
    assert lengths[3] == 1 and ids[3, 0] == end  # empty text -> just the end of turn
    assert all(ids[i, n - 1] == end for i, n in enumerate(lengths))
    assert torch.equal(response_mask_from_ids(ids, [end]), mask)


def test_batched_logprobs_equal_row_by_row(policy, examples):
    pi = encode_prompts(policy.processor, examples)
    ids, mask = _ragged_responses(policy, 4)
    batched = token_logprobs(policy.model, pi, ids, mask)
    assert batched.shape == ids.shape
    for i in range(4):
        one = token_logprobs(policy.model, pi.select([i]), ids[i:i + 1], mask[i:i + 1])
        torch.testing.assert_close(batched[i:i + 1], one, atol=1e-5, rtol=1e-5)
    assert torch.all(batched[mask == 0] == 0)
    assert torch.all(batched[mask == 1] < 0)


def test_logprob_of_first_token_matches_plain_forward(policy, examples):
    """Hand check: the first response token's log-prob is log_softmax(last prompt logits)."""
    pi = encode_prompts(policy.processor, examples[:1])
    ids, mask = _ragged_responses(policy, 1)
    lp = token_logprobs(policy.model, pi, ids, mask)
    with torch.no_grad():
        logits = policy.model(**pi.model_kwargs()).logits[0, -1].clone()
    logits[suppressed_token_ids(policy.model)] = float("-inf")
    expected = torch.log_softmax(logits, -1)[ids[0, 0]]
    torch.testing.assert_close(lp[0, 0].detach(), expected, atol=1e-5, rtol=1e-5)
    # temperature divides the logits before the softmax
    lp2 = token_logprobs(policy.model, pi, ids, mask, temperature=2.0)
    torch.testing.assert_close(lp2[0, 0].detach(), torch.log_softmax(logits / 2, -1)[ids[0, 0]],
                               atol=1e-5, rtol=1e-5)


def test_logprobs_match_generate_scores(policy, examples):
    pi = encode_prompts(policy.processor, examples)
    torch.manual_seed(0)
    out = policy.model.generate(
        **pi.model_kwargs(), do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
        max_new_tokens=6, output_scores=True, return_dict_in_generate=True,
        eos_token_id=policy.eos_token_ids, pad_token_id=policy.pad_token_id,
        suppress_tokens=suppressed_token_ids(policy.model))
    resp = out.sequences[:, pi.input_ids.shape[1]:]
    mask = response_mask_from_ids(resp, policy.eos_token_ids)
    scores = torch.stack([torch.log_softmax(s, -1) for s in out.scores], 1)
    expected = scores.gather(-1, resp.unsqueeze(-1)).squeeze(-1) * mask
    got = token_logprobs(policy.model, pi, resp, mask)
    torch.testing.assert_close(got.detach(), expected, atol=2e-5, rtol=1e-5)


def test_logprobs_are_differentiable_and_see_the_image(policy, examples):
    pi = encode_prompts(policy.processor, examples[:2])
    ids, mask = _ragged_responses(policy, 2)
    policy.model.zero_grad()
    lp = token_logprobs(policy.model, pi, ids, mask)
    lp.sum().backward()
    vision_grad = policy.model.model.visual.patch_embed.proj.weight.grad
    assert vision_grad is not None and torch.isfinite(vision_grad).all()
    assert vision_grad.abs().sum() > 0
    policy.model.zero_grad()
    blank = dataclasses.replace(pi, pixel_values=torch.zeros_like(pi.pixel_values))
    with torch.no_grad():
        assert not torch.allclose(token_logprobs(policy.model, blank, ids, mask), lp.detach())


def test_bad_shapes_raise(policy, examples):
    pi = encode_prompts(policy.processor, examples[:2])
    ids, mask = _ragged_responses(policy, 3)
    with pytest.raises(ValueError, match="2 prompts"):
        token_logprobs(policy.model, pi, ids, mask)
