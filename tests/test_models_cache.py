"""The warm-started model's cache (vade/models/cache.py): what makes a new key, a hit, a miss.

Real: the key over a real warm-start file and config; the cache's copies. Stand-in: the build
itself, a function that writes a small folder and counts its calls (a real tiny build takes
minutes; ``vade build-model`` with ``--cache`` is the same call with the real build).
"""

from __future__ import annotations

import json
from pathlib import Path

from vade.models.cache import build_key, cached

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


def test_the_key_changes_with_config_seed_and_split(tmp_path: Path) -> None:
    split = tmp_path / "warmstart.parquet"
    split.write_bytes(b"rows")
    cfg = {"kind": "tiny", "warm_start": {"steps": 600}}
    key = build_key(cfg, 0, split)
    assert key == build_key(json.loads(json.dumps(cfg)), 0, split)  # same inputs, same key
    assert build_key({**cfg, "warm_start": {"steps": 601}}, 0, split) != key
    assert build_key(cfg, 1, split) != key
    split.write_bytes(b"rowz")
    assert build_key(cfg, 0, split) != key


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
