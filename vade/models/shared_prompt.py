"""Teacher-forced log-probs with each distinct prompt encoded once (GRPO groups share prompts).

Why: a GRPO batch is B prompts x G responses, and the responses are short (a letter and
``<|im_end|>``) while the prompts are long (system prompt, image tokens, question): at 16 x 8 the
plain pass (``vade.models.policy.token_logprobs``) spends ~85% of its arithmetic re-running the
same 16 prompts (and their images through the vision tower) 8 times each. Here the distinct
prompts are run once with a KV cache, the cache is gathered to the G rows of each group (a
differentiable index, so gradients of all G responses flow back into the one prompt pass), and the
responses run on top of it. Mathematically the same function as the plain pass; numerically equal
to within float rounding (summation order differs: tests check |diff| < 1e-4 on log-probs and
gradients).

``sample_shared`` does the same for generation: each prompt is prefilled once and its cache
repeated for its n samples, then tokens are sampled step by step as transformers' ``generate``
samples them (softmax(logits / T) over the vocabulary without the vision placeholders, one
``torch.multinomial`` draw per row per step, finished rows padded, stop when all rows ended).

Positions: Qwen2.5-VL's 3-D mrope positions of a prompt come from ``get_rope_index`` on the
prompt alone (positions never depend on later tokens); response token k of a row sits at the
prompt's last position + 1 + k in all three axes (text after the image continues the text
index), which is what ``get_rope_index`` gives the concatenated sequence.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from vade.models.policy import PromptInputs

__all__ = ["distinct_prompts", "sample_shared", "shared_prompt_logits"]


def distinct_prompts(prompts: PromptInputs) -> tuple[list[int], torch.Tensor]:
    """(first row of each distinct prompt, inverse: row -> position in that list).

    Two rows are the same prompt when their token ids, attention mask and image patches are
    byte-equal (a hash of all three; rows of one group are repeats of one encoding, so equal).
    """
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    patch_rows = prompts._patch_rows()
    first: dict[bytes, int] = {}
    order: list[int] = []
    inverse = []
    for row in range(len(prompts)):
        h = hashlib.blake2b(digest_size=16)
        h.update(prompts.input_ids[row].numpy().tobytes())
        h.update(prompts.attention_mask[row].numpy().tobytes())
        if prompts.pixel_values is not None:
            h.update(prompts.pixel_values[patch_rows[row]].numpy().tobytes())
        key = h.digest()
        if key not in first:
            first[key] = len(order)
            order.append(row)
        inverse.append(first[key])
    return order, torch.tensor(inverse, dtype=torch.long)


def shared_prompt_logits(model: Any, prompts: PromptInputs, response_ids: torch.Tensor,
                         response_mask: torch.Tensor) -> torch.Tensor | None:
    """Logits (N, L, V) predicting each response token, or None when no prompt repeats
    (then the plain pass is as cheap and the caller uses it)."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    order, inverse = distinct_prompts(prompts)
    if len(order) == len(prompts):
        return None
    last, cache, start, prompt_mask = _prefill(model, prompts.select(order))
    cache.batch_select_indices(inverse)  # differentiable gather: group rows share one prompt
    width, length = prompt_mask.shape[1], response_ids.shape[1]
    resp_pos = (start[inverse, None] + torch.arange(length)).unsqueeze(0).expand(3, -1, -1)
    mask = torch.cat([prompt_mask[inverse], response_mask.to(prompt_mask.dtype)], dim=1)
    out = model(input_ids=response_ids.long(), attention_mask=mask, position_ids=resp_pos,
                past_key_values=cache, cache_position=torch.arange(width, width + length),
                use_cache=True)
    return torch.cat([last[inverse, None, :], out.logits[:, :-1, :]], dim=1)


def _prefill(model: Any, prompts: PromptInputs) -> tuple[Any, Any, torch.Tensor, torch.Tensor]:
    """One pass over the prompts: (last-position logits (U, V), KV cache, first response
    position per row (U,), attention mask (U, P))."""
    kw = prompts.model_kwargs()
    positions, _ = model.model.get_rope_index(kw["input_ids"], kw.get("image_grid_thw"), None,
                                              attention_mask=kw["attention_mask"])
    out = model(**kw, position_ids=positions, use_cache=True, logits_to_keep=1)
    # left padding: the last column is every prompt's last token
    return out.logits[:, -1, :], out.past_key_values, positions[0, :, -1] + 1, kw["attention_mask"]


def sample_shared(model: Any, prompts: PromptInputs, n: int, *, temperature: float,
                  max_new_tokens: int, eos_token_ids: list[int], pad_token_id: int,
                  suppress: list[int]) -> torch.Tensor:
    """Response ids (U * n, L), rows k*n .. k*n+n-1 sampled after prompt k; temperature 0 is
    greedy. Draws from the global torch RNG (the caller seeds it)."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    logits, cache, start, mask = _prefill(model, prompts)
    cache.batch_repeat_interleave(n)
    logits = logits.repeat_interleave(n, dim=0)
    start, mask = start.repeat_interleave(n), mask.repeat_interleave(n, dim=0)
    width = mask.shape[1]
    eos = torch.tensor(eos_token_ids, dtype=torch.long)
    finished = torch.zeros(len(start), dtype=torch.bool)
    tokens: list[torch.Tensor] = []
    for t in range(max_new_tokens):
        scores = logits.float()
        scores[:, suppress] = float("-inf")
        if temperature > 0:
            probs = torch.softmax(scores / temperature, dim=-1)
            nxt = torch.multinomial(probs, num_samples=1).squeeze(1)
        else:
            nxt = scores.argmax(dim=-1)
        nxt = torch.where(finished, torch.full_like(nxt, pad_token_id), nxt)
        tokens.append(nxt)
        finished |= torch.isin(nxt, eos)
        if bool(finished.all()) or t + 1 == max_new_tokens:
            break
        mask = torch.cat([mask, mask.new_ones((len(start), 1))], dim=1)
        pos = (start + t).view(1, -1, 1).expand(3, -1, -1)
        out = model(input_ids=nxt[:, None], attention_mask=mask, position_ids=pos,
                    past_key_values=cache, cache_position=torch.tensor([width + t]),
                    use_cache=True)
        logits = out.logits[:, -1, :]
    return torch.stack(tokens, dim=1)
