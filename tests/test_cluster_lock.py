"""Resolve once, pin after: ``vade prefetch`` records each hub commit in the revisions lock,
``build-data`` reads it, and plan/preflight name missing pins before anything is staged.

Stand-in: the Hugging Face hub (unreachable here). ``huggingface_hub.snapshot_download`` and
``HfApi.model_info`` / ``dataset_info`` are replaced by functions that resolve ``main`` to one
fake commit per repository and answer a commit with itself, writing the hub cache's layout.
Real: prefetch's default code path (it imports those two names itself), the lock file, the data
config that build-data validates, the bill and the preflight check.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
import yaml

from vade.cluster.assets import assets_of, missing_pins
from vade.cluster.bill import make_bill
from vade.cluster.prefetch import prefetch
from vade.cluster.preflight import check_pins
from vade.data.config import data_config_from_mapping
from vade.data.pins import check_pins as build_check_pins
from vade.data.pins import pinned_repos
from vade.job.revisions import pinned_revisions, read_lock, write_lock

DATASETS = ["lmms-lab/LLaVA-OneVision-Data", "HuggingFaceM4/ChartQA", "derek-thomas/ScienceQA",
            "AI4Math/MathVista", "CaraJ/MathVerse-lmmseval", "MathLLMs/MathVision",
            "lmms-lab-encoder/ChartQA", "lmms-lab-encoder/ScienceQA"]


def _commit(repo: str) -> str:
    return hashlib.sha1(repo.encode()).hexdigest()   # what the fake hub's main resolves to


@pytest.fixture
def shipped(tmp_path: Path) -> dict:
    """config/config.yaml as shipped (its cluster section kept), cache and lock in tmp_path."""
    with open("config/config.yaml", encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    assert cfg["cluster"]["revisions"] == {} and cfg["data"]["paper"]["require_pinned"]
    assert cfg["cluster"]["revisions_lock"] == "config/revisions.lock.yaml"
    cfg["cluster"]["cache_dir"] = str(tmp_path / "cache")
    cfg["cluster"]["revisions_lock"] = str(tmp_path / "revisions.lock.yaml")
    return cfg


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch):
    """snapshot_download and the repo-info calls of a hub whose ``main`` is ``_commit(repo)``;
    returns the (repo, revision) each download asked for. Datasets' files are left out (the
    preparation step is tested in test_cluster_prefetch.py): prefetch is told each asset's
    configs are none."""
    asked: list[tuple[str, str]] = []

    def download(repo_id, repo_type, revision, cache_dir, allow_patterns=None):
        asked.append((repo_id, revision))
        commit = revision if len(revision) == 40 else _commit(repo_id)
        repo = Path(cache_dir) / f"{repo_type}s--{repo_id.replace('/', '--')}"
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True, exist_ok=True)
        (snap / "config.json").write_text("{}")
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / revision).write_text(commit)
        return str(snap)

    def info(self, repo_id, revision=None, files_metadata=False):
        return SimpleNamespace(siblings=[SimpleNamespace(rfilename="config.json", size=2)])

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", info)
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", info)
    monkeypatch.setattr("vade.cluster.prefetch.prepare_dataset", lambda *a: [])
    monkeypatch.setattr("vade.eval.official.stage", lambda *a, **k: {})
    return asked


def test_shipped_config_names_its_missing_pins_before_prefetch(shipped):
    """On main the plan said nothing and build-data refused only after prefetch had staged
    every dataset at main; now plan and preflight name the 8 and the command that pins them."""
    assert missing_pins(shipped) == DATASETS
    bill = make_bill(shipped, "config/config.yaml").text()
    line = next(x for x in bill.splitlines() if "require_pinned" in x)
    assert line.startswith("! data.paper.require_pinned: 8 dataset repositories have no commit")
    assert "`vade prefetch --config config/config.yaml`" in line
    assert shipped["cluster"]["revisions_lock"] in line
    check = check_pins(shipped)
    assert not check.ok and "lmms-lab/LLaVA-OneVision-Data" in check.detail
    assert "vade prefetch" in check.knob


def test_prefetch_resolves_once_then_build_data_and_prefetch_read_the_lock(shipped, fake_hub):
    lock = Path(shipped["cluster"]["revisions_lock"])
    prefetch(shipped, log=lambda s: None)
    assert {rev for _, rev in fake_hub} == {"main"}   # the first prefetch resolves main
    got = read_lock(lock)
    ids = [a.id for a in assets_of(shipped, locked=False)]
    assert got == {i: _commit(i) for i in ids}       # models and judge recorded too
    assert missing_pins(shipped) == [] and check_pins(shipped).ok
    assert "require_pinned" not in make_bill(shipped).text()
    # build-data's own check: the data config now carries the commits
    paper = data_config_from_mapping(shipped).paper
    build_check_pins(paper, [])
    assert {r: paper.revisions[r] for r in pinned_repos(paper, [])} == {
        r: _commit(r) for r in pinned_repos(paper, [])}
    # the next prefetch downloads exactly the locked commits
    fake_hub.clear()
    prefetch(shipped, log=lambda s: None)
    assert fake_hub == [(i, _commit(i)) for i in ids]
    # the workflow's params stay as the config wrote them (no rerun of prefetch or after)
    assert {a.revision for a in assets_of(shipped, locked=False)} == {"main"}


def test_a_commit_in_the_config_wins_over_the_lock_and_rewrites_it(shipped, fake_hub):
    lock = Path(shipped["cluster"]["revisions_lock"])
    write_lock(lock, {"AI4Math/MathVista": "a" * 40})
    cfg = copy.deepcopy(shipped)
    cfg["cluster"]["revisions"] = {"AI4Math/MathVista": "b" * 40, "MathLLMs/MathVision": "v2"}
    revs = pinned_revisions(cfg)
    assert revs["AI4Math/MathVista"] == "b" * 40 and revs["MathLLMs/MathVision"] == "v2"
    prefetch(cfg, log=lambda s: None)
    assert ("AI4Math/MathVista", "b" * 40) in fake_hub and ("MathLLMs/MathVision", "v2") in fake_hub
    assert read_lock(lock)["AI4Math/MathVista"] == "b" * 40
    assert read_lock(lock)["MathLLMs/MathVision"] == _commit("MathLLMs/MathVision")


def test_a_bad_lock_line_is_one_line_naming_the_file(tmp_path):
    lock = tmp_path / "revisions.lock.yaml"
    lock.write_text("AI4Math/MathVista: main\n")
    with pytest.raises(ValueError, match=r"cluster.revisions_lock .*revisions.lock.yaml: entry "
                                         r"'AI4Math/MathVista' is not"):
        read_lock(lock)


def test_without_a_lock_key_prefetch_says_nothing_records_the_commits(shipped):
    cfg = copy.deepcopy(shipped)
    del cfg["cluster"]["revisions_lock"]
    assert "set cluster.revisions_lock" in check_pins(cfg).knob


@pytest.mark.e2e
def test_the_workflow_gives_build_data_the_lock(tmp_path):
    """A real Snakemake dry run of the shipped config: build-data's config carries
    cluster.revisions_lock (on main it got cluster.revisions only, so the lock was never read)."""
    import json
    import re
    import subprocess
    import sys

    from workflow_copy import clean_copy

    repo = clean_copy(tmp_path / "repo")
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(snakemake), "-n", "-p", "--profile", "slurm", "build_data"],
                          cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    cmd = next(x for x in proc.stdout.splitlines() if "vade build-data --config-json" in x)
    cfg = json.loads(re.search(r"--config-json '(.*?)' --out", cmd).group(1))
    assert cfg["cluster"] == {"revisions": {}, "revisions_lock": "config/revisions.lock.yaml"}
