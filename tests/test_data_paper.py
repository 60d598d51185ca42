"""The paper builder on fixtures in each source's real row schema, read back as verl rows."""

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

import sources as fx

from vade.data.config import data_config_from_mapping
from vade.data.items import (
    InvalidRow,
    image_hash,
)
from vade.data.overlap import write_exclusion_list
from vade.data.paper import build_paper
from vade.data.records import read_examples
from vade.data.sources import TASKS
from vade.data.sources.answers import parse_answer


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf")
    fx.write_all(root)
    return root


def _cfg(root: Path, tasks: dict[str, int], **paper) -> object:
    return data_config_from_mapping({"seed": 3, "data": {"kind": "paper", "val_fraction": 0.2,
                                                         "paper": {"tasks": tasks,
                                                                   "local_dir": str(root),
                                                                   "cache_dir": str(root / "c"),
                                                                   **paper}}})


@pytest.fixture(scope="module")
def built(local, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("built") / "paper"
    manifest = build_paper(_cfg(local, {t: 5 for t in TASKS}), out, progress=False)
    return out, manifest


def test_counts_split_and_manifest(built):
    out, manifest = built
    # 5 per task, round(0.2 * 5) = 1 to val: stratified, every task in both splits
    assert manifest["counts"]["train"] == {t: 4 for t in TASKS}
    assert manifest["counts"]["val"] == {t: 1 for t in TASKS}
    assert manifest["total_rows"] == 55
    # ScienceQA's text-only row is outside the task; filtered (not invalid) when visited
    assert manifest["sources"]["scienceqa"]["parse"]["filtered"] in ({}, {"no_image": 1})
    assert manifest["invalid"] == {} and manifest["shortfall"] == {}
    saved = json.loads((out / "manifest.json").read_text())
    assert saved["files"]["train.parquet"]["rows"] == 44
    import hashlib
    assert saved["files"]["val.parquet"]["sha256"] == hashlib.sha256(
        (out / "val.parquet").read_bytes()).hexdigest()
    geo = saved["sources"]["geo3k"]
    assert geo["origin"] == "local_dir" and geo["content"].startswith("sha256:")
    assert geo["commit"] is None and geo["pinned"] is None  # a copy with no hub metadata
    assert (geo["requested"], geo["taken"], geo["excluded_overlap"], geo["dropped_invalid"]) == (
        5, 5, 0, 0)
    assert json.loads((out / "exclusion_keys.json").read_text())["questions"] == {}
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp dirs left


def test_rows_read_back_with_types(built):
    out, _ = built
    train = read_examples(out / "train.parquet")
    val = read_examples(out / "val.parquet")
    assert [e.index for e in train] == list(range(44))
    assert sorted(e.index for e in val) == list(range(44, 55))
    assert len({e.uid for e in train + val}) == 55
    for e in train + val:
        assert e.messages[0]["content"].count("<image>") == len(e.images) == 1
        assert e.messages[0]["content"].startswith("<image>")
        assert "\\boxed{}" in e.messages[0]["content"]
        assert e.domain == TASKS[e.task].domain and e.data_source == e.task
        assert e.extra_info["answer"] == e.ground_truth
        if TASKS[e.task].family == "llava_ov":
            k = int(e.uid.rsplit("_", 1)[1])
            assert (e.ground_truth, e.answer_type) == fx.expected_llava(e.task, k)
            assert "Answer the question using" not in e.question  # source instructions dropped
    by_uid = {e.uid: e for e in train + val}
    sq = [e for e in by_uid.values() if e.task == "scienceqa"]
    for e in sq:
        k = int(e.uid.split("row")[1])
        assert e.ground_truth == "ABC"[k % 3] and e.answer_type == "choice"
        assert "\nA. Ohio\nB. Maine\nC. Texas" in e.question
    for e in (e for e in by_uid.values() if e.task == "chartqa"):
        k = int(e.uid.split("row")[1])
        assert (e.ground_truth, e.answer_type) == (str(10 * k + 1), "relaxed")


def test_catalog_joins_samples(built):
    import duckdb

    out, _ = built
    con = duckdb.connect(str(out / "samples.duckdb"), read_only=True)
    try:
        n, n_train, max_id = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE split = 'train'), max(sample_id) "
            "FROM samples").fetchone()
        cols = [r[0] for r in con.execute("DESCRIBE samples").fetchall()]
        domains = dict(con.execute("SELECT domain, count(*) FROM samples GROUP BY 1").fetchall())
    finally:
        con.close()
    assert (n, n_train, max_id) == (55, 44, 54)
    assert cols == ["sample_id", "uid", "task", "domain", "split", "answer_type"]
    assert domains == {"math": 30, "chart": 15, "science": 10}


