"""Few-row fixtures in verl's multimodal schema, for the model/rollout tests and benchmarks.

A stand-in for ``vade.data``'s synthetic generator with the same row layout: 4 bars A-D in a
56x56 image, "Which bar is tallest?", answer a letter in ``\\boxed{}`` (the task tiny-rl.md
showed a ~1M-parameter model can learn). Difficulty comes from the gap between the two tallest
bars and background noise, so a warm-started model gets a spread of per-item accuracy.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vade.data.records import Example, example_from_row
from vade.models.build import build_base_model
from vade.models.config import ModelConfig, TinyArchConfig, WarmStartConfig
from vade.models.policy import Policy
from vade.models.tiny import build_tiny, corpus_from_examples

__all__ = ["BAR_QUESTION", "bar_examples", "bar_rows", "warm_base_model", "write_rows"]

BAR_QUESTION = ("Which bar is tallest? Answer with a letter (A, B, C or D) in \\boxed{}.")


def _bar_image(heights: np.ndarray, rng: np.random.Generator, size: int = 56) -> bytes:
    from PIL import Image  # lazy: pillow, the cpu extra

    noise = rng.integers(0, 60, size=(size, size, 1))
    img = np.broadcast_to(200 + noise, (size, size, 3)).astype(np.uint8).copy()
    width, left = 8, 6
    for k, h in enumerate(heights):
        x0 = left + k * 12
        img[size - 4 - int(h):size - 4, x0:x0 + width] = (30, 60, 200)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


def bar_rows(n: int, seed: int, split: str = "train", start_index: int = 0) -> list[dict]:
    """``n`` parquet rows (as dicts) of the bar task; deterministic for ``seed``."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        gap = int(rng.integers(1, 15))
        top = int(rng.integers(20 + gap, 46))
        heights = rng.integers(5, top - gap + 1, size=4)
        winner = int(rng.integers(4))
        heights[winner] = top
        answer = "ABCD"[winner]
        index = start_index + i
        rows.append({
            "data_source": "synthetic/bars",
            "prompt": [{"role": "user", "content": "<image>" + BAR_QUESTION}],
            "images": [{"bytes": _bar_image(heights, rng), "path": None}],
            "ability": "chart",
            "reward_model": {"style": "rule", "ground_truth": answer},
            "extra_info": {"split": split, "index": index, "uid": f"bars-{seed}-{index}",
                           "task": "bars", "domain": "chart", "answer_type": "choice",
                           "question": BAR_QUESTION, "answer": answer},
        })
    return rows


def bar_examples(n: int, seed: int, split: str = "train") -> list[Example]:
    return [example_from_row(r) for r in bar_rows(n, seed, split)]


def write_rows(path: str | Path, rows: list[dict]) -> Path:
    """Write rows as a parquet file (atomically: temp name, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    os.replace(tmp, path)
    return path


def smallest_arch():
    """The smallest architecture that still runs every code path (window attention, merger,
    GQA, 3-D mrope): for tests, where speed matters more than learning."""
    return TinyArchConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                          intermediate_size=64, mrope_section=(2, 3, 3), vision_hidden_size=32,
                          vision_depth=2, vision_heads=2, vision_intermediate_size=64,
                          vocab_size=320)


def warm_base_model(folder: str | Path, warmstart_rows: list[dict], *,
                    max_positions: int = 256) -> Path:
    """The smallest tiny Qwen2.5-VL warm-started 40 steps on ``warmstart_rows``, built by the
    pipeline's own ``build_base_model`` into ``folder/base`` (returned).

    Warm-started, it answers some rollouts right and some wrong, which tests that count
    (difficulty, training, advantages) need; at this size that takes a few CPU seconds.
    ``max_positions`` must cover the longest prompt plus the generated tokens.
    """
    folder = Path(folder)
    write_rows(folder / "warmstart.parquet", warmstart_rows)
    arch = TinyArchConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                          intermediate_size=64, mrope_section=(2, 3, 3), vision_hidden_size=16,
                          vision_depth=1, vision_heads=1, vision_intermediate_size=32,
                          vocab_size=300, max_position_embeddings=max_positions)
    warm = WarmStartConfig(steps=40, lr=1e-2, batch_size=16, eval_fraction=0.25)
    build_base_model(ModelConfig(tiny=arch, warm_start=warm), 0, folder / "base",
                     folder / "warmstart.parquet", progress=False)
    return folder / "base"


def tiny_policy(examples: list[Example], seed: int = 0, arch=None):
    """A random-weight ``Policy`` over the smallest architecture, tokenizer trained on examples."""
    model, processor = build_tiny(corpus_from_examples(examples), arch or smallest_arch(), seed)
    return Policy(model, processor)
