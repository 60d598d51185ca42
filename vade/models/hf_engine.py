"""``HFEngine``: batched sampling with transformers' ``generate`` on CPU (the embedded default).

Signature (the trainer's contract)::

    engine = HFEngine(policy, batch_size=64)          # policy = load_policy(path)
    engine = HFEngine(model, processor, batch_size=64)  # equivalent
    rollouts = engine.generate(examples, n, *, temperature=1.0, max_new_tokens=16, seed=0)
    # rollouts.example_pos (M,), .texts, .response_ids (M, L), .response_mask (M, L),
    # .prompt_inputs (M rows): ready for vade.models.policy.token_logprobs

Each prompt is encoded once and repeated ``n`` times, and up to ``batch_size`` responses are
generated per call. Sampling uses the full distribution (``top_k=0``, ``top_p=1``): the RL
objective's ratios are only right if the behaviour policy is exactly softmax(logits / T)
(vision placeholder tokens excluded, in sampling and in ``token_logprobs`` alike).
With ``share_prompts`` (default) each prompt is prefilled once and its KV cache repeated for its
``n`` samples (``vade.models.shared_prompt.sample_shared``: transformers' sampling rule, ~2x
faster at 16 x 8); ``share_prompts=False`` calls ``model.generate`` on ``n`` copies of each
prompt (the reference; the two agree up to float rounding in the logits).
Temperature 0 means greedy decoding. Randomness comes from ``torch.manual_seed(seed)`` inside
``torch.random.fork_rng``, so a call is deterministic for (seed, batch_size) and does not disturb
the caller's global RNG stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vade.models.policy import (
    Policy,
    PromptInputs,
    encode_prompts,
    response_mask_from_ids,
    suppressed_token_ids,
)
from vade.models.rollouts import Rollouts
from vade.models.shared_prompt import sample_shared

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example

__all__ = ["HFEngine"]


class HFEngine:
    """CPU generation engine over a loaded ``Qwen2_5_VLForConditionalGeneration``."""

    def __init__(self, model: Any, processor: Any = None, *, batch_size: int = 64,
                 share_prompts: bool = True) -> None:
        if processor is None:  # HFEngine(policy): a Policy (or anything with .model/.processor)
            model, processor = model.model, model.processor
        if batch_size < 1:
            raise ValueError(f"HFEngine: batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.processor = processor
        self.batch_size = batch_size
        self.share_prompts = share_prompts
        policy = Policy(model, processor)
        self.eos_token_ids = policy.eos_token_ids
        self.pad_token_id = policy.pad_token_id

    def generate(self, examples: Sequence[Example], n: int, *, temperature: float = 1.0,
                 max_new_tokens: int = 16, seed: int = 0, progress: Any = None) -> Rollouts:
        """``n`` sampled responses per example, grouped; ``progress`` gets ``update(k)`` per chunk."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        if n < 1:
            raise ValueError(f"HFEngine.generate: n must be >= 1, got {n}")
        if temperature < 0:
            raise ValueError(f"HFEngine.generate: temperature must be >= 0, got {temperature}")
        if max_new_tokens < 1:
            raise ValueError(f"HFEngine.generate: max_new_tokens must be >= 1, got {max_new_tokens}")
        if not examples:
            raise ValueError("HFEngine.generate: no examples")
        per_chunk = max(1, self.batch_size // n)
        suppress = suppressed_token_ids(self.model)
        if temperature > 0:
            sample = {"do_sample": True, "temperature": float(temperature), "top_k": 0, "top_p": 1.0}
        else:
            sample = {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
        ids_parts, prompt_parts = [], []
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                torch.manual_seed(seed)
                for start in range(0, len(examples), per_chunk):
                    chunk = examples[start:start + per_chunk]
                    encoded = encode_prompts(self.processor, chunk)
                    prompts = encoded.repeat_interleave(n)
                    if self.share_prompts:
                        ids_parts.append(sample_shared(
                            self.model, encoded, n, temperature=temperature,
                            max_new_tokens=max_new_tokens, eos_token_ids=self.eos_token_ids,
                            pad_token_id=self.pad_token_id, suppress=suppress))
                    else:
                        out = self.model.generate(
                            **prompts.model_kwargs(), max_new_tokens=max_new_tokens,
                            eos_token_id=self.eos_token_ids, pad_token_id=self.pad_token_id,
                            suppress_tokens=suppress, **sample)
                        ids_parts.append(out[:, prompts.input_ids.shape[1]:])
                    prompt_parts.append(prompts)
                    if progress is not None:
                        progress.update(len(chunk))
        finally:
            self.model.train(was_training)
        width = max(p.shape[1] for p in ids_parts)
        response_ids = torch.cat([torch.nn.functional.pad(p, (0, width - p.shape[1]),
                                                          value=self.pad_token_id)
                                  for p in ids_parts])
        response_mask = response_mask_from_ids(response_ids, self.eos_token_ids)
        response_ids = response_ids.masked_fill(response_mask == 0, self.pad_token_id)
        texts = self.processor.tokenizer.batch_decode(
            [row[mask.bool()] for row, mask in zip(response_ids, response_mask)],
            skip_special_tokens=True)
        return Rollouts(
            example_pos=np.repeat(np.arange(len(examples), dtype=np.int64), n),
            texts=list(texts), n=n, response_ids=response_ids, response_mask=response_mask,
            prompt_inputs=PromptInputs.concat(prompt_parts, self.pad_token_id),
        )
