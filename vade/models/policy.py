"""The policy as the trainer and the rollout engines see it: load, encode prompts, score responses.

Public API (the local trainer builds on these; signatures are a contract):

* ``load_policy(path, *, threads=None) -> Policy`` — a ``NamedTuple(model, processor)`` opened with
  ``Qwen2_5_VLForConditionalGeneration.from_pretrained`` / ``AutoProcessor.from_pretrained``
  (the loaders lmms-eval and verl use), CPU float32, eval mode. ``policy.eos_token_ids`` and
  ``policy.pad_token_id`` name the end-of-turn and padding ids.
* ``encode_prompts(processor, examples) -> PromptInputs`` — chat template (Qwen's, default system
  prompt, one image placeholder per ``<image>`` marker), images decoded from bytes, left-padded.
* ``PromptInputs`` — ``input_ids`` (N, P), ``attention_mask`` (N, P), ``pixel_values``
  (patches, C*T*p*p), ``image_grid_thw`` (images, 3), ``image_counts`` (N,). ``select(rows)``,
  ``repeat_interleave(n)``, ``concat([...])`` keep pixel rows aligned with their prompts (the
  patches of row i are not at a fixed offset, so never slice ``pixel_values`` by hand).
* ``encode_responses(tokenizer, texts, *, max_length) -> (response_ids, response_mask)`` — texts
  + ``<|im_end|>``, right-padded (teacher-forcing targets for the warm start).
* ``token_logprobs(model, prompt_inputs, response_ids, response_mask, *, temperature=1.0)
  -> Tensor (N, L)`` — log pi(response token | prompt, previous tokens) under teacher forcing,
  differentiable, 0 where ``response_mask`` is 0. Row i of ``response_ids`` continues row i of
  ``prompt_inputs``. Logits are divided by ``temperature`` first, as verl's actor does, so pass
  the rollout temperature to get the behaviour policy's log-probs. Vision placeholder tokens
  (``suppressed_token_ids(model)``) are excluded from the softmax, as in ``HFEngine`` sampling.
* ``Policy.save(folder)`` — ``save_pretrained`` of model + processor (what ``load_policy`` opens).

Why positions need care: Qwen2.5-VL uses 3-D mrope positions (time, height, width) for image
tokens and text positions that continue after the image grid's maximum. We never pass
``position_ids``: the model derives them from ``input_ids``, ``image_grid_thw`` and the attention
mask (``get_rope_index`` skips masked tokens), which is what ``generate`` does during prefill and
decode. Left padding in the prompt and right padding in the response are therefore both safe;
``tests/test_models_policy.py`` checks batched against per-row and against ``generate`` scores.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from vade.data.records import IMAGE_TOKEN
from vade.models.shared_prompt import shared_prompt_logits

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from vade.data.records import Example

__all__ = [
    "Policy",
    "PromptInputs",
    "chat_messages",
    "encode_prompts",
    "encode_responses",
    "load_policy",
    "response_mask_from_ids",
    "suppressed_token_ids",
    "token_logprobs",
]


class Policy(NamedTuple):
    """A model and its processor; unpack as ``model, processor = load_policy(path)``."""

    model: Any
    processor: Any

    @property
    def tokenizer(self) -> Any:
        return self.processor.tokenizer

    @property
    def eos_token_ids(self) -> list[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.eos_token_ids[0])

    def save(self, folder: str | Path) -> None:
        """``save_pretrained`` of model, generation config, processor and tokenizer into folder
        (not atomic: callers write to a temporary name and ``os.replace`` it)."""
        self.model.save_pretrained(str(folder))
        self.processor.save_pretrained(str(folder))


def load_policy(path: str | Path, *, threads: int | None = None) -> Policy:
    """Open a saved policy folder (``save_pretrained`` of model + processor) on CPU, eval mode."""
    # lazy: torch and transformers (the cpu extra) take seconds to load
    import torch
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no model at {path} (config.json missing): run `vade build-model`")
    if threads:
        torch.set_num_threads(threads)
    # The slow image processor: no torchvision dependency, same pixels as the fast one here.
    processor = AutoProcessor.from_pretrained(str(path), use_fast=False)
    processor.tokenizer.padding_side = "left"
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(
        str(path), dtype=torch.float32, attn_implementation="sdpa")
    return Policy(model.eval(), processor)


@dataclass(frozen=True)
class PromptInputs:
    """A batch of encoded prompts, left-padded, with the image patches of every row."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    pixel_values: torch.Tensor | None
    image_grid_thw: torch.Tensor | None
    image_counts: torch.Tensor

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def model_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``model(...)`` / ``model.generate(...)``."""
        kw: dict[str, Any] = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.pixel_values is not None:
            kw["pixel_values"] = self.pixel_values
            kw["image_grid_thw"] = self.image_grid_thw
        return kw

    def _patch_rows(self) -> list[torch.Tensor]:
        """Per prompt row, the indices of its rows in ``pixel_values`` (a row's images, and so
        its patches, are consecutive: one range per row, computed without a loop over images)."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        if self.image_grid_thw is None:
            return [torch.zeros(0, dtype=torch.long)] * len(self)
        per_image = self.image_grid_thw.prod(dim=1)
        owner = torch.repeat_interleave(torch.arange(len(self)), self.image_counts)
        per_row = torch.zeros(len(self), dtype=per_image.dtype).index_add_(0, owner, per_image)
        ends = torch.cumsum(per_row, 0).tolist()
        return [torch.arange(end - n, end) for end, n in zip(ends, per_row.tolist())]

    def select(self, rows: Sequence[int] | torch.Tensor) -> PromptInputs:
        """The given rows (any order, repeats allowed), all-padding left columns dropped."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        rows = torch.as_tensor(rows, dtype=torch.long).reshape(-1)
        if self.image_grid_thw is None:
            pv = grid = None
        else:
            patch_rows = self._patch_rows()
            per_row_images = torch.cumsum(self.image_counts, 0) - self.image_counts
            pv = torch.cat([self.pixel_values[patch_rows[int(r)]] for r in rows])
            grid = torch.cat([self.image_grid_thw[int(per_row_images[r]):
                                                  int(per_row_images[r] + self.image_counts[r])]
                              for r in rows])
        mask = self.attention_mask[rows]
        keep = int(mask.sum(dim=0).nonzero().min()) if mask.any() else 0
        return PromptInputs(self.input_ids[rows][:, keep:], mask[:, keep:], pv, grid,
                            self.image_counts[rows])

    def repeat_interleave(self, n: int) -> PromptInputs:
        """Each row n times in a row (rows 0,0,..,1,1,..): the layout of a group of G rollouts."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        return self.select(torch.arange(len(self)).repeat_interleave(n))

    @staticmethod
    def concat(parts: Sequence[PromptInputs], pad_token_id: int) -> PromptInputs:
        """Stack batches with different prompt lengths (left-padding the shorter ones)."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        if not parts:
            raise ValueError("PromptInputs.concat needs at least one batch")
        width = max(p.input_ids.shape[1] for p in parts)

        def lpad(t: torch.Tensor, value: int) -> torch.Tensor:
            return torch.nn.functional.pad(t, (width - t.shape[1], 0), value=value)

        has_images = [p.pixel_values is not None for p in parts]
        if any(has_images) and not all(has_images):
            raise ValueError("PromptInputs.concat: cannot mix batches with and without images")
        return PromptInputs(
            torch.cat([lpad(p.input_ids, pad_token_id) for p in parts]),
            torch.cat([lpad(p.attention_mask, 0) for p in parts]),
            torch.cat([p.pixel_values for p in parts]) if all(has_images) else None,
            torch.cat([p.image_grid_thw for p in parts]) if all(has_images) else None,
            torch.cat([p.image_counts for p in parts]),
        )


def chat_messages(messages: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """verl's ``<image>`` markers -> Qwen content parts ({type: image} / {type: text})."""
    out = []
    for m in messages:
        parts: list[dict[str, Any]] = []
        for k, piece in enumerate(m["content"].split(IMAGE_TOKEN)):
            if k:
                parts.append({"type": "image"})
            if piece:
                parts.append({"type": "text", "text": piece})
        out.append({"role": m["role"], "content": parts})
    return out


