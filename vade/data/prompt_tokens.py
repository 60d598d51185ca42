"""The prompt lengths of a built dataset, in the tokens the policy's own processor makes of them.

Why: verl pads every prompt to ``data.max_prompt_length`` (``train.verl.max_prompt_length``)
under the SDPA default, and drops (``filter_overlong_prompts``) or refuses (``truncation:
error``) every prompt above it. Both costs hinge on one number nobody could see: the longest
prompt of the data, counted as verl counts it. ``vade build-data`` records it per model in
``manifest.json`` (``prompt_tokens``), and ``vade plan`` and ``vade preflight`` compare it with
the config (``vade.cluster.prompt_length``).

A prompt is counted as verl 0.7.1's agent loop builds it for the rollout and the update
(``SingleTurnAgentLoop``): the row's user message with each ``<image>`` turned into an image
part (``RLHFDataset._build_messages``), the processor's chat template with the generation
prompt (Qwen's default system prompt included), each image first resized by
``qwen_vl_utils.fetch_image`` (``RLHFDataset.process_vision_info``: sides a multiple of twice
the processor's patch, 28 for Qwen2.5-VL, between 4 and 16,384 such squares), then expanded by
the processor into its image tokens. The image tokens come from the processor's own count for
an image size (transformers' ``_get_num_multimodal_tokens``, what vLLM asks too), so no pixel
is processed: the paper's 9,471 images are counted in seconds instead of minutes (the
processor on the pixels took 35 to 145 ms a row here). A processor without that count is
called on the resized images. ``tests/test_prompt_tokens.py`` checks both, row by row, against
verl's own code path.

verl's own overlong filter (``maybe_filter_out_long_prompts``) is no guard: its
``_build_messages`` pops the image column before the count looks for it, so the filter counts
one token per image, and a prompt longer than ``max_prompt_length`` with its image tokens
passes it (the test shows one).

The processor is read from local files only (a folder, or the staged hub cache): no download.
Where none is there (a model not staged yet, a model built from this data), the model's entry
is ``max: null`` with the reason.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from PIL import Image

from vade.data.records import IMAGE_TOKEN
from vade.data.writer import files_sha256

__all__ = ["count_prompt_tokens", "load_processor", "processor_folder",
           "prompt_messages", "prompt_token_entries"]

# qwen_vl_utils.fetch_image's resize: sides a multiple of the processor's patch x its spatial
# merge (2), between 4 and 16,384 squares of that side
VL_UTILS_MERGE = 2
VL_UTILS_MIN_SQUARES = 4
VL_UTILS_MAX_SQUARES = 16384
# a processor's files (its digest: two models with the same processor are counted once)
_PROCESSOR_FILES = ("preprocessor_config.json", "tokenizer.json", "tokenizer_config.json",
                    "chat_template.json", "chat_template.jinja", "vocab.json", "merges.txt",
                    "special_tokens_map.json", "added_tokens.json", "processor_config.json")


def prompt_messages(content: str, images: int) -> list[dict[str, Any]]:
    """The user message verl's ``RLHFDataset._build_messages`` makes of a row: the content split
    at each ``<image>`` into image and text parts (text-only rows keep the string)."""
    if not images:
        return [{"role": "user", "content": content}]
    parts = [p for p in re.split(f"({re.escape(IMAGE_TOKEN)})", content) if p]
    return [{"role": "user", "content": [{"type": "image"} if p == IMAGE_TOKEN else
                                         {"type": "text", "text": p} for p in parts]}]


def _fetched_size(image: bytes, patch: int) -> tuple[int, int]:
    """(height, width) after ``qwen_vl_utils.fetch_image`` (transformers' ``smart_resize`` with
    its factor and bounds: the same arithmetic for any side of half the factor or more). Only
    the header is read."""
    # lazy: transformers (heavy)
    from transformers.models.qwen2_vl import image_processing_qwen2_vl as qwen2_vl

    factor = patch * VL_UTILS_MERGE
    width, height = Image.open(io.BytesIO(image)).size
    return qwen2_vl.smart_resize(height, width, factor, VL_UTILS_MIN_SQUARES * factor**2,
                        VL_UTILS_MAX_SQUARES * factor**2)


def _image_tokens(processor: Any, sizes: list[tuple[int, int]]) -> list[int] | None:
    """Each image's tokens as the processor counts them for its size; None when it cannot."""
    try:
        return list(processor._get_num_multimodal_tokens(image_sizes=sizes).num_image_tokens)
    except (AttributeError, NotImplementedError, TypeError):
        return None


