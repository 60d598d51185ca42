"""The experiment grid (``vade.grid``): which runs a config asks for and each one's steps.

Everything here is the real code on small hand-written configs; nothing stands in. The bill's
per-run hours for a block that overrides ``train.steps`` are checked against the same run billed
with ``train.steps`` itself set to that length.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from vade.cluster.bill import make_bill
from vade.grid import Cell, cells, run_config
from vade.report.config import expected_runs

ROOT = Path(__file__).resolve().parents[1]


def _config(*blocks: dict, seeds=(0, 1)) -> dict:
    return {"train": {"backend": "local", "steps": 150},
            "experiments": {"seeds": list(seeds), "grid": list(blocks)}}


def test_blocks_expand_in_order_once_each_with_their_steps():
    cfg = _config({"models": ["tiny"], "algorithms": ["grpo"], "methods": ["vade", "dapo"],
                   "steps": 300},
                  {"models": ["tiny"], "algorithms": ["grpo", "gspo"], "methods": ["mopps"]},
                  # a run listed again with the same steps is the same run, listed once
                  {"models": ["tiny"], "algorithms": ["grpo"], "methods": ["dapo"], "steps": 300})
    got = cells(cfg)
    assert [c.run_id for c in got] == [
        "tiny-grpo-vade-s0", "tiny-grpo-vade-s1", "tiny-grpo-dapo-s0", "tiny-grpo-dapo-s1",
        "tiny-grpo-mopps-s0", "tiny-grpo-mopps-s1", "tiny-gspo-mopps-s0", "tiny-gspo-mopps-s1"]
    assert [c.steps for c in got] == [300, 300, 300, 300, None, None, None, None]
    assert expected_runs(cfg) == (*[c.run_id for c in got], "tiny-base")


def test_a_block_may_give_its_runs_more_seeds():
    cfg = _config({"models": ["tiny"], "algorithms": ["grpo"], "methods": ["dapo"]},
                  {"models": ["tiny"], "algorithms": ["grpo"], "methods": ["vade"],
                   "seeds": [0, 1, 2]})
    assert [c.run_id for c in cells(cfg)] == [
        "tiny-grpo-dapo-s0", "tiny-grpo-dapo-s1",
        "tiny-grpo-vade-s0", "tiny-grpo-vade-s1", "tiny-grpo-vade-s2"]


def test_a_run_in_two_blocks_with_different_steps_is_refused_naming_both():
    cfg = _config({"models": ["tiny"], "algorithms": ["grpo"], "methods": ["vade"],
                   "steps": 300},
                  {"models": ["tiny"], "algorithms": ["grpo"], "methods": ["dapo", "vade"]})
    with pytest.raises(ValueError) as err:
        cells(cfg)
    msg = str(err.value)
    assert "experiments.grid[0]" in msg and "experiments.grid[1]" in msg
    assert "tiny-grpo-vade-s0" in msg and "300 and None" in msg


def test_a_malformed_block_is_named():
    cfg = _config({"models": ["tiny"], "algorithms": ["grpo"], "methods": ["vade"]},
                  {"models": ["tiny"], "methods": ["vade"]})
    with pytest.raises(ValueError, match=r"experiments.grid\[1\] is malformed.*algorithms"):
        cells(cfg)


def test_run_config_replaces_steps_and_leaves_the_config_alone():
    cfg = _config({"models": ["tiny"], "algorithms": ["grpo"], "methods": ["vade"]})
    before = copy.deepcopy(cfg)
    longer = run_config(cfg, Cell("tiny", "grpo", "vade", 0, steps=300))
    assert longer["train"] == {"backend": "local", "steps": 300}
    assert run_config(cfg, Cell("tiny", "grpo", "vade", 0)) == cfg
    assert cfg == before


def test_the_bill_charges_each_run_its_own_steps():
    """A 480-step block on the paper config costs what the same runs cost with train.steps=480."""
    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    block = {"models": ["qwen2.5-vl-7b"], "algorithms": ["grpo"], "methods": ["dapo"]}
    longer = copy.deepcopy(paper)
    longer["experiments"]["grid"] = [{**block, "steps": 480}]
    globally = copy.deepcopy(paper)
    globally["experiments"]["grid"] = [block]
    globally["train"]["steps"] = 480
    shorter = copy.deepcopy(globally)
    shorter["train"]["steps"] = paper["train"]["steps"]

    def hours(cfg):
        return {x.what: x.hours for x in make_bill(cfg).lines if x.stage == "training"}

    assert hours(longer) == hours(globally)
    assert hours(longer) != hours(shorter)
    assert list(hours(longer)) == [f"qwen2.5-vl-7b-grpo-dapo-s{s}"
                                   for s in paper["experiments"]["seeds"]]
