"""Prompt lengths recorded by ``vade build-data``, counted as verl 0.7.1 counts them.

Real: verl's ``RLHFDataset`` (the ``raw_prompt`` its ``__getitem__`` gives the agent loop,
its ``process_vision_info`` through qwen_vl_utils, and its overlong filter), verl's
``apply_chat_template`` and the processor call of ``SingleTurnAgentLoop``, transformers'
``Qwen2_5_VLProcessor`` saved to and loaded from a local folder, huggingface_hub's cache
lookup, the build-data CLI. Stand-in: the processor's tokenizer is the word-level one of
``tests/fixtures/verl/tiny_vlm.py`` (the hub is unreachable here); its image processor is
Qwen2-VL's with Qwen2.5-VL-7B-Instruct's published pixel bounds, or the fixture's small ones.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "verl"))

pytest.importorskip("verl")
pytest.importorskip("transformers")

from vade.cli import main
from vade.data.items import Item
from vade.data.prompt_tokens import count_prompt_tokens, load_processor, processor_folder
from vade.data.writer import SplitFile, write_dataset

# (width, height): square, tall, wide, small (verl upsamples it), above Qwen2.5-VL's max_pixels
SIZES = [(28, 28), (56, 84), (300, 20), (640, 480), (1000, 30), (90, 3000), (4000, 3500)]
WORDS = ("what", "is", "the", "answer", "word")


def _png(width: int, height: int, shade: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 40, 90)).save(buf, format="PNG")
    return buf.getvalue()


def _items(split: str, n: int) -> list[Item]:
    out = []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        images = (_png(w, h, i),) * (1 + i % 2)   # one or two images
        question = "what is the answer" + " word" * (3 * i)
        out.append(Item("shape", "math", f"{split}{i}", question, "1", "number", images))
    return out


def _processor_dir(root: Path, bounds: str) -> Path:
    from tiny_vlm import tiny_processor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    proc = tiny_processor(extra_words=WORDS)
    if bounds == "qwen2.5-vl":   # Qwen2.5-VL-7B-Instruct's preprocessor_config.json
        proc.image_processor = Qwen2VLImageProcessor(min_pixels=3136, max_pixels=12845056)
    folder = root / f"processor-{bounds}"
    proc.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module", params=["qwen2.5-vl", "small"])
def built(request, tmp_path_factory):
    """A dataset written with its prompt lengths recorded by the processor in a local folder."""
    root = tmp_path_factory.mktemp("lengths")
    folder = _processor_dir(root, request.param)
    models = {"policy": {"kind": "pretrained", "name_or_path": str(folder)}}
    from vade.data.prompt_tokens import prompt_token_entries

    manifest = write_dataset(
        root / "data", [SplitFile("train.parquet", "train", _items("t", 9)),
                        SplitFile("val.parquet", "val", _items("v", 4))],
        template="{question}", with_difficulty=False, manifest={},
        prompt_tokens=lambda files: prompt_token_entries(files, models, {}, None))
    return root / "data", folder, manifest


def _verl_counts(path: Path, processor) -> list[int]:
    """The prompt ids verl feeds for each row, by its agent loop's steps
    (``SingleTurnAgentLoop.run``: the dataset's ``raw_prompt``, ``process_vision_info`` with the
    processor's patch size, verl's ``apply_chat_template``, the processor call)."""
    import asyncio

    from omegaconf import OmegaConf
    from verl.utils.chat_template import apply_chat_template
    from verl.utils.dataset.rl_dataset import RLHFDataset

    cfg = OmegaConf.create({"cache_dir": str(path.parent / "verl-cache"),
                            "max_prompt_length": 1 << 20, "filter_overlong_prompts": False})
    ds = RLHFDataset(str(path), processor.tokenizer, cfg, processor=processor)
    out = []
    for i in range(len(ds)):
        messages = ds[i]["raw_prompt"]
        images, _ = asyncio.run(RLHFDataset.process_vision_info(
            messages, image_patch_size=processor.image_processor.patch_size, config=cfg))
        raw = apply_chat_template(processor, messages, add_generation_prompt=True, tokenize=False)
        out.append(len(processor(text=[raw], images=images)["input_ids"][0]))
    return out


def _our_counts(path: Path, processor) -> list[int]:
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    return [count_prompt_tokens(processor, r["prompt"][0]["content"],
                                [im["bytes"] for im in r["images"]]) for r in rows]


class _NoSizeCount:
    """The same processor without transformers' count by image size: the fallback path."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __getattr__(self, name):
        if name == "_get_num_multimodal_tokens":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __call__(self, *args, **kwargs):
        return self._inner(*args, **kwargs)


def test_each_rows_count_is_verls_own(built):
    data, folder, _ = built
    processor = load_processor(folder)
    for split in ("train", "val"):
        verl = _verl_counts(data / f"{split}.parquet", processor)
        assert _our_counts(data / f"{split}.parquet", processor) == verl
        assert _our_counts(data / f"{split}.parquet", _NoSizeCount(processor)) == verl
    assert len(set(verl)) > 1   # the rows differ: the test can tell a wrong count


