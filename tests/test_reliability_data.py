"""Bad data and a broken history are found before training, each with one line naming the file
and row, and nothing already written is touched.

Real: the local trainer's input checks, parquet reading, Pillow decoding and the DuckDB
history. Stand-in: the toy policy (``vade.train.local.toy``) for the tiny Qwen2.5-VL, so a run
takes seconds on a CPU.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_train_local import _cfg, _paths, png_bytes, write_toy_data

from vade.data.records import read_examples
from vade.tracking import TrackingConfig
from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy


def _data(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return write_toy_data(tmp_path / "data")


def _edit_row(path: Path, pos: int, **changes) -> None:
    rows = pq.read_table(path).to_pylist()
    rows[pos].update(changes)
    pq.write_table(pa.Table.from_pylist(rows), path)


def _png() -> bytes:
    return png_bytes((4, 4), (255, 0, 0))


@pytest.mark.parametrize(("change", "message"), [
    ({"images": [{"bytes": b"\x89PNG\r\n\x1a\n" + b"garbage" * 20, "path": None}]},
     "image 0 cannot be decoded"),
    ({"images": [{"bytes": _png()[:40], "path": None}]}, "image 0 cannot be decoded"),
    ({"images": []}, "no image (images is empty)"),   # before: failed at step 1, no file named
    ({"reward_model": {"style": "rule", "ground_truth": ""}}, "without an answer"),
    ({"reward_model": {"style": "rule", "ground_truth": None}}, "without an answer"),
])
def test_a_bad_row_stops_the_run_before_any_step(tmp_path, change, message):
    """Before: garbled image bytes trained 2 steps and wrote a checkpoint, then failed with
    "row index=32: image 0 cannot be decoded", no file named."""
    data = _data(tmp_path)
    _edit_row(data / "train.parquet", 32, **change)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    with pytest.raises(ValueError) as info:
        train_local(_cfg(tmp_path), _paths(data, out), progress=False,
                    load_policy=ToyPolicy.load)
    line = str(info.value)
    assert "\n" not in line and message in line
    assert str(data / "train.parquet") in line and "row 32" in line
    assert not out.exists()


def test_good_images_pass(tmp_path):
    data = _data(tmp_path)
    _edit_row(data / "train.parquet", 3, images=[{"bytes": _png(), "path": None}])
    assert read_examples(data / "train.parquet")[3].images


def test_a_truncated_history_is_one_line_and_loses_nothing(tmp_path):
    """Before: a 31-line ``_duckdb.IOException`` traceback from ``RunStore.__init__``."""
    data = _data(tmp_path)
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    cfg = replace(_cfg(tmp_path, steps=4), tracking=TrackingConfig(enabled=False))
    train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    history = out / "history.duckdb"
    os.truncate(history, history.stat().st_size // 2)
    before = {p: p.stat().st_size for p in out.rglob("*") if p.is_file()}
    with pytest.raises(ValueError) as info:
        train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    assert "\n" not in str(info.value) and str(history) in str(info.value)
    assert "truncated or corrupt" in str(info.value)
    assert {p: p.stat().st_size for p in out.rglob("*") if p.is_file()} == before