def _decode_images(example: Example) -> list[Any]:
    from PIL import Image  # lazy: pillow, the cpu extra

    markers = sum(m["content"].count(IMAGE_TOKEN) for m in example.messages)
    if markers != len(example.images):
        raise ValueError(f"row index={example.index}: {markers} '{IMAGE_TOKEN}' markers in the "
                         f"prompt but {len(example.images)} images")
    images = []
    for k, data in enumerate(example.images):
        try:
            with Image.open(io.BytesIO(data)) as img:
                images.append(img.convert("RGB"))
        except Exception as exc:  # noqa: BLE001 (PIL raises many types for corrupt data)
            raise ValueError(f"row index={example.index}: image {k} cannot be decoded "
                             f"({type(exc).__name__}: {exc})") from None
    return images


def encode_prompts(processor: Any, examples: Sequence[Example]) -> PromptInputs:
    """Chat-templated, left-padded prompts with their images, ready for generate/teacher forcing."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    if not examples:
        raise ValueError("encode_prompts: no examples")
    texts, images, counts = [], [], []
    for ex in examples:
        texts.append(processor.apply_chat_template(chat_messages(ex.messages), tokenize=False,
                                                   add_generation_prompt=True))
        imgs = _decode_images(ex)
        images.extend(imgs)
        counts.append(len(imgs))
    processor.tokenizer.padding_side = "left"
    enc = processor(text=texts, images=images or None, return_tensors="pt", padding=True)
    return PromptInputs(
        input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
        pixel_values=enc.get("pixel_values") if images else None,
        image_grid_thw=enc.get("image_grid_thw") if images else None,
        image_counts=torch.tensor(counts, dtype=torch.long),
    )


def encode_responses(tokenizer: Any, texts: Sequence[str], *, max_length: int | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """(response_ids, response_mask): each text + ``<|im_end|>``, right-padded, truncated."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else end
    rows = [tokenizer(t, add_special_tokens=False)["input_ids"] + [end] for t in texts]
    if max_length is not None:
        rows = [r[:max_length] for r in rows]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, :len(r)] = 1
    return ids, mask


