"""The built data's longest prompt against ``train.verl.max_prompt_length`` in `vade plan` and
`vade preflight --stage train`.

Real: the shipped paper config, the bill and preflight code, the CLI. Stand-in: the data's
``manifest.json``, written here with the ``prompt_tokens`` entry `vade build-data` records
(tests/test_prompt_tokens.py checks how it is counted), and a free-disk function.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import yaml

from vade.cli import main
from vade.cluster.bill import make_bill
from vade.cluster.preflight import run_checks

LONGEST = 1283


@pytest.fixture(scope="module")
def paper() -> dict:
    with open("config/config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def _data(root: Path, longest: int = LONGEST, mean: float = 450.5,
          processor: str = "Qwen/Qwen2.5-VL-{}-Instruct") -> Path:
    """``<root>/data/paper`` with a manifest as build-data writes it."""
    entry = {"max": longest, "p99": 1100, "p50": 400, "mean": mean, "rows": 9471,
             "longest": "geo3k:17", "processor_sha256": "x"}
    d = root / "data" / "paper"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"prompt_tokens": {
        f"qwen2.5-vl-{s.lower()}": {**entry, "processor": processor.format(s)}
        for s in ("3B", "7B")}}))
    return d


def _with(config: dict, **verl) -> dict:
    c = copy.deepcopy(config)
    c["train"]["verl"].update(verl)
    return c


def _room(_: Path) -> float:
    return 1e6


def test_a_limit_below_the_longest_prompt_is_refused_in_one_line(paper, tmp_path, capsys,
                                                                 monkeypatch):
    data = _data(tmp_path)
    with pytest.raises(ValueError) as exc:
        make_bill(_with(paper, max_prompt_length=1024), free_gb=_room, data_dir=data)
    line = str(exc.value)
    assert "\n" not in line
    assert line.startswith("train.verl.max_prompt_length = 1,024 is below the longest prompt "
                           "of the data, 1,283 tokens")
    assert "row geo3k:17" in line and line.endswith("set train.verl.max_prompt_length: 1283")
    # at the longest itself: billed, no refusal
    assert make_bill(_with(paper, max_prompt_length=LONGEST), free_gb=_room, data_dir=data)
    # the CLI, from the folder the workflow runs in (data/<name> under it)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_with(paper, max_prompt_length=1024)))
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--config", str(cfg)]) == 2
    assert "train.verl.max_prompt_length = 1,024 is below" in capsys.readouterr().err


def _vanilla_gpu_h(prompt: float) -> float:
    """One vanilla run's GPU-hours by hand (tests/test_cluster_plan.py's arithmetic), each
    response updated over ``prompt`` + 2048 positions."""
    gen = 240 * 512 * 8 * 2048
    upd = 240 * 512 * 8 * (prompt + 2048)
    val = 25 * 948 * 2048
    work = ((gen + val) / 4000 / 60 + upd / 8000 / 60) / 60
    step = work / 240
    per = math.floor((48 - 20 / 60) / step - 1.5 + 1)
    return 4 * (work + math.ceil(240 / per) * 20 / 60)


def test_padding_far_above_the_longest_prompt_is_priced(paper, tmp_path):
    data = _data(tmp_path)
    bill = make_bill(paper, free_gb=_room, data_dir=data)
    (warn,) = [w for w in bill.warnings if w.startswith("train.verl.max_prompt_length = 8,192")]
    # 8192 + 2048 = 10,240 positions where 1283 + 2048 = 3,331 would do: 3.07x
    assert "computes 10,240 positions per response where 3,331 would do (3.1x)" in warn
    tight = make_bill(_with(paper, max_prompt_length=LONGEST), free_gb=_room, data_dir=data)
    assert (f"train.verl.max_prompt_length: 1283 bills training "
            f"{tight.stage_total('training'):,.1f} GPU-h instead of "
            f"{bill.stage_total('training'):,.1f}") in warn
    vanilla = next(x for x in tight.lines if x.what == "qwen2.5-vl-3b-grpo-vanilla-s0")
    assert vanilla.gpu_hours == pytest.approx(_vanilla_gpu_h(LONGEST))
    # the bill itself stays at what SDPA computes: the padded length
    assert bill.stage_total("training") == make_bill(paper, free_gb=_room).stage_total(
        "training")
    assert not [w for w in tight.warnings if "pads every prompt" in w]
    # within 10% of a response's positions: not worth a line
    near = make_bill(_with(paper, max_prompt_length=LONGEST + 300), free_gb=_room,
                     data_dir=data)
    assert not [w for w in near.warnings if "pads every prompt" in w]


def test_without_padding_the_bill_prices_the_datas_mean_prompt(paper, tmp_path):
    data = _data(tmp_path, mean=450.5)
    flash = _with(paper, attention="flash_attention_2")
    bill = make_bill(flash, free_gb=_room, data_dir=data)
    assumed = copy.deepcopy(flash)
    assumed.setdefault("cluster", {}).setdefault("plan", {})["prompt_tokens"] = 450.5
    assert bill.stage_total("training") == pytest.approx(
        make_bill(assumed, free_gb=_room).stage_total("training"))
    vanilla = next(x for x in bill.lines if x.what == "qwen2.5-vl-7b-grpo-vanilla-s0")
    assert vanilla.gpu_hours == pytest.approx(_vanilla_gpu_h(450.5))
    (mean,) = [a for a in bill.assumptions if a[0] == "mean prompt"]
    assert mean[1] == "qwen2.5-vl-3b 450.5, qwen2.5-vl-7b 450.5"
    assert "manifest.json" in mean[2]
    assert not [w for w in bill.warnings if "pads every prompt" in w]


def test_unknown_or_stale_lengths_are_said_not_guessed(paper, tmp_path):
    none = make_bill(_with(paper, max_prompt_length=1024), free_gb=_room,
                     data_dir=tmp_path / "nowhere")
    (a,) = [x for x in none.assumptions if x[0] == "longest prompt"]
    assert a[1] == "not known" and "is not built yet" in a[2]
    stale = _data(tmp_path, processor="someone/else-{}")
    bill = make_bill(_with(paper, max_prompt_length=1024), free_gb=_room, data_dir=stale)
    (a,) = [x for x in bill.assumptions if x[0] == "longest prompt"]
    assert "counted with someone/else-3B's processor, the config names " \
           "Qwen/Qwen2.5-VL-3B-Instruct (rebuild the data)" in a[2]


def test_preflight_of_training_refuses_and_reports(paper, tmp_path):
    _data(tmp_path)

    def check(config: dict):
        checks = run_checks(config, "train", gpus=0, profile=None, root=tmp_path,
                            importer=lambda name: None, free_gb=_room)
        (c,) = [c for c in checks if c.name == "prompt length"]
        return c

    low = check(_with(paper, max_prompt_length=1024))
    assert not low.ok and low.detail.startswith("train.verl.max_prompt_length = 1,024 is below")
    ok = check(paper)
    assert ok.ok and ok.detail == (
        "the data's longest prompt, 1,283 tokens (qwen2.5-vl-3b's processor), fits "
        "train.verl.max_prompt_length = 8,192; with train.verl.max_prompt_length = 8,192 and "
        "SDPA every pass computes 3.1x the positions it needs (vade plan prices it)")
