"""DIVA-GRPO's rows on verl 0.7.1: a dataset whose index space holds originals and their variants.

verl's dataloader asks the dataset for ``dataset[i]`` with the indices the curriculum sampler
yields, and nothing else passes between the two. So the DIVA sampler
(``vade.train.verl.diva_sampler``) encodes in each index everything a row needs, and this
dataset (``data.custom_cls``, a subclass of verl's ``RLHFDataset``) decodes it: no shared mutable
state between sampler and dataset, and a row is a pure function of its index (a resumed step
rebuilds exactly the variants of the interrupted one).

Index space, N = the dataset's rows after verl's overlong-prompt filter:

* ``i < N``: verl's own row ``i``, untouched (validation, and anything that is not DIVA);
* ``i >= N``: ``N + position + N * code`` with ``code = variant + 2 * ((D + 8) + 17 * ((level - 1)
  + 9 * step))``: the original at ``position`` (``variant = 0``) or its variant (``variant = 1``) at
  offset D, drawn at ``level`` in training step ``step``.

Every decoded row carries in ``extra_info``: ``index`` (the original's sample id, the global
group DIVA's advantage and ``vade.train.verl.batch`` group by; a variant keeps it),
``diva_variant`` (0/1), ``diva_offset`` (D; 0 on an original) and ``diva_level`` (the level the
row is scored at: the original's level, or ``plan_variant(level, D).level``).

A variant is built like the local trainer builds it (``vade.train.local.diva``): the stream
``rng_for(seed, "diva", step, sample id)`` first draws the offset (which must equal the encoded
D: a check that sampler and dataset agree) and then builds the variant
(``vade.data.variants.variant_row``: exact hints, rephrasings, image perturbations, the question
in the image), so for the same (seed, step, sample id, level) the verl and local paths build the
same variant.
Synthetic rows get the renderer's exact hints and template rephrasings; any other row (the
paper's data) takes its solution steps and rephrasing from ``variants.parquet`` (``vade
build-variants``, offline; beside the training file, or ``data.sampler.diva.variant_texts``) and
its perturbations and question-in-image from its own image.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from verl.utils.dataset.rl_dataset import RLHFDataset

from vade.data.records import example_from_row
from vade.data.splits import rng_for
from vade.data.variants import SUPPORTED_TASKS, read_variant_texts, variant_row
from vade.diva import draw_offsets
from vade.diva.levels import LEVELS
from vade.diva.offsets import MAX_OFFSET, plan_variant

__all__ = ["DivaDataset", "DivaKey", "decode_index", "diva_seed", "encode_index"]

_OFFSETS = 2 * MAX_OFFSET + 1  # D in [-8, 8]


@dataclass(frozen=True)
class DivaKey:
    """What one DIVA index stands for."""

    position: int   # dataset position of the original
    variant: bool   # the original's row (False) or its variant's (True)
    offset: int     # the variant's D (the pair's D, also on the original's key)
    level: int      # the original's level when the step was drawn
    step: int       # the training step (the variant's random stream)


def encode_index(n: int, key: DivaKey) -> int:
    """The dataloader index of ``key`` in a dataset of ``n`` rows (module docstring)."""
    if not 0 <= key.position < n:
        raise ValueError(f"position {key.position} outside the dataset's {n} rows")
    if not -MAX_OFFSET <= key.offset <= MAX_OFFSET:
        raise ValueError(f"offset {key.offset} outside [-{MAX_OFFSET}, {MAX_OFFSET}]")
    if not 1 <= key.level <= LEVELS:
        raise ValueError(f"level {key.level} outside [1, {LEVELS}]")
    if key.step < 0:
        raise ValueError(f"step must be >= 0, got {key.step}")
    code = int(key.variant) + 2 * ((key.offset + MAX_OFFSET)
                                   + _OFFSETS * ((key.level - 1) + LEVELS * key.step))
    return n + key.position + n * code


def decode_index(n: int, index: int) -> DivaKey | None:
    """The key of a DIVA index, or None for a plain row (``index < n``)."""
    index = int(index)
    if index < 0:
        raise IndexError(f"dataset index {index} is negative")
    if index < n:
        return None
    code, position = divmod(index - n, n)
    variant, code = code % 2, code // 2
    offset, code = code % _OFFSETS - MAX_OFFSET, code // _OFFSETS
    level, step = code % LEVELS + 1, code // LEVELS
    return DivaKey(position=position, variant=bool(variant), offset=offset, level=level,
                   step=step)


def diva_seed(data_config: Any) -> int:
    """The run's seed as the sampler sees it: ``data.sampler.vade.seed`` (else ``data.seed``)."""
    sampler = data_config.get("sampler") if hasattr(data_config, "get") else None
    block = sampler.get("vade") if sampler is not None and hasattr(sampler, "get") else None
    seed = block.get("seed") if block is not None else None
    if seed is None:
        seed = data_config.get("seed") if hasattr(data_config, "get") else None
    return int(seed or 0)


