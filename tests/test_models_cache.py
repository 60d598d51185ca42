"""The warm-started model's cache (vade/models/cache.py): what makes a new key, a hit, a miss.

Real: the key over warm-start rows and a config; the cache's copies. Stand-in: the build
itself, a function that writes a small folder and counts its calls (a real tiny build takes
minutes; ``vade build-model`` with ``--cache`` is the same call with the real build).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from vade.models.cache import build_key, cached
from vade.models.testing import bar_examples

META = ("vade_model.json", "done.json")


def fake_build(out: Path, calls: list[int], weights: bytes):
    def build() -> dict:
        calls.append(1)
        out.mkdir(parents=True)
        (out / "model.safetensors").write_bytes(weights)
        meta = {"kind": "tiny", "seed": 0, "warm_start": {"seconds": 1.5}}
        for name in META:
            (out / name).write_text(json.dumps(meta))
        return meta
    return build


def test_the_key_changes_with_config_seed_and_rows_not_with_row_positions() -> None:
    rows = bar_examples(6, seed=1)
    cfg = {"kind": "tiny", "warm_start": {"steps": 600}}
    key = build_key(cfg, 0, rows)
    assert key == build_key(json.loads(json.dumps(cfg)), 0, rows)  # same inputs, same key
    # the same rows further down another file (the study's splits before them are larger)
    moved = [replace(e, index=e.index + 375, extra_info={**e.extra_info, "index": e.index + 375})
             for e in rows]
    assert build_key(cfg, 0, moved) == key
    assert build_key({**cfg, "warm_start": {"steps": 601}}, 0, rows) != key
    assert build_key(cfg, 1, rows) != key
    assert build_key(cfg, 0, rows[:-1]) != key
    assert build_key(cfg, 0, [replace(rows[0], ground_truth="x"), *rows[1:]]) != key
    assert build_key(cfg, 0, [replace(rows[0], images=[rows[0].images[0][:-1] + b"?"]),
                              *rows[1:]]) != key


def test_a_miss_builds_and_keeps_a_hit_copies_and_says_so(tmp_path: Path) -> None:
    calls: list[int] = []
    first = tmp_path / "tiny" / "models" / "tiny"
    meta = cached(tmp_path / "cache", "k1", first, META, fake_build(first, calls, b"w1"))
    assert calls == [1] and "cache" not in meta
    assert (tmp_path / "cache" / "k1" / "model.safetensors").read_bytes() == b"w1"

    second = tmp_path / "tiny-study" / "models" / "tiny"
    meta = cached(tmp_path / "cache", "k1", second, META, fake_build(second, calls, b"w2"))
    assert calls == [1]  # not built again
    assert (second / "model.safetensors").read_bytes() == b"w1"
    assert meta["cache"] == {"key": "k1", "reused": str(tmp_path / "cache" / "k1")}
    assert meta["warm_start"] == {"seconds": 1.5}  # the build's own numbers, kept
    for name in META:
        assert json.loads((second / name).read_text()) == meta
    assert sorted(p.name for p in second.parent.iterdir()) == ["tiny"]  # no temporary left

    other = tmp_path / "other"
    cached(tmp_path / "cache", "k2", other, META, fake_build(other, calls, b"w3"))
    assert calls == [1, 1] and (other / "model.safetensors").read_bytes() == b"w3"


@pytest.mark.e2e  # a real tiny build (tokenizer, warm start, held-out sampling)
def test_build_model_command_reuses_a_cached_build(tmp_path: Path, monkeypatch) -> None:
    """``vade build-model`` twice with one cache (the second from $VADE_MODEL_CACHE): one
    warm start, the same weights in both folders."""
    from vade.cli import main
    from vade.models.testing import bar_rows, write_rows

    small = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
             "intermediate_size": 64, "mrope_section": [2, 3, 3], "vision_hidden_size": 32,
             "vision_depth": 2, "vision_heads": 2, "vision_intermediate_size": 64,
             "vocab_size": 320}
    ws = write_rows(tmp_path / "warmstart.parquet", bar_rows(12, seed=6, split="warmstart"))
    cfg = json.dumps({"seed": 3, "model": {"kind": "tiny", "tiny": small, "warm_start": {
        "steps": 2, "batch_size": 4, "eval_fraction": 0.25}}})
    args = ["build-model", "--config-json", cfg, "--no-progress", "--warmstart", str(ws)]
    assert main([*args, "--out", str(tmp_path / "a"), "--cache", str(tmp_path / "cache")]) == 0
    monkeypatch.setenv("VADE_MODEL_CACHE", str(tmp_path / "cache"))
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    a, b = (json.loads((tmp_path / d / "done.json").read_text()) for d in "ab")
    assert "cache" not in a and b["cache"]["reused"].startswith(str(tmp_path / "cache"))
    assert {k: v for k, v in b.items() if k != "cache"} == a
    assert ((tmp_path / "a" / "model.safetensors").read_bytes()
            == (tmp_path / "b" / "model.safetensors").read_bytes())
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [b["cache"]["key"]]