def count_prompt_tokens(processor: Any, content: str, images: Sequence[bytes]) -> int:
    """The tokens of one row's prompt as verl's agent loop feeds it (module docstring)."""
    text = processor.apply_chat_template(prompt_messages(content, len(images)),
                                         add_generation_prompt=True, tokenize=False)
    patch = int(getattr(getattr(processor, "image_processor", None), "patch_size", 14))
    sizes = [_fetched_size(b, patch) for b in images]
    per_image = _image_tokens(processor, sizes) if images else []
    if per_image is None:   # no count by size: the processor on the resized images
        pil = [Image.open(io.BytesIO(b)).convert("RGB").resize((w, h))
               for b, (h, w) in zip(images, sizes, strict=True)]
        return len(processor(text=[text], images=pil)["input_ids"][0])
    # the template holds one image token per image; the processor repeats it per image token
    return len(processor.tokenizer(text)["input_ids"]) + sum(n - 1 for n in per_image)


def processor_folder(name_or_path: str, revision: str | None,
                     cache_dir: str | Path | None) -> tuple[Path | None, str]:
    """(folder, '') of a processor on this machine, or (None, why not): a local folder, else the
    hub cache's snapshot of ``revision`` (``cache_dir``; None: Hugging Face's own, ``HF_HOME``).
    Never downloads."""
    local = Path(name_or_path)
    if local.is_dir():
        if (local / "preprocessor_config.json").is_file():
            return local, ""
        return None, f"{local} has no preprocessor_config.json (not a vision processor)"
    from huggingface_hub import snapshot_download  # lazy: the cpu extra (hub access)
    from huggingface_hub.errors import LocalEntryNotFoundError  # lazy: the cpu extra (hub access)

    hub = None if cache_dir is None else Path(cache_dir) / "hub"
    try:
        folder = Path(snapshot_download(name_or_path, revision=revision, cache_dir=hub,
                                        local_files_only=True))
    except (LocalEntryNotFoundError, ValueError, OSError) as exc:
        where = hub or "the Hugging Face cache (HF_HOME)"
        return None, (f"{name_or_path}@{revision or 'main'} is not staged in {where}: run "
                      f"`vade prefetch` first ({type(exc).__name__})")
    if not (folder / "preprocessor_config.json").is_file():
        return None, f"{folder} has no preprocessor_config.json (not a vision processor)"
    return folder, ""


def load_processor(folder: Path) -> Any:
    """The processor of a local folder (transformers' ``AutoProcessor``, local files only)."""
    from transformers import AutoProcessor  # lazy: transformers

    return AutoProcessor.from_pretrained(str(folder), local_files_only=True)


def _stats(counts: list[int], uids: list[str]) -> dict[str, Any]:
    arr = np.asarray(counts)
    top = int(arr.argmax())
    return {"max": int(arr[top]), "p99": int(np.percentile(arr, 99, method="higher")),
            "p50": int(np.percentile(arr, 50, method="higher")),
            "mean": round(float(arr.mean()), 1), "rows": len(counts), "longest": uids[top]}


def _count_files(processor: Any, files: Sequence[Path]) -> dict[str, Any]:
    counts: list[int] = []
    uids: list[str] = []
    for path in files:
        table = pq.read_table(path, columns=["prompt", "images", "extra_info"])
        for prompt, images, extra in zip(*(table.column(c).to_pylist()
                                           for c in ("prompt", "images", "extra_info")),
                                         strict=True):
            counts.append(count_prompt_tokens(processor, prompt[0]["content"],
                                              [im["bytes"] for im in images or []]))
            uids.append(extra["uid"])
    return _stats(counts, uids) if counts else {"max": None, "reason": "no prompt rows"}


def prompt_token_entries(files: Sequence[Path], models: Mapping[str, Mapping[str, Any]],
                         revisions: Mapping[str, str], cache_dir: str | Path | None
                         ) -> dict[str, dict[str, Any]]:
    """``manifest.json``'s ``prompt_tokens``: per model of ``models`` (the config's section),
    the longest, 99th and 50th percentile and mean prompt of ``files`` (train and val: verl
    filters both at the same length), or ``max: null`` and the reason. Models whose processor
    files are the same (Qwen2.5-VL 3B and 7B) are counted once."""
    out: dict[str, dict[str, Any]] = {}
    done: dict[str, dict[str, Any]] = {}
    for key, spec in models.items():
        ref = str(spec.get("name_or_path") or "")
        if spec.get("kind", "pretrained") != "pretrained" or not ref:
            out[key] = {"max": None, "reason": f"models.{key} (kind {spec.get('kind')}) is built "
                        "from this data by `vade build-model`, after it: no processor yet"}
            continue
        folder, why = processor_folder(ref, revisions.get(ref), cache_dir)
        if folder is None:
            out[key] = {"processor": ref, "max": None, "reason": why}
            continue
        digest = files_sha256([folder / f for f in _PROCESSOR_FILES if (folder / f).is_file()],
                              folder)
        if digest not in done:
            try:
                done[digest] = _count_files(load_processor(folder), files)
            except (OSError, ValueError, KeyError) as exc:
                done[digest] = {"max": None, "reason": f"the processor in {folder} could not "
                                f"count a prompt: {type(exc).__name__}: {exc}"}
        out[key] = {"processor": ref, "processor_sha256": digest, **done[digest]}
    return out
