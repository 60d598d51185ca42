"""The judge prompts are the benchmarks' own: MathVista's from lmms-eval's task code, MathVerse's
from its pinned ``evaluation/prompts.py`` staged by ``vade prefetch``.

Real: lmms-eval 0.7.3's MathVista extraction prompt and test-prompt assembly (imported), our
staging, sha256 check and ``ast`` reading (``vade.eval.official``), MathVerse's official prompt
assembly and 30-word truncation. Stand-ins: MathVerse's prompt file (``official_stub``: short text
with the official placeholders; the real file is on GitHub, out of reach here) and the download
(``fetch`` writes bytes instead of reaching GitHub).
"""

from __future__ import annotations

import hashlib

import pytest
from official_stub import SOURCE, stage_stand_in

from vade.eval import official


@pytest.mark.e2e  # about 10 s: lmms-eval's judge client module loads with the prompt
def test_mathvista_prompt_is_lmms_eval_official_one_with_its_five_real_examples():
    prompt = official.mathvista_extract_prompt("Hint: H\nQuestion: Q", "It is 5.")
    assert prompt.startswith("Please read the following example. Then extract the answer")
    for example in ("Which number is missing?",                      # integer
                    "What is the fraction of females facing the camera?",  # 1 decimal
                    "(Unit: $)",                                      # 2 decimals
                    "Between which two years",                        # list
                    "What fraction of the shape is blue?"):           # multiple choice
        assert example in prompt
    assert prompt.endswith("Hint: H\nQuestion: Q\n\nIt is 5.\n\nExtracted answer: ")


def test_mathverse_prompts_are_read_from_the_staged_file_and_assembled_officially(
        tmp_path, monkeypatch):
    stage_stand_in(tmp_path, monkeypatch)
    extract = official.mathverse_extract_prompt("so x = 3")
    assert extract == ("STAND-IN extraction examples.\n\n1.\nModel response: 'so x is 3'\n"
                       "Extracted Answer: 3\n\n7.\n\nModel response: 'so x = 3'\n"
                       "Extracted Answer: ")
    match = official.mathverse_match_prompt("", "{B}", "B")  # Vision Only: an empty question
    assert match == ("STAND-IN match examples, braces {1}.\n\n[Question]: \n"
                     "[Standard Answer]: {B}\n[Model_answer] : B\nJudgement:")


def test_the_response_is_cut_to_its_last_30_words():
    words = [f"w{i}" for i in range(40)]
    assert official.trunk_response(" ".join(words)) == " ".join(words[10:])
    assert official.trunk_response("a  b") == "a  b"  # split on single spaces, as officially
    assert official.trunk_response("x " * 5, 0) == "x " * 5


def test_an_unstaged_or_altered_file_is_refused_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("VADE_OFFICIAL_DIR", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError, match=r"ZrrSkywalker/MathVerse@ac31a9c8b92e.*"
                                                r"run `vade prefetch`"):
        official.mathverse_extract_prompt("x")
    path = stage_stand_in(tmp_path / "staged", monkeypatch)
    path.write_text(SOURCE + "# edited\n", encoding="utf-8")
    with pytest.raises(ValueError, match="sha256 .* is not the pinned"):
        official.mathverse_match_prompt("q", "a", "e")


def test_the_file_is_read_never_executed(tmp_path, monkeypatch):
    source = "import os\nos.environ['PWNED'] = '1'\ndemo_prompt_extract = 'E'\n"
    path = stage_stand_in(tmp_path, monkeypatch)
    path.write_text(source, encoding="utf-8")
    pin = official.PINNED["mathverse_prompts"]
    monkeypatch.setitem(official.PINNED, "mathverse_prompts", official.OfficialFile(
        pin.repo, pin.commit, pin.path, hashlib.sha256(source.encode()).hexdigest()))
    monkeypatch.delenv("PWNED", raising=False)
    assert official.official_text("mathverse_prompts") == {"demo_prompt_extract": "E"}
    assert "PWNED" not in __import__("os").environ