def test_verls_own_filter_lets_the_longest_prompt_through(built):
    """Why plan and preflight refuse a max_prompt_length below the recorded longest: verl's
    overlong filter counts one token per image, so even at the longest prompt's text-only
    length it keeps that row, which its agent loop then cannot pad to the limit."""
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    data, folder, manifest = built
    entry = manifest["prompt_tokens"]["policy"]
    processor = load_processor(folder)
    counts = _our_counts(data / "train.parquet", processor) + _our_counts(
        data / "val.parquet", processor)
    assert entry["max"] == max(counts) and entry["rows"] == 13
    assert entry["mean"] == pytest.approx(sum(counts) / 13, abs=0.05)
    files = [str(data / "train.parquet"), str(data / "val.parquet")]

    def kept(limit: int) -> set[str]:
        cfg = OmegaConf.create({"cache_dir": str(data.parent / "verl-cache"),
                                "max_prompt_length": limit, "filter_overlong_prompts": True,
                                "filter_overlong_prompts_workers": 1})
        ds = RLHFDataset(files, processor.tokenizer, cfg, processor=processor)
        return {e["uid"] for e in ds.dataframe["extra_info"]}

    import pyarrow.parquet as pq

    from vade.data.prompt_tokens import prompt_messages

    rows = pq.read_table(data / "train.parquet").to_pylist() + pq.read_table(
        data / "val.parquet").to_pylist()
    longest = rows[counts.index(entry["max"])]
    assert counts.count(entry["max"]) == 1 and longest["extra_info"]["uid"] == entry["longest"]
    # what the filter counts of it: the template's text, one image token per image
    text = processor.apply_chat_template(
        prompt_messages(longest["prompt"][0]["content"], len(longest["images"])),
        add_generation_prompt=True, tokenize=False)
    seen = len(processor.tokenizer(text)["input_ids"])
    assert seen < entry["max"]   # short of its image tokens
    assert entry["longest"] in kept(seen)   # kept, at a limit far below its length
    assert entry["longest"] not in kept(seen - 1)
    on_disk = json.loads((data / "manifest.json").read_text())["prompt_tokens"]
    assert on_disk == manifest["prompt_tokens"]


def test_processor_from_the_hub_cache_at_the_pinned_commit(tmp_path):
    """A staged hub id is found in the cache's snapshot of its revision, without a download."""
    src = _processor_dir(tmp_path, "small")
    commit = "a" * 40
    repo = tmp_path / "cache" / "hub" / "models--org--vl"
    shutil.copytree(src, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    assert processor_folder("org/vl", None, tmp_path / "cache") == (
        repo / "snapshots" / commit, "")
    assert processor_folder("org/vl", commit, tmp_path / "cache")[0] == repo / "snapshots" / commit
    folder, why = processor_folder("org/vl", "b" * 40, tmp_path / "cache")
    assert folder is None and "org/vl@" + "b" * 40 in why and "vade prefetch" in why
    folder, why = processor_folder("org/other", None, tmp_path / "cache")
    assert folder is None and "not staged" in why


def test_build_data_records_counts_or_says_why_not(tmp_path, capsys):
    """The CLI: a local processor is counted, an unstaged hub id and a model built from the
    data are recorded as null with their reason, and the data is built all the same."""
    folder = _processor_dir(tmp_path, "small")
    cfg = {"seed": 0, "data": {"kind": "synthetic", "synthetic": {
        "train": 12, "val": 3, "warmstart": 3, "eval": 2}},
        "cluster": {"cache_dir": str(tmp_path / "empty-cache")},
        "models": {"local": {"kind": "pretrained", "name_or_path": str(folder)},
                   "hub": {"kind": "pretrained", "name_or_path": "Qwen/Qwen2.5-VL-7B-Instruct"},
                   "tiny": {"kind": "tiny"}}}
    assert main(["build-data", "--config-json", json.dumps(cfg), "--out",
                 str(tmp_path / "d"), "--no-progress"]) == 0
    got = json.loads((tmp_path / "d" / "manifest.json").read_text())["prompt_tokens"]
    processor = load_processor(folder)
    counts = _our_counts(tmp_path / "d" / "train.parquet", processor) + _our_counts(
        tmp_path / "d" / "val.parquet", processor)
    assert got["local"]["max"] == max(counts) and got["local"]["rows"] == 15
    assert got["hub"]["max"] is None and "not staged" in got["hub"]["reason"]
    assert got["tiny"]["max"] is None and "vade build-model" in got["tiny"]["reason"]
    out = capsys.readouterr().out
    assert f"prompt tokens with local's processor: longest {max(counts):,}" in out
    assert "prompt tokens with hub's processor: not counted: Qwen/Qwen2.5-VL-7B-Instruct" in out
