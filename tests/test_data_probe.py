"""``vade build-data --probe N`` and the pins: what a user sees before a build, and its refusals.

Real: TabMWP's worked solutions (PromptPG) and Geometry3K's problems (InterGPS) as the rows of two
sources (tests/fixtures/data/real/README.md); the other sources are the fixture rows built to their
schemas. The hub-download metadata of a local copy is written with huggingface_hub's own function
(what ``huggingface-cli download --local-dir`` calls); the commits are made up.
"""

from __future__ import annotations

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

from vade.cli import main
from vade.data.config import data_config_from_mapping
from vade.data.paper import build_paper
from vade.data.sources import LLAVA_OV_REPO

PIN = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf")
    fx.write_all(root, ["figureqa", "geometry3k", "tabmwp"])
    fx.write_llava(root, "tabmwp", real_rows.tabmwp_rows())
    fx.write_llava(root, "geometry3k", real_rows.geometry3k_rows())
    return root


def _config(root: Path, **paper) -> dict:
    return {"seed": 0, "data": {"kind": "paper", "paper": {
        "tasks": {"figureqa": 4, "geometry3k": 4, "tabmwp": 4}, "local_dir": str(root), **paper}}}


def test_probe_reports_parse_rates_and_examples(local, tmp_path, capsys):
    report = tmp_path / "probe.json"
    rc = main(["build-data", "--config-json", json.dumps(_config(local)), "--probe", "100",
               "--probe-json", str(report)])
    out = capsys.readouterr().out
    tasks = json.loads(report.read_text())["tasks"]
    # TabMWP: 96 of its first 100 real solutions state their answer unambiguously
    assert (tasks["tabmwp"]["visited"], tasks["tabmwp"]["parsed"]) == (100, 96)
    assert tasks["tabmwp"]["invalid"] == {"no_answer": 4}
    assert len(tasks["tabmwp"]["examples"]["no_answer"]) == 3
    assert tasks["geometry3k"]["parse_rate"] == 1.0 and tasks["geometry3k"]["visited"] == 10
    assert tasks["figureqa"]["visited"] == fx.ROWS_PER_TASK
    assert rc == 0 and all(t["ok"] for t in tasks.values())
    assert "tabmwp        96.0%      96         4             0     0" in out
    assert out.count("    no_answer: tabmwp_") == 3
    assert not (tmp_path / "out").exists()


def test_probe_names_a_source_below_the_threshold(local, capsys):
    rc = main(["build-data", "--config-json", json.dumps(_config(local, min_parse_rate=0.97)),
               "--probe", "100"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "BELOW 97%" in out and out.rstrip().endswith("min_parse_rate 97%: tabmwp")


def test_require_pinned_refuses_unpinned_repositories_before_reading(local, tmp_path):
    cfg = data_config_from_mapping(_config(local, require_pinned=True,
                                           exclude_benchmarks=["mathvista_testmini"]))
    with pytest.raises(ValueError) as err:
        build_paper(cfg, tmp_path / "out", progress=False)
    msg = str(err.value)
    assert "not pinned: lmms-lab/LLaVA-OneVision-Data (no pin), AI4Math/MathVista (no pin)" in msg
    main_pin = data_config_from_mapping({**_config(local, require_pinned=True),
                                         "cluster": {"revisions": {LLAVA_OV_REPO: "main"}}})
    with pytest.raises(ValueError, match=r"LLaVA-OneVision-Data \(main\)"):
        build_paper(main_pin, tmp_path / "out", progress=False)


def _mark_downloaded(root: Path, commit: str) -> None:
    """What `huggingface-cli download --local-dir` leaves beside each file it fetched."""
    from huggingface_hub._local_folder import write_download_metadata

    repo = root / LLAVA_OV_REPO
    for f in sorted(repo.rglob("*.parquet")):
        if ".cache" not in f.parts:
            write_download_metadata(repo, f.relative_to(repo).as_posix(), commit, "etag")


def test_pinned_copy_is_checked_and_recorded(tmp_path):
    root = tmp_path / "hf"
    fx.write_all(root, ["figureqa"])
    paper = {"tasks": {"figureqa": 3}, "local_dir": str(root), "require_pinned": True}
    pinned = {"seed": 0, "data": {"kind": "paper", "paper": paper},
              "cluster": {"revisions": {LLAVA_OV_REPO: PIN}}}
    with pytest.raises(ValueError, match=r"cannot show that the copy read .* is the pinned "
                                         r"commit " + PIN):
        build_paper(data_config_from_mapping(pinned), tmp_path / "o1", progress=False)
    _mark_downloaded(root, "f" * 40)
    with pytest.raises(ValueError, match=r"is commit f{40}, but cluster.revisions pins"):
        build_paper(data_config_from_mapping(pinned), tmp_path / "o2", progress=False)
    _mark_downloaded(root, PIN)
    m = build_paper(data_config_from_mapping(pinned), tmp_path / "o3", progress=False)
    src = m["sources"]["figureqa"]
    assert (src["commit"], src["pinned"], src["origin"]) == (PIN, PIN, "local_dir")
    assert (src["requested"], src["taken"], src["excluded_overlap"], src["dropped_invalid"]) == (
        3, 3, 0, 0)


def test_prefetched_copy_records_the_staged_commit_and_origin(tmp_path, monkeypatch):
    from vade.data.sources import TASKS
    from vade.data.sources.loading import _cache_provenance

    class Copy:  # stands in for a prepared datasets copy: only its cache file names are read
        cache_files = ({"filename": f"/c/datasets/x/geo3k/0.0.0/{'a' * 40}/x-train.arrow"},)

    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    assert _cache_provenance(TASKS["geo3k"], Copy(), use_hub=True) == {
        "origin": "hub", "revision": None, "commit": "a" * 40}
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)   # offline: never "hub"
    assert _cache_provenance(TASKS["geo3k"], Copy(), use_hub=True)["origin"] == "cache"
    (tmp_path / "manifest.json").write_text(json.dumps({"assets": [
        {"id": LLAVA_OV_REPO, "revision": PIN, "commit": PIN, "origin": "local:/site/copy"}]}))
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert _cache_provenance(TASKS["geo3k"], Copy(), use_hub=True) == {
        "origin": "prefetch:local:/site/copy", "revision": PIN, "commit": PIN}


@pytest.mark.parametrize("argv,message", [
    (["--probe", "5"], "data.kind must be 'paper'"),
    ([], "needs --out DIR (or --probe N)"),
])
def test_command_line_errors_are_one_line(argv, message, capsys):
    rc = main(["build-data", "--config-json", json.dumps({"data": {"kind": "synthetic"}}), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