def response_mask_from_ids(response_ids: torch.Tensor, eos_token_ids: Sequence[int]
                           ) -> torch.Tensor:
    """1 up to and including the first end-of-turn token of each row, 0 after it."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    is_eos = torch.isin(response_ids, torch.tensor(list(eos_token_ids), dtype=response_ids.dtype))
    eos_before = torch.cumsum(is_eos.long(), dim=1) - is_eos.long()  # eos strictly before t
    return (eos_before == 0).long()


def suppressed_token_ids(model: Any) -> list[int]:
    """Vision placeholder tokens a response must never contain.

    An image placeholder inside a response would make the teacher-forcing pass look for image
    features that do not exist (and shift the mrope positions), so generation masks them and
    ``token_logprobs`` renormalises over the same reduced vocabulary: the policy is
    softmax(logits / T) over the remaining tokens, in both places.
    """
    cfg = model.config
    names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    return sorted({int(getattr(cfg, k)) for k in names if getattr(cfg, k, None) is not None})


def token_logprobs(model: Any, prompt_inputs: PromptInputs, response_ids: torch.Tensor,
                   response_mask: torch.Tensor, *, temperature: float = 1.0,
                   share_prompts: bool = True) -> torch.Tensor:
    """Log-probs (N, L) of ``response_ids`` after each prompt, teacher forcing; 0 where masked.

    ``share_prompts``: rows with the same prompt (a GRPO group) run it once
    (``vade.models.shared_prompt``, ~3x faster at 16 x 8; equal up to float rounding); False
    runs every row's full sequence, the reference the shared pass is tested against.
    """
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    n, length = response_ids.shape
    if n != len(prompt_inputs) or response_mask.shape != response_ids.shape:
        raise ValueError(f"token_logprobs: {len(prompt_inputs)} prompts, response_ids "
                         f"{tuple(response_ids.shape)}, response_mask {tuple(response_mask.shape)}")
    if temperature <= 0:
        raise ValueError(f"token_logprobs: temperature must be > 0, got {temperature}")
    logits = shared_prompt_logits(model, prompt_inputs, response_ids,
                                  response_mask) if share_prompts else None
    if logits is None:
        kw = prompt_inputs.model_kwargs()
        kw["input_ids"] = torch.cat([kw["input_ids"], response_ids.to(kw["input_ids"].dtype)],
                                    dim=1)
        kw["attention_mask"] = torch.cat(
            [kw["attention_mask"], response_mask.to(kw["attention_mask"].dtype)], dim=1)
        # Logits only for the positions that predict response tokens (the last prompt token on).
        logits = model(**kw, use_cache=False, logits_to_keep=length + 1).logits[:, :-1, :]
    logits = logits.float() / temperature
    banned = torch.zeros(logits.shape[-1], dtype=torch.bool, device=logits.device)
    banned[suppressed_token_ids(model)] = True
    logits = logits.masked_fill(banned, float("-inf"))
    logp = torch.log_softmax(logits, dim=-1).gather(-1, response_ids.long().unsqueeze(-1)).squeeze(-1)
    return logp * response_mask.to(logp.dtype)
