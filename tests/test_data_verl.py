"""Built parquet files through verl's own ``RLHFDataset`` (0.7.1) with a real Qwen2.5-VL processor.

``filter_overlong_prompts`` makes RLHFDataset run every row through the processor (chat template,
``<image>`` -> image parts, image preprocessing, tokenisation); a row that fails there is counted
as over-long and dropped, so "no row dropped" means verl could read every row. The processor is
the tiny model's (``vade.models.tiny``), trained locally: no hub access needed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "data"))

pytest.importorskip("verl")
tiny = pytest.importorskip("vade.models.tiny")

import sources as fx

from vade.data.config import data_config_from_mapping
from vade.data.paper import build_paper
from vade.data.records import read_examples
from vade.data.synthetic import build_synthetic


@pytest.fixture(scope="module")
def datasets_built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verl")
    fx.write_all(root / "hf", ["geo170k_qa", "figureqa", "chartqa", "scienceqa"])
    paper = data_config_from_mapping({"seed": 0, "data": {"kind": "paper", "paper": {
        "tasks": {"geo170k_qa": 4, "figureqa": 4, "chartqa": 4, "scienceqa": 4},
        "local_dir": str(root / "hf"), "cache_dir": str(root / "cache")}}})
    build_paper(paper, root / "paper", progress=False)
    syn = data_config_from_mapping({"seed": 0, "data": {"kind": "synthetic", "synthetic": {
        "train": 12, "val": 3, "warmstart": 3, "eval": 2}}})
    build_synthetic(syn, root / "syn", progress=False)
    return {"paper": root / "paper" / "train.parquet", "synthetic": root / "syn" / "train.parquet",
            "cache": root / "verl-cache"}


@pytest.fixture(scope="module")
def processor(datasets_built):
    import torch

    from vade.models.config import TinyArchConfig

    torch.set_num_threads(1)
    corpus = []
    for key in ("paper", "synthetic"):
        corpus += tiny.corpus_from_examples(read_examples(datasets_built[key]))
    return tiny.build_processor(corpus, TinyArchConfig())


@pytest.mark.parametrize("kind", ["paper", "synthetic"])
def test_rlhf_dataset_reads_every_row(kind, datasets_built, processor):
    from omegaconf import OmegaConf
    from PIL import Image
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    path = datasets_built[kind]
    ours = read_examples(path)
    config = OmegaConf.create({"cache_dir": str(datasets_built["cache"]), "max_prompt_length": 512,
                               "filter_overlong_prompts": True,
                               "filter_overlong_prompts_workers": 1})
    ds = RLHFDataset(str(path), processor.tokenizer, config, processor=processor)
    assert len(ds) == len(ours)  # no row failed the processor
    for i in (0, len(ds) - 1):
        row = ds[i]
        ex = ours[i]
        assert row["index"] == ex.index == i  # verl's index is extra_info.index = row position
        assert row["data_source"] == ex.data_source
        assert row["reward_model"] == {"style": "rule", "ground_truth": ex.ground_truth}
        parts = row["raw_prompt"][0]["content"]
        assert [p["type"] for p in parts] == ["image", "text"]
        assert isinstance(parts[0]["image"], Image.Image)
        assert parts[1]["text"] == ex.messages[0]["content"].replace("<image>", "")
    batch = collate_fn([ds[i] for i in range(4)])
    assert batch["dummy_tensor"].shape == (4, 1)
    assert [e["index"] for e in batch["extra_info"]] == [0, 1, 2, 3]