def _paper(judge_variant: str = "judge") -> dict:
    return {"evaluate": {"kind": "paper", "mathvision_variant": judge_variant}}


def test_prefetch_stages_the_pinned_file_by_its_commit_and_checks_it(tmp_path, monkeypatch):
    pin = official.PINNED["mathverse_prompts"]
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()
    monkeypatch.setitem(official.PINNED, "mathverse_prompts",
                        official.OfficialFile(pin.repo, pin.commit, pin.path, digest))
    urls = []

    def fetch(url, dest):
        urls.append(url)
        dest.write_text(SOURCE, encoding="utf-8")

    got = official.stage(_paper(), tmp_path, fetch=fetch, log=lambda s: None)
    assert urls == [(f"https://raw.githubusercontent.com/ZrrSkywalker/MathVerse/{pin.commit}/"
                     "evaluation/prompts.py")]
    assert [g["status"] for g in got] == ["staged"]
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # jobs read HF_HOME = cluster.cache_dir
    monkeypatch.delenv("VADE_OFFICIAL_DIR", raising=False)
    assert "{question}" in official.official_text("mathverse_prompts")["demo_prompt_score"]
    official.stage(_paper(), tmp_path, fetch=fetch, log=lambda s: None)
    assert len(urls) == 1  # staged once


def test_prefetch_records_a_file_it_cannot_fetch_or_verify(tmp_path):
    def offline(url, dest):
        raise OSError("no network")

    got = official.stage(_paper(), tmp_path, fetch=offline, log=lambda s: None)
    assert got[0]["status"].startswith("missing (OSError: no network)")
    got = official.stage(_paper(), tmp_path, fetch=lambda u, d: d.write_text("x"),
                         log=lambda s: None)
    assert "missing (ValueError: sha256" in got[0]["status"]
    assert not list((tmp_path / "official").rglob("prompts.py*"))  # nothing half-written


def test_only_configs_that_judge_mathverse_or_mathvision_stage_it(tmp_path):
    assert official.stage({"evaluate": {"kind": "synthetic"}}, tmp_path, log=print) == []
    bench = {"name": "MV", "task": "vade_mathvista_testmini", "metric": "accuracy"}
    assert official.stage({"evaluate": {"kind": "paper", "benchmarks": [bench]}}, tmp_path,
                          log=print) == []


def test_a_job_without_the_official_prompts_stops_before_any_model_loads(tmp_path, monkeypatch):
    """``vade evaluate`` preloads every task (and its companions') before the judge and the
    policy start; lmms-eval's task building stands in (a task of two items; the real module
    takes 40 s to import)."""
    import sys
    import types

    from vade.eval.config import Benchmark, Companion
    from vade.eval.preload import preload_tasks

    class Task:
        eval_docs = (0, 1)

    class Manager:
        all_tasks = ("vade_mathverse_testmini", "vade_mathverse_testmini_cot")

    built = []
    fake = types.ModuleType("lmms_eval.tasks")
    fake.get_task_dict = lambda names, manager: built.extend(names) or {names[0]: Task()}
    monkeypatch.setitem(sys.modules, "lmms_eval.tasks", fake)
    monkeypatch.setenv("VADE_OFFICIAL_DIR", str(tmp_path / "empty"))
    bench = Benchmark("MathVerse", "vade_mathverse_testmini", "accuracy", judge=True,
                      companions=(Companion("CoT", "vade_mathverse_testmini_cot", "accuracy"),))
    with pytest.raises(ValueError, match=r"benchmark MathVerse .*not staged .*vade prefetch"):
        preload_tasks([bench], Manager())
    stage_stand_in(tmp_path / "staged", monkeypatch)
    built.clear()
    assert preload_tasks([bench], Manager()) == {"MathVerse": 2}
    assert built == ["vade_mathverse_testmini", "vade_mathverse_testmini_cot"]