class DivaDataset(RLHFDataset):
    """verl's ``RLHFDataset`` plus DIVA's encoded indices (module docstring).

    ``len()`` stays N (the originals): verl's ``create_rl_sampler`` and the sampler size the
    epoch from it; the encoded indices above N are never enumerated, only asked for.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.diva_seed = diva_seed(self.config)
        self._variant_texts: dict[int, dict[str, Any]] | None = None

    def __getitem__(self, item: Any) -> dict[str, Any]:
        key = decode_index(len(self.dataframe), int(item))
        if key is None:
            return super().__getitem__(item)
        return self.finish_row(self.diva_row(key))

    def diva_row(self, key: DivaKey) -> dict[str, Any]:
        """The parquet row of ``key`` with the ``diva_*`` keys in ``extra_info`` (before verl's
        message building)."""
        row = dict(self.dataframe[key.position])
        extra = dict(row.get("extra_info") or {})
        level = key.level
        if key.variant:
            row, extra = self._variant(row, extra, key)
            level = plan_variant(key.level, key.offset).level
            self._check_length(row, extra, key)
        extra.update({"diva_variant": int(key.variant),
                      "diva_offset": int(key.offset) if key.variant else 0,
                      "diva_level": int(level)})
        row["extra_info"] = extra
        return row

    def _variant(self, row: dict[str, Any], extra: dict[str, Any], key: DivaKey,
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
        ex = example_from_row(row)
        rng = rng_for(self.diva_seed, "diva", str(key.step), str(ex.index))
        drawn = int(draw_offsets(np.array([key.level]), rng)[0])
        if drawn != key.offset:
            raise ValueError(f"sample {ex.index}, step {key.step}: the index encodes offset "
                             f"{key.offset} but the seed-{self.diva_seed} stream draws {drawn} "
                             "(sampler and dataset disagree on the seed)")
        new = variant_row(ex, key.offset, key.level, rng, texts=self._texts(ex))
        if str(new["reward_model"]["ground_truth"]) != ex.ground_truth:
            raise AssertionError(f"sample {ex.index}: a variant changed the answer")
        out = dict(row)
        out["prompt"] = new["prompt"]
        out[self.image_key] = new["images"]
        extra = {**extra, **{k: new["extra_info"][k] for k in ("uid", "question")}}
        return out, extra

    def prompt_length(self, row: dict[str, Any]) -> int:
        """Prompt tokens of ``row`` counted exactly as verl 0.7.1's overlong filter counts the
        originals (``RLHFDataset.maybe_filter_out_long_prompts``'s ``doc2len``), so a variant is
        held to the originals' rule. That count leaves the image tokens out: ``_build_messages``
        pops the images before the processor sees them (a verl-wide limitation, not DIVA's)."""
        doc = copy.deepcopy(row)
        if self.processor is None:
            ids = self.tokenizer.apply_chat_template(doc[self.prompt_key], tokenize=True,
                                                     add_generation_prompt=True,
                                                     **self.apply_chat_template_kwargs)
            return len(ids["input_ids"] if hasattr(ids, "keys") else ids)
        # lazy: verl: the train-verl env only
        from verl.utils.dataset.vision_utils import process_image

        messages = self._build_messages(doc)
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True,
                                                  tokenize=False, **self.apply_chat_template_kwargs)
        images = [process_image(image, image_patch_size=self.image_patch_size)
                  for image in doc.get(self.image_key) or []] or None
        return len(self.processor(text=[text], images=images)["input_ids"][0])

    def _check_length(self, row: dict[str, Any], extra: dict[str, Any], key: DivaKey) -> None:
        """A variant that verl's overlong filter would have dropped, had it been in the data (the
        filter sees only the originals), is refused here by name: verl's agent loop pads prompts to
        ``data.max_prompt_length`` without truncating, so such a row would fail far from its
        cause, if at all visibly."""
        n = self.prompt_length(row)
        if n > self.max_prompt_length:
            raise ValueError(
                f"sample {extra.get('index')}: its DIVA variant (offset {key.offset}, step "
                f"{key.step}) has {n} prompt tokens > data.max_prompt_length = "
                f"{self.max_prompt_length}; raise train.verl.max_prompt_length (hints and the "
                "rephrasing make prompts longer than the originals the filter saw)")

    def _texts(self, ex: Any) -> dict[str, Any] | None:
        """Offline steps and rephrasing of a row the synthetic renderer did not make (read once
        from ``variants.parquet`` beside the first data file, or ``data.sampler.diva.
        variant_texts``); None for synthetic rows."""
        if ex.task in SUPPORTED_TASKS:
            return None
        if self._variant_texts is None:
            self._variant_texts = read_variant_texts(self.variant_texts_path())
        texts = self._variant_texts.get(ex.index)
        if texts is None:
            raise ValueError(f"sample {ex.index}: no variant texts in "
                             f"{self.variant_texts_path()} (rebuild with `vade build-variants`)")
        return texts

    def variant_texts_path(self) -> Path:
        sampler = self.config.get("sampler") or {}
        block = sampler.get("diva") if hasattr(sampler, "get") else None
        given = block.get("variant_texts") if block is not None else None
        if given:
            return Path(given)
        first = self.original_data_files[0]
        return Path(str(first)).parent / "variants.parquet"

    def finish_row(self, row_dict: dict[str, Any]) -> dict[str, Any]:
        """What ``RLHFDataset.__getitem__`` does to a row after reading it (verl 0.7.1's body,
        minus the read; ``tests/test_verl_diva.py`` checks both agree on plain rows)."""
        row_dict["raw_prompt"] = self._build_messages(row_dict)
        row_dict["dummy_tensor"] = torch.tensor([0], dtype=torch.uint8)
        if "extra_info" not in row_dict or row_dict["extra_info"] is None:
            row_dict["extra_info"] = {}
        extra = row_dict["extra_info"]
        tools_kwargs = extra.get("tools_kwargs", {})
        interaction_kwargs = extra.get("interaction_kwargs", {})
        row_dict["index"] = extra.get("index", 0)
        row_dict["tools_kwargs"] = tools_kwargs
        row_dict["interaction_kwargs"] = interaction_kwargs
        return row_dict
