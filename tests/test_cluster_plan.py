"""The whole bill (`vade plan`, every dry run) and the GPU layout check at config validation.

Pure arithmetic on the shipped configs (nothing stands in): each number is recomputed here by hand
from the config's sizes and the named rates; the refusals are the config checks themselves, and
the dry runs are real Snakemake dry runs on a clean copy of the repository.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_copy import clean_copy

from vade.cli import main
from vade.cluster.bill import checkpoint_gb, make_bill, split_rows
from vade.cluster.resources import check_gpu_resources

SNAKEMAKE = Path(sys.executable).with_name("snakemake")


@pytest.fixture(scope="module")
def paper() -> dict:
    with open("config/config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_paper_split_rows_follow_the_stratified_split(paper):
    train, val, _ = split_rows(paper)
    # floor(0.1 * n + 0.5) per task: 80+178+32+50+192+35+96+22+23+130+110 = 948
    assert (train, val) == (9471 - 948, 948)


def test_paper_bill_by_hand(paper):
    bill = make_bill(paper)
    rows = 9471 - 948
    # initial rollouts: rows x 8 x 2048 tokens at 4000 tokens/s + 20 min, on 4 GPUs, two models
    diff_h = (rows * 8 * 2048 / 4000 / 60 + 20) / 60
    assert bill.stage_total("initial rollouts") == pytest.approx(2 * 4 * diff_h)
    # training, vanilla GRPO: 240 steps x 512 x 8 responses of 2048 tokens generated,
    # (1024 + 2048) tokens each updated at 8000/s, validation 1 + 24 passes x 948 x 2048 tokens
    gen = 240 * 512 * 8 * 2048
    upd = 240 * 512 * 8 * (1024 + 2048)
    val = 25 * 948 * 2048
    vanilla_h = ((gen + val) / 4000 / 60 + upd / 8000 / 60 + 20) / 60
    dapo_h = ((3 * gen + val) / 4000 / 60 + upd / 8000 / 60 + 20) / 60
    lines = {x.what: x for x in bill.lines if x.stage == "training"}
    assert lines["qwen2.5-vl-7b-grpo-vanilla-s0"].hours == pytest.approx(vanilla_h)
    assert lines["qwen2.5-vl-3b-gspo-dapo-s0"].hours == pytest.approx(dapo_h)
    assert len(lines) == 15
    assert bill.stage_total("training") == pytest.approx(4 * (11 * vanilla_h + 4 * dapo_h))
    # evaluation: 17 checkpoints x 4 repeats x 278.83 min x 4 GPUs (vade evaluate --plan); 13,701
    # items per repeat: MathVerse's whole testmini (3,940, evaluate.mathverse_subset's default)
    # twice (its query_wo number and its CoT companion) + 1,000 + 304 + 2,017 + 2,500
    eval_h = (45 + 13701 * 2048 / 2000 / 60) / 60
    assert bill.stage_total("evaluation") == pytest.approx(17 * 4 * eval_h * 4)
    assert bill.total == pytest.approx(bill.stage_total("initial rollouts")
                                       + bill.stage_total("training")
                                       + bill.stage_total("evaluation"))


def test_bill_names_each_assumption_with_its_source(paper, capsys):
    assert main(["plan", "--config", "config/config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "cluster.plan.rollout_tokens_per_s = 4000: default, assumed" in out
    assert "(set cluster.plan.rollout_tokens_per_s)" in out
    assert "train rows = 8,523: data.paper.tasks split by data.val_fraction" in out
    assert "15 training job(s) may exceed resources.train.runtime (48 h)" in out
    mine = copy.deepcopy(paper)
    mine["cluster"] = {"plan": {"rollout_tokens_per_s": 8000}}
    text = make_bill(mine).text()
    assert "cluster.plan.rollout_tokens_per_s = 8000: cluster.plan.rollout_tokens_per_s in the " \
           "config" in text
    assert make_bill(mine).stage_total("training") < make_bill(paper).stage_total("training")


def test_tiny_config_bills_no_gpu_hours():
    with open("config/tiny.yaml", encoding="utf-8") as f:
        tiny = yaml.safe_load(f)
    bill = make_bill(tiny)
    assert "no stage asks for GPUs" in bill.text()
    assert bill.total == 0


@pytest.mark.parametrize("edit, key", [
    ({"resources": {"evaluate": {"gpu": 2}}}, "resources.evaluate.gpu = 2 but "
                                              "evaluate.policy.tensor_parallel_size = 4"),
    ({"evaluate": {"policy": {"tensor_parallel_size": 1}}, "resources": {"evaluate": {"gpu": 2}}},
     "resources.evaluate.gpu = 2 but evaluate.judge.tensor_parallel_size = 4"),
    ({"resources": {"train": {"gpu": 2}}}, "resources.train.gpu = 2 but "
                                           "train.verl.n_gpus_per_node = 4"),
    ({"resources": {"difficulty": {"gpu": 0}}}, "resources.difficulty.gpu = 0 but "
                                                "difficulty.engine = 1"),
    ({"cluster": {"plann": {}}}, "unknown key 'cluster.plann'"),
])
def test_gpu_layout_below_tensor_parallel_is_refused_naming_the_keys(paper, edit, key):
    cfg = copy.deepcopy(paper)
    for name, sub in edit.items():
        for k, v in sub.items():
            target = cfg.setdefault(name, {})
            target[k] = {**target.get(k, {}), **v} if isinstance(v, dict) else v
    with pytest.raises(ValueError) as err:
        check_gpu_resources(cfg)
        make_bill(cfg)
    assert key in str(err.value)


def test_checkpoint_disk_from_the_model_size(paper):
    # 7e9 params x (2 kept x 16 B + 2 B final bf16) = 238 GB
    assert checkpoint_gb(paper, "qwen2.5-vl-7b") == pytest.approx(7e9 * 34 / 1e9)


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed")
def test_dry_runs_print_the_bill_and_refuse_a_short_gpu_layout(tmp_path, paper):
    repo = clean_copy(tmp_path / "repo")
    proc = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--profile", "slurm"], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    # every GPU job starts with its preflight, whose findings land in the rule's log
    assert out.count("python -m vade preflight --stage train --no-profile --model") == 15
    assert out.count("python -m vade preflight --stage evaluate") == 68
    assert out.count("python -m vade preflight --stage difficulty") == 2
    assert "bill of config paper: GPU-hours" in out
    assert "evaluation        17 checkpoints x 4 repeats" in out
    assert "TOTAL" in out
    bad = copy.deepcopy(paper)
    bad["resources"]["evaluate"]["gpu"] = 2
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    proc = subprocess.run([str(SNAKEMAKE), "-n", "--configfile", str(path)], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "resources.evaluate.gpu = 2 but evaluate.policy.tensor_parallel_size = 4" in (
        proc.stdout + proc.stderr)


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed")
def test_cpu_demo_jobs_run_no_preflight(tmp_path):
    """The tiny config's jobs have no GPU: their commands are what they were (no preflight)."""
    repo = clean_copy(tmp_path / "repo")
    proc = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--configfile", "config/tiny.yaml"],
                          cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert "python -m vade train --config-json" in out
    assert "vade preflight" not in out
    assert "bill of config tiny: no stage asks for GPUs" in out
