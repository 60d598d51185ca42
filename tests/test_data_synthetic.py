"""The synthetic generator: determinism, disjoint splits, the visual cue, the difficulty spread."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from vade.data.config import SyntheticConfig, data_config_from_mapping
from vade.data.records import read_examples
from vade.data.synthetic import build_synthetic
from vade.data.synthetic.generate import make_items
from vade.data.synthetic.render import balance_angle, chart_gap

SMALL = {"train": 60, "val": 12, "warmstart": 30, "eval": 9}
FILES = ["train.parquet", "val.parquet", "warmstart.parquet", "eval/math.parquet",
         "eval/chart.parquet", "eval/science.parquet"]


def _cfg(seed: int = 0, **synthetic):
    return data_config_from_mapping({"seed": seed, "data": {"kind": "synthetic",
                                                            "synthetic": {**SMALL, **synthetic}}})


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("syn") / "tiny"
    build_synthetic(_cfg(), out, progress=False)
    return out


def _pixels(data: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.int32)


def test_same_seed_byte_identical_other_seed_differs(built, tmp_path):
    build_synthetic(_cfg(), tmp_path / "again", progress=False)
    for f in FILES:
        assert (built / f).read_bytes() == (tmp_path / "again" / f).read_bytes(), f
    build_synthetic(_cfg(seed=1), tmp_path / "other", progress=False)
    assert (built / "train.parquet").read_bytes() != (tmp_path / "other/train.parquet").read_bytes()


def test_resizing_warmstart_leaves_train_unchanged(built, tmp_path):
    build_synthetic(_cfg(warmstart=45), tmp_path / "w", progress=False)
    assert (built / "train.parquet").read_bytes() == (tmp_path / "w/train.parquet").read_bytes()
    assert len(read_examples(tmp_path / "w/warmstart.parquet")) == 45


def test_counts_indices_and_disjoint_splits(built):
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["counts"]["train"] == {"synthetic/count": 20, "synthetic/chart": 20,
                                           "synthetic/balance": 20}
    assert manifest["counts"]["eval"] == {"synthetic/count": 9, "synthetic/chart": 9,
                                          "synthetic/balance": 9}  # eval size is per domain
    for f in FILES:
        assert manifest["files"][f]["sha256"] == hashlib.sha256((built / f).read_bytes()).hexdigest()
    rows = {f: read_examples(built / f) for f in FILES}
    assert [e.index for e in rows["train.parquet"]] == list(range(60))
    everything = [e for f in FILES for e in rows[f]]
    assert sorted(e.index for e in everything) == list(range(60 + 12 + 30 + 3 * 9))
    assert {e.domain for e in rows["eval/chart.parquet"]} == {"chart"}
    images = [hashlib.sha256(e.images[0]).hexdigest() for e in everything]
    assert len(set(images)) == len(images)  # no image shared by two rows, in or across splits
    splits = Counter(e.split for e in everything)
    assert splits == {"train": 60, "val": 12, "warmstart": 30, "eval": 27}
    for e in everything:
        assert e.messages[0]["content"].count("<image>") == 1
        assert len(e.ground_truth) == 1 and 0.0 <= e.extra_info["difficulty"] <= 1.0
        assert _pixels(e.images[0]).shape == (56, 56)


def test_catalog_has_difficulty_joinable_in_sql(built):
    import duckdb

    rows = {e.index: e for e in read_examples(built / "train.parquet")}
    con = duckdb.connect(str(built / "samples.duckdb"), read_only=True)
    try:
        got = con.execute("SELECT sample_id, uid, difficulty FROM samples WHERE split = 'train' "
                          "ORDER BY sample_id").fetchall()
        n_all = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    finally:
        con.close()
    assert n_all == 129
    assert [(i, rows[i].uid, rows[i].extra_info["difficulty"]) for i in range(60)] == got


def _bar_heights(px: np.ndarray) -> list[int]:
    size = px.shape[0]
    base = size - 2
    heights = []
    for i in range(4):
        col = px[:base, round((i + 0.5) * size / 4)]
        dark = np.nonzero(col < 64)[0]  # bars and line markers are the darkest pixels
        heights.append(base - int(dark.min()) if dark.size else 0)
    return heights


def test_chart_answer_is_tallest_bar_and_gap_follows_difficulty():
    items = make_items(SyntheticConfig(noise=0.0), 7, "probe", {"chart": 60}, set())
    styles = Counter()
    for it in items:
        h = sorted(_bar_heights(_pixels(it.images[0])), reverse=True)
        winner = int(np.argmax(_bar_heights(_pixels(it.images[0]))))
        assert "ABCD"[winner] == it.answer
        assert h[0] - h[1] == chart_gap(it.difficulty, 56)
        styles["line" if "point" in it.question else "bar"] += 1
    assert styles["bar"] > 10 and styles["line"] > 10
    assert (chart_gap(0.0, 56), chart_gap(1.0, 56), chart_gap(0.5, 56)) == (22, 1, 12)


def _components(mask: np.ndarray) -> int:
    seen = np.zeros_like(mask, dtype=bool)
    count = 0
    for y, x in zip(*np.nonzero(mask)):
        if seen[y, x]:
            continue
        count += 1
        stack = [(y, x)]
        seen[y, x] = True
        while stack:
            cy, cx = stack.pop()
            for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                if 0 <= ny < mask.shape[0] and 0 <= nx < mask.shape[1] and mask[ny, nx] \
                        and not seen[ny, nx]:
                    seen[ny, nx] = True
                    stack.append((ny, nx))
    return count


def test_count_answer_is_number_of_dots():
    items = make_items(SyntheticConfig(noise=0.0, max_count=6), 3, "probe", {"math": 40}, set())
    assert {it.answer for it in items} == {"1", "2", "3", "4", "5", "6"}
    for it in items:
        assert _components(_pixels(it.images[0]) < 250) == int(it.answer)


def test_balance_answer_is_lower_side():
    items = make_items(SyntheticConfig(noise=0.0, difficulty_alpha=1.0, difficulty_beta=3.0), 5,
                       "probe", {"science": 40}, set())
    checked = 0
    for it in items:
        if it.difficulty > 0.5:  # tilt under ~10 degrees: the ends differ by under 4 pixels
            continue
        ys, xs = np.nonzero(_pixels(it.images[0]) == 30)  # the beam's exact grey
        left = ys[xs <= xs.min() + 2].mean()
        right = ys[xs >= xs.max() - 2].mean()
        assert ("A" if left > right else "B") == it.answer
        checked += 1
    assert checked >= 20
    assert (balance_angle(0.0), balance_angle(1.0)) == (20.0, 1.0)


def test_difficulty_spread_follows_config():
    def shares(alpha: float, beta: float) -> tuple[float, float]:
        cfg = SyntheticConfig(difficulty_alpha=alpha, difficulty_beta=beta)
        d = np.array([it.difficulty for it in make_items(
            cfg, 0, "spread", {"math": 300, "chart": 300, "science": 300}, set())])
        return float(np.mean(d < 0.2)), float(np.mean(d > 0.8))

    easy, hard = shares(1.0, 1.0)  # uniform: 20% easy, 20% hard
    assert abs(easy - 0.2) < 0.05 and abs(hard - 0.2) < 0.05
    easy, hard = shares(3.0, 1.0)  # P(d > 0.8) = 1 - 0.8**3 = 0.488, P(d < 0.2) = 0.2**3 = 0.008
    assert abs(hard - 0.488) < 0.06 and easy < 0.03


def test_cli_builds_and_rejects_bad_keys(tmp_path, capsys):
    from vade.cli import main

    cfg = json.dumps({"seed": 2, "data": {"kind": "synthetic",
                                          "synthetic": {**SMALL, "domains": ["chart"]}}})
    assert main(["build-data", "--config-json", cfg, "--out", str(tmp_path / "d"),
                 "--no-progress"]) == 0
    assert sorted(p.name for p in (tmp_path / "d" / "eval").iterdir()) == ["chart.parquet"]
    assert len(read_examples(tmp_path / "d" / "train.parquet")) == 60
    bad = json.dumps({"data": {"kind": "synthetic", "synthetic": {"noise": 2}}})
    assert main(["build-data", "--config-json", bad, "--out", str(tmp_path / "e")]) == 2
    assert "data.synthetic.noise" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("data,key", [
    ({"kind": "toy"}, "data.kind"),
    ({"typo": 1}, "data.typo"),
    ({"synthetic": {"image_size": 8}}, "data.synthetic.image_size"),
    ({"synthetic": {"domains": ["math", "art"]}}, "data.synthetic.domains"),
    ({"synthetic": {"difficulty_alpha": 0}}, "data.synthetic.difficulty_alpha"),
    ({"prompt_template": "no placeholder"}, "data.prompt_template"),
])
def test_config_errors_name_the_key(data, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        data_config_from_mapping({"data": data})