def test_same_seed_same_bytes_other_seed_other_rows(local, built, tmp_path):
    _, manifest = built
    again = build_paper(_cfg(local, {t: 5 for t in TASKS}), tmp_path / "again", progress=False)
    assert again["files"] == manifest["files"]
    cfg = data_config_from_mapping({"seed": 4, "data": {"kind": "paper", "val_fraction": 0.2,
                                    "paper": {"tasks": {t: 5 for t in TASKS},
                                              "local_dir": str(local)}}})
    other = build_paper(cfg, tmp_path / "other", progress=False)
    assert other["files"]["train.parquet"]["sha256"] != manifest["files"]["train.parquet"]["sha256"]


def test_overlap_exclusion_by_image_and_question(local, tmp_path):
    from PIL import Image

    # the benchmark holds figureqa_0's picture re-encoded (other bytes, same pixels) and
    # clevr_math_1's question with different case/punctuation
    img = Image.open(io.BytesIO(fx.llava_rows("figureqa", offset=100 * sorted(TASKS).index(
        "figureqa"))[0]["image"]["bytes"]))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    excl = tmp_path / "bench.json"
    write_exclusion_list(excl, images=[buf.getvalue()],
                         questions=["SUBTRACT all 1 red balls -- how many objects are left"])
    # the fixture's pictures are one bar on a flat colour, some only 16 dHash bits apart: a
    # tighter distance than the default keeps them distinct (real pictures: test_data_overlap)
    cfg = _cfg(local, {"figureqa": 6, "clevr_math": 6}, exclude=[str(excl)],
               overlap_max_distance=4)
    m = build_paper(cfg, tmp_path / "out", progress=False)
    uids = {e.uid for s in ("train", "val") for e in read_examples(tmp_path / "out" / f"{s}.parquet")}
    assert "figureqa:figureqa_0" not in uids and "clevr_math:clevr_math_1" not in uids
    assert len(uids) == 10
    assert m["excluded_overlap"] == {"figureqa": {"image": 1}, "clevr_math": {"question": 1}}
    # each task is one row short: taken as it is, and said so
    assert m["shortfall"] == {t: {"requested": 6, "taken": 5, "short": 1}
                              for t in ("figureqa", "clevr_math")}
    assert m["sources"]["figureqa"]["overlap"]["by_benchmark"] == {"bench.json": 1}
    # 'both' needs image AND question: neither row matches both, nothing is excluded
    cfg = _cfg(local, {"figureqa": 6, "clevr_math": 6}, exclude=[str(excl)], overlap_match="both",
               overlap_max_distance=4)
    assert build_paper(cfg, tmp_path / "out2", progress=False)["excluded_overlap"] == {}


def _bad_source(root: Path) -> None:
    rows = fx.llava_rows("geo3k", n=8)
    rows[1]["image"] = {"bytes": b"\x89PNG\r\n\x1a\nnot really", "path": None}
    rows[2]["conversations"][0]["value"] = "<image>\n   "
    rows[3]["conversations"][1]["value"] = "Let me think about the figure for a long while without ever concluding anything at all."
    rows[4]["id"] = rows[0]["id"]
    rows[5]["image"] = None
    fx.write_llava(root, "geo3k", rows)


def test_low_parse_rate_refuses_the_source_with_examples(tmp_path):
    _bad_source(tmp_path / "hf")
    out = tmp_path / "out"
    cfg = _cfg(tmp_path / "hf", {"geo3k": 8})   # visits all 8 rows; 3 parse: 37.5% < 90%
    with pytest.raises(ValueError) as err:
        build_paper(cfg, out, progress=False)
    msg = str(err.value)
    assert "lmms-lab/LLaVA-OneVision-Data[geo3k]/train (task geo3k) parses 37.5% of 8" in msg
    assert "below data.paper.min_parse_rate 90%" in msg
    for reason in ("corrupt_image", "empty_question", "no_answer", "duplicate_id",
                   "missing_image"):
        assert f"{reason} x1: geo3k_" in msg
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_invalid_rows_are_dropped_and_counted(tmp_path):
    _bad_source(tmp_path / "hf")
    cfg = _cfg(tmp_path / "hf", {"geo3k": 8}, min_parse_rate=0.3)  # visit every row
    m = build_paper(cfg, tmp_path / "out", progress=False)
    assert m["invalid"] == {"corrupt_image": 1, "duplicate_id": 1, "empty_question": 1,
                            "missing_image": 1, "no_answer": 1}
    geo = m["sources"]["geo3k"]
    assert geo["parse"]["invalid"] == m["invalid"] and geo["dropped_invalid"] == 5
    assert geo["parse"]["parse_rate"] == 0.375 and geo["parse"]["visited"] == 8
    assert m["total_rows"] == 3 and geo["taken"] == 3
    assert m["shortfall"] == {"geo3k": {"requested": 8, "taken": 3, "short": 5}}
    # --skip-invalid accepts any parse rate
    assert build_paper(_cfg(tmp_path / "hf", {"geo3k": 8}), tmp_path / "o1", skip_invalid=True,
                       progress=False)["total_rows"] == 3
    # shortfall: fail -> an error naming the config key
    with pytest.raises(ValueError, match=r"data\.paper\.tasks\.geo3k asks for 8 rows"):
        build_paper(_cfg(tmp_path / "hf", {"geo3k": 8}, shortfall="fail"), tmp_path / "o2",
                    skip_invalid=True, progress=False)


