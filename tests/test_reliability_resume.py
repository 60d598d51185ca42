"""Resumed initial-difficulty work is checked against the content of what produced it (issue 49,
items 1, 2 and 12).

Real: the ``vade init-difficulty`` command, the HF engine on a random tiny Qwen2.5-VL, the reward,
the chunk files. Stand-in: the job's time limit, a ``KeyboardInterrupt`` raised from the engine's
third call (what SIGINT/the time-limit guard raise there)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vade import content_digest as digest_module
from vade.cli import main
from vade.content_digest import content_digest
from vade.models.hf_engine import HFEngine
from vade.models.testing import bar_examples, bar_rows, tiny_policy, write_rows

CFG = {"seed": 0, "difficulty": {"engine": "hf", "rollouts": 2, "max_new_tokens": 4,
                                 "batch_size": 2}}   # one prompt per chunk: 5 chunks


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """Two random tiny models with the same tokenizer and config, different weights."""
    d = tmp_path_factory.mktemp("models")
    exs = bar_examples(6, seed=3)
    tiny_policy(exs, seed=0).save(d / "a")
    tiny_policy(exs, seed=1).save(d / "b")
    return d / "a", d / "b"


def _cli(data: Path, model: Path, out: Path) -> int:
    return main(["init-difficulty", "--config-json", json.dumps(CFG), "--data", str(data),
                 "--model", str(model), "--out", str(out), "--no-progress"])


def _killed_run(monkeypatch, data: Path, model: Path, out: Path) -> None:
    """A run of ``data`` (5 rows written here) on ``model`` killed in its third chunk."""
    write_rows(data, bar_rows(5, seed=9))
    real, seen = HFEngine.generate, []

    def generate(self, *a, **kw):
        if len(seen) == 2:
            raise KeyboardInterrupt("time limit")
        seen.append(1)
        return real(self, *a, **kw)

    with monkeypatch.context() as m:
        m.setattr(HFEngine, "generate", generate)
        with pytest.raises(KeyboardInterrupt):
            _cli(data, model, out)


def test_a_resume_after_the_weights_were_replaced_recomputes(two_models, tmp_path, monkeypatch,
                                                             capsys):
    """Before: the key was the model's path, so the second run printed "resumed 2 written
    chunk(s)" and mixed two models' counts."""
    a, b = two_models
    model, data, out = tmp_path / "model", tmp_path / "train.parquet", tmp_path / "out"
    shutil.copytree(a, model)
    _killed_run(monkeypatch, data, model, out)
    assert len(list((out / "chunks").glob("chunk-*.npy"))) == 2
    for f in b.iterdir():                  # the folder now holds model b's weights
        if f.is_file():
            shutil.copy(f, model / f.name)
    capsys.readouterr()
    assert _cli(data, model, out) == 0
    text = capsys.readouterr().out
    assert "written chunks are of another model; recomputing them" in text
    assert "resumed" not in text
    assert _cli(data, b, tmp_path / "fresh") == 0
    assert (pq.read_table(out / "initial.parquet").to_pydict()
            == pq.read_table(tmp_path / "fresh" / "initial.parquet").to_pydict())


def test_an_unchanged_model_resumes_and_is_hashed_once(two_models, tmp_path, monkeypatch, capsys):
    a, _ = two_models
    data, out = tmp_path / "train.parquet", tmp_path / "out"
    _killed_run(monkeypatch, data, a, out)
    hashed = []
    real = digest_module.file_sha256
    monkeypatch.setattr(digest_module, "file_sha256", lambda p: hashed.append(p) or real(p))
    capsys.readouterr()
    assert _cli(data, a, out) == 0
    assert "resumed 2 written chunk(s)" in capsys.readouterr().out
    assert hashed == []    # size, mtime and inode unchanged: the cached digests are used


def test_content_digest_of_a_folder_sees_a_rewrite_in_place(tmp_path):
    folder, cache = tmp_path / "m", tmp_path / "cache.json"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"one")
    first = content_digest(folder, cache)
    assert first == content_digest(folder, cache)
    (folder / "w.bin").write_bytes(b"two")
    os.utime(folder / "w.bin", ns=(1, 1))
    assert content_digest(folder, cache) != first
    assert content_digest(tmp_path / "m" / "w.bin").removeprefix("sha256:") == (
        "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3")   # sha256(b"two")


def test_a_truncated_chunk_is_named_and_recomputed(tmp_path, two_models, monkeypatch, capsys):
    """Before: "EOF: reading array header, expected 118 bytes got 90" on every rerun."""
    a, _ = two_models
    data, out = tmp_path / "train.parquet", tmp_path / "out"
    _killed_run(monkeypatch, data, a, out)
    chunk = out / "chunks" / "chunk-000001.npy"
    chunk.write_bytes(chunk.read_bytes()[:90])
    capsys.readouterr()
    assert _cli(data, a, out) == 0
    text = capsys.readouterr().out
    assert f"{chunk}: unreadable" in text and "recomputing this chunk" in text
    assert "resumed 1 written chunk(s)" in text
    assert _cli(data, a, tmp_path / "fresh") == 0
    assert (pq.read_table(out / "initial.parquet").to_pydict()
            == pq.read_table(tmp_path / "fresh" / "initial.parquet").to_pydict())


def test_a_difficulty_file_of_pass_rates_is_refused_naming_file_and_column(tmp_path):
    """Before: ``correct = correct / rollouts`` passed the 0 <= correct <= rollouts check and
    sample 0 started from alpha 0.625, beta 7.375 instead of 5 and 3."""
    from vade.train.difficulty import initial_alpha_beta

    path = tmp_path / "initial.parquet"
    counts = np.array([5, 2, 8], dtype=np.int64)
    pq.write_table(pa.table({"sample_id": np.arange(3, dtype=np.int64), "correct": counts / 8,
                             "rollouts": np.full(3, 8, dtype=np.int64)}), path)
    with pytest.raises(ValueError, match=rf"{path}: column 'correct' is double; it must hold "
                                         "integer counts"):
        initial_alpha_beta(path, np.arange(3))
    pq.write_table(pa.table({"sample_id": np.arange(3, dtype=np.int64), "correct": counts,
                             "rollouts": np.full(3, 8, dtype=np.int64)}), path)
    alpha, beta = initial_alpha_beta(path, np.arange(3))
    assert alpha.tolist() == [5, 2, 8] and beta.tolist() == [3, 6, 0]
