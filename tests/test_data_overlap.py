"""No overlap with the benchmarks: perceptual hashes on real diagrams, keys from an evaluation split.

Real: Geometry3K's problems and diagrams (InterGPS; MathVista's testmini holds Geometry3K
problems, which is the overlap this guards against). Built to the published formats: the
LLaVA-OneVision wrapping of the training rows and a local MathVista testmini copy in its hub
schema (``pid``, ``question``, ``image`` path string, ``decoded_image`` Image, ``choices``,
``answer``), three rows, standing in for the split ``vade prefetch`` stages.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "data"))

import real_rows
import sources as fx

from vade.data.config import data_config_from_mapping
from vade.data.overlap import question_key
from vade.data.paper import build_paper
from vade.data.phash import dhash, hamming, informative

DIAGRAMS = {pid: (real_rows.REAL / "geometry3k" / f"{pid}.png").read_bytes()
            for pid in ("13", "17", "20")}


def _jpeg(data: bytes, scale: float, quality: int) -> bytes:
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    img = img.resize((int(img.width * scale), int(img.height * scale)))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def test_dhash_matches_reencodings_and_separates_diagrams():
    hashes = {pid: dhash(b) for pid, b in DIAGRAMS.items()}
    for pid, data in DIAGRAMS.items():
        for scale, quality in ((1.0, 75), (0.8, 60), (1.5, 90)):
            assert hamming(hashes[pid], dhash(_jpeg(data, scale, quality))) <= 16
    pids = sorted(hashes)
    for i, a in enumerate(pids):
        for b in pids[i + 1:]:
            assert hamming(hashes[a], hashes[b]) > 48   # different diagrams: far apart
    assert len(hashes["13"]) == 64 and all(informative(h) for h in hashes.values())


def test_flat_pictures_are_uninformative():
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (50, 40), (255, 255, 255)).save(buf, format="PNG")
    assert not informative(dhash(buf.getvalue()))


@pytest.mark.parametrize("text,key", [
    (("Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, "
     "at the end.\nQuestion: Find y so that the quadrilateral is a parallelogram.\nChoices:\n(A) 9"),
     "find y so that the quadrilateral is a parallelogram"),
    ("Find y so that the quadrilateral is a parallelogram.",
     "find y so that the quadrilateral is a parallelogram"),
    ("Find x.", None),                       # too short to name one problem
    ("Question: What is the value of x?\nA. 1\nB. 2", None),
    ("What is the difference between the highest and the lowest value?",
     "what is the difference between the highest and the lowest value"),
])
def test_question_key(text, key):
    assert question_key(text) == key


def test_a_question_asked_of_many_pictures_is_not_a_key():
    from vade.data.overlap import MAX_QUESTION_PICTURES, KeySet

    keys = KeySet()
    q = question_key("What is the difference between the highest and the lowest value?")
    for k in range(MAX_QUESTION_PICTURES + 1):
        keys.add_question(q, "chartqa_test", [f"picture-{k}"])
    keys.add_question(question_key(real_rows.geometry3k_problems()["13"]["problem_text"]),
                      "mathvista_testmini", [dhash(DIAGRAMS["13"])])
    assert keys.drop_generic() == {"chartqa_test": 1}
    assert list(keys.keys["questions"]) == ["find y so that the quadrilateral is a parallelogram"]


def _mathvista(root: Path) -> None:
    """A MathVista testmini copy: problem 13's diagram re-encoded with its question, problem 17's
    diagram halved with another question, and a "Find x." question on an unrelated picture."""
    import datasets

    p = real_rows.geometry3k_problems()
    rows = [
        {"pid": "1", "question": p["13"]["problem_text"], "image": "images/1.jpg",
         "decoded_image": {"bytes": _jpeg(DIAGRAMS["13"], 0.8, 60), "path": None}},
        {"pid": "2", "question": "What is the perimeter of the shape shown in the figure?",
         "image": "images/2.jpg", "decoded_image": {"bytes": _jpeg(DIAGRAMS["17"], 0.5, 80),
                                                   "path": None}},
        {"pid": "3", "question": "Find x.", "image": "images/3.png",
         "decoded_image": {"bytes": fx.png(7), "path": None}},
    ]
    for r in rows:
        r.update(choices=["1", "2"], answer="1")
    features = datasets.Features({"pid": datasets.Value("string"),
                                  "question": datasets.Value("string"),
                                  "image": datasets.Value("string"),
                                  "decoded_image": datasets.Image(),
                                  "choices": [datasets.Value("string")],
                                  "answer": datasets.Value("string")})
    folder = root / "AI4Math/MathVista/data"
    folder.mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(
        str(folder / "testmini-00000-of-00001-abc.parquet"))
    # the same repository's test split must not be read as testmini
    datasets.Dataset.from_list(rows[:1], features=features).to_parquet(
        str(folder / "test-00000-of-00001-def.parquet"))


def test_build_drops_rows_that_overlap_an_evaluation_split(tmp_path):
    root = tmp_path / "hf"
    fx.write_llava(root, "geometry3k", real_rows.geometry3k_rows())
    _mathvista(root)
    cfg = data_config_from_mapping({"seed": 1, "data": {"kind": "paper", "val_fraction": 0.2,
                                    "paper": {"tasks": {"geometry3k": 10}, "local_dir": str(root),
                                              "exclude_benchmarks": ["mathvista_testmini"]}}})
    m = build_paper(cfg, tmp_path / "out", progress=False, log=lambda s: None)
    src = m["sources"]["geometry3k"]
    # problem 13: its diagram (re-encoded) and its question; problem 17: its diagram (halved).
    # The "Find x." problems (12, 14, 16, ...) stay: a short question is not a key.
    assert src["overlap"]["by_reason"] == {"image": 1, "image+question": 1}
    assert src["overlap"]["by_benchmark"] == {"mathvista_testmini": 2}
    assert {e.split(":")[0] for e in src["overlap"]["examples"]} == {"mathv360k_13",
                                                                     "mathv360k_17"}
    assert (src["taken"], src["excluded_overlap"], src["dropped_invalid"]) == (8, 2, 0)
    assert m["shortfall"] == {"geometry3k": {"requested": 10, "taken": 8, "short": 2}}
    bench = m["exclusion"]["benchmarks"]["mathvista_testmini"]
    assert (bench["rows"], bench["images"], bench["questions"], bench["short_questions"]) == (
        3, 3, 2, 1)
    assert bench["image_columns"] == ["decoded_image"] and bench["origin"] == "local_dir"
    keys = json.loads((tmp_path / "out" / "exclusion_keys.json").read_text())
    assert keys["questions"] == {
        "find y so that the quadrilateral is a parallelogram": ["mathvista_testmini"],
        "what is the perimeter of the shape shown in the figure": ["mathvista_testmini"]}
    assert len(keys["image_dhash"]) == 3 and len(keys["image_sha256"]) == 3
    assert m["files"]["exclusion_keys.json"]["sha256"]


def test_unknown_benchmark_is_a_config_error():
    with pytest.raises(ValueError, match=r"data\.paper\.exclude_benchmarks"):
        data_config_from_mapping({"data": {"kind": "paper", "paper": {
            "tasks": {"geo3k": 1}, "exclude_benchmarks": ["mathvista_test"]}}})


def test_benchmark_read_from_the_prefetched_cache_records_its_commit(tmp_path, monkeypatch):
    """The cluster path: the split staged and prepared by ``vade prefetch`` (its own
    ``prepare_dataset`` and manifest entry, written here), read offline by hub id."""
    import datasets

    from vade.cluster.assets import Asset
    from vade.cluster.prefetch import prepare_dataset
    from vade.data.benchmarks import benchmark_keys

    commit = "b" * 40
    snap = tmp_path / "snap"
    _mathvista(snap)
    (snap / "AI4Math/MathVista/README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: testmini\n"
        "    path: data/testmini-*\n  - split: test\n    path: data/test-*\n---\n")
    cache = tmp_path / "cache"
    prepare_dataset(Asset("AI4Math/MathVista", "dataset", "main", ("data",), (None,)),
                    snap / "AI4Math/MathVista", commit, cache / "datasets")
    (cache / "manifest.json").write_text(json.dumps({"assets": [
        {"id": "AI4Math/MathVista", "revision": commit, "commit": commit, "origin": "hub"}]}))
    monkeypatch.setenv("HF_HOME", str(cache))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    keys, report = benchmark_keys(["mathvista_testmini"], local_dir=None,
                                  cache_dir=str(cache / "datasets"), use_hub=True)
    r = report["mathvista_testmini"]
    assert (r["origin"], r["commit"], r["revision"]) == ("prefetch:hub", commit, commit)
    assert (r["rows"], r["images"]) == (3, 3) and keys.sizes()["image_sha256"] == 3