def test_failed_build_keeps_previous_output(local, tmp_path):
    out = tmp_path / "out"
    first = build_paper(_cfg(local, {"ai2d": 4}), out, progress=False)
    _bad_source(tmp_path / "bad")
    with pytest.raises(ValueError):
        build_paper(_cfg(tmp_path / "bad", {"geo3k": 8}), out, progress=False)
    assert json.loads((out / "manifest.json").read_text())["files"] == first["files"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "out"]


def test_missing_source_says_what_to_download(tmp_path):
    cfg = data_config_from_mapping({"data": {"kind": "paper", "paper": {
        "tasks": {"figureqa": 2}, "local_dir": str(tmp_path)}}})
    with pytest.raises(FileNotFoundError) as err:
        build_paper(cfg, tmp_path / "out", progress=False)
    msg = str(err.value)
    assert "huggingface-cli download lmms-lab/LLaVA-OneVision-Data --repo-type dataset " \
           "--include 'figureqa(cauldron,llava_format)/*'" in msg
    assert str(tmp_path / "lmms-lab/LLaVA-OneVision-Data/figureqa(cauldron,llava_format)") in msg


@pytest.mark.parametrize("text,question,rule,expected", [
    ("The answer is 7", "How many?", "answer_is", ("7", "number")),
    ("Reasoning.\nAnswer: C", "Choices:\nA: 1\nB: 2\nC: 3", "answer_colon", ("C", "choice")),
    ("yes", "Is it?", "yesno", ("Yes", "yesno")),
    ("B", "Which?\nA. x\nB. y", "letter", ("B", "choice")),
    ("$1,234.50", "Cost?", "mixed", ("1234.50", "number")),
    ("\\frac{3}{4}", "Ratio?", "mixed", ("\\frac{3}{4}", "math")),
    ("A", "Which letter is shown?", "mixed", ("A", "text")),  # no choices offered: not a choice
])
def test_answer_parsing(text, question, rule, expected):
    assert parse_answer(text, question, rule) == expected


@pytest.mark.parametrize("text,rule", [
    ("Maybe", "yesno"), ("7", "letter"), ("", "mixed"),
    ("A long explanation\nthat never gives a final answer to anyone", "answer_colon"),
    ("The answer is blue", "answer_is"),
])
def test_answer_parsing_rejects(text, rule):
    with pytest.raises(InvalidRow) as err:
        parse_answer(text, "Which?\nA. x\nB. y", rule)
    assert err.value.reason == "no_answer"


@pytest.mark.parametrize("data,key", [
    ({"kind": "paper"}, "data.paper"),
    ({"kind": "paper", "paper": {"tasks": {"geo4k": 3}}}, "data.paper.tasks.geo4k"),
    ({"kind": "paper", "paper": {"tasks": {"geo3k": -1}}}, "data.paper.tasks.geo3k"),
    ({"kind": "paper", "paper": {"tasks": {"geo3k": 1}, "overlap_match": "any"}},
     "data.paper.overlap_match"),
    ({"kind": "paper", "paper": {"tasks": {"geo3k": 1}, "mirror": "x"}}, "data.paper.mirror"),
    ({"kind": "paper", "val_fraction": 0.9, "paper": {"tasks": {"geo3k": 1}}},
     "data.val_fraction"),
])
def test_config_errors_name_the_key(data, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        data_config_from_mapping({"data": data})


def test_image_hash_ignores_container_bytes():
    from PIL import Image

    raw = fx.png(5)
    buf = io.BytesIO()
    Image.open(io.BytesIO(raw)).save(buf, format="PNG", compress_level=0)
    assert buf.getvalue() != raw and image_hash(buf.getvalue()) == image_hash(raw)
    assert image_hash(fx.png(6)) != image_hash(raw)


def test_stratified_split_sizes_per_task():
    from vade.data.splits import stratified_split

    groups = {"geo3k": [f"g{i}" for i in range(800)], "clevr": [f"c{i}" for i in range(321)],
              "ai2d": [f"a{i}" for i in range(225)], "tiny": ["t0"]}
    train, val = stratified_split(groups, 0.1, seed=0)
    per = {k: sum(1 for x in val if x[0] == k[0]) for k in groups}
    assert per == {"geo3k": 80, "clevr": 32, "ai2d": 23, "tiny": 0}  # 22.5 rounds half up
    assert sorted(train + val) == sorted(x for g in groups.values() for x in g)
    assert stratified_split(groups, 0.1, seed=0) == (train, val)
    assert stratified_split(groups, 0.1, seed=1)[1] != val
