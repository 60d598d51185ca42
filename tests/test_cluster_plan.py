"""The whole bill (`vade plan`, a real run with GPU stages) and the GPU layout check at config validation.

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
from vade.cluster.bill import make_bill, split_rows
from vade.cluster.disk import checkpoint_gb, runs_checkpoint_gb
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
    bill = make_bill(paper, free_gb=lambda p: 1e5)   # stand-in: a disk with room
    rows = 9471 - 948
    # initial rollouts: rows x 8 x 2048 tokens at 4000 tokens/s (4 engines on the 4 GPUs), in
    # ceil(8523 / (4096 // 8)) = 17 chunks of 0.57 h; 8 h - 20 min holds 13 of them, so two
    # submissions, each paying the 20 min overhead
    diff_work = rows * 8 * 2048 / 4000 / 3600
    chunk = diff_work / 17
    assert int((8 - 1 / 3) / chunk) == 13
    diff_h = diff_work + 2 * 20 / 60
    assert bill.stage_total("initial rollouts") == pytest.approx(2 * 4 * diff_h)
    # training, vanilla GRPO: 240 steps x 512 x 8 responses of 2048 tokens generated,
    # (8192 + 2048) positions each updated at 8000/s (SDPA: verl 0.7.1 removes padding only with
    # flash-attn, so every prompt is left-padded to max_prompt_length 8192; main priced a
    # 1024-token mean prompt, half the real compute), validation 1 + 24 passes x 948 x 2048
    gen = 240 * 512 * 8 * 2048
    upd = 240 * 512 * 8 * (8192 + 2048)
    val = 25 * 948 * 2048
    vanilla_work = ((gen + val) / 4000 / 60 + upd / 8000 / 60) / 60
    dapo_work = ((3 * gen + val) / 4000 / 60 + upd / 8000 / 60) / 60
    # steps per 48 h submission: it stops after step j once 47 h 40 min - j x step < 1.5 steps
    # vanilla: 2.053 h steps -> 22 steps, 11 submissions; DAPO: 3.218 h (193.1 min) -> 14, 18
    assert (round(vanilla_work / 240, 3), round(dapo_work / 240 * 60, 1)) == (2.053, 193.1)
    vanilla_h = vanilla_work + 11 / 3
    dapo_h = dapo_work + 18 / 3
    lines = {x.what: x for x in bill.lines if x.stage == "training"}
    assert lines["qwen2.5-vl-7b-grpo-vanilla-s0"].hours == pytest.approx(vanilla_h)
    assert lines["qwen2.5-vl-7b-grpo-vanilla-s0"].submissions == 11
    assert lines["qwen2.5-vl-3b-gspo-dapo-s0"].hours == pytest.approx(dapo_h)
    assert lines["qwen2.5-vl-3b-gspo-dapo-s0"].submissions == 18
    assert "14 of 240 steps per submission" in lines["qwen2.5-vl-3b-gspo-dapo-s0"].note
    assert "update positions = 10,240 per response" in bill.text()
    # with flash-attn, padding removal: the assumed 1024-token mean prompt again
    fa = copy.deepcopy(paper)
    fa["train"]["verl"]["attention"] = "flash_attention_2"
    fa_lines = {x.what: x for x in make_bill(fa, free_gb=lambda p: 1e5).lines}
    fa_upd = 240 * 512 * 8 * (1024 + 2048)
    assert fa_lines["qwen2.5-vl-7b-grpo-vanilla-s0"].hours == pytest.approx(
        ((gen + val) / 4000 / 60 + fa_upd / 8000 / 60) / 60 + 6 / 3)
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
    # the shipped layout fits and leaves no GPU idle; its datasets wait for their pins
    # (the first prefetch writes them: test_cluster_lock.py)
    assert [w.split(":")[0] for w in bill.warnings] == ["data.paper.require_pinned"]


def test_bill_names_each_assumption_with_its_source(paper, capsys):
    assert main(["plan", "--config", "config/config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "cluster.plan.rollout_tokens_per_s = 4000: default, assumed" in out
    assert "(set cluster.plan.rollout_tokens_per_s)" in out
    assert "train rows = 8,523: data.paper.tasks split by data.val_fraction" in out
    assert "15 training job(s) exceed resources.train.runtime (48 h) in the worst case: up to " \
           "18 submissions each" in out
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
                                                "difficulty.tensor_parallel_size = 1"),
    ({"resources": {"difficulty": {"gpu": 3}}, "difficulty": {"tensor_parallel_size": 2}},
     "resources.difficulty.gpu = 3 is not a multiple of difficulty.tensor_parallel_size = 2"),
    # 64 attention heads (Qwen2.5-72B-Instruct's config.json) do not split over 3 GPUs
    ({"evaluate": {"judge": {"tensor_parallel_size": 3}}},
     "evaluate.judge.tensor_parallel_size = 3 does not divide Qwen2.5-72B-Instruct's 64 "
     "attention heads"),
    # 28 heads (Qwen2.5-VL-7B) do not split over 8 GPUs
    ({"train": {"verl": {"tensor_model_parallel_size": 8, "n_gpus_per_node": 8}},
      "resources": {"train": {"gpu": 8}}},
     "train.verl.tensor_model_parallel_size = 8 does not divide Qwen2.5-VL-7B-Instruct's 28"),
    ({"cluster": {"plann": {}}}, "config key 'cluster.plann' is unknown"),
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


def test_idle_gpus_are_billed_with_a_warning(paper):
    cfg = copy.deepcopy(paper)
    cfg["resources"]["evaluate"]["gpu"] = 6     # both engines are TP 4: 2 GPUs idle
    bill = make_bill(cfg)
    ev = [x for x in bill.lines if x.stage == "evaluation"][0]
    idle = ev.jobs * ev.hours * 2               # 68 jobs x 3.53 h x 2 GPUs
    assert ev.gpus == 6
    assert any(w.startswith("resources.evaluate.gpu asks for 2 GPU(s) no engine uses") and
               f"{idle:.1f} GPU-h idle" in w for w in bill.warnings)


def test_evaluation_jobs_over_runtime_are_counted_as_jobs(paper):
    cfg = copy.deepcopy(paper)
    cfg["resources"]["evaluate"]["runtime"] = 60    # 3.5 h jobs in 1 h: all 68 of them
    cfg["evaluate"]["plan"] = {"tokens_per_s": 2000}
    from vade.cluster.bill import Line, _over_runtime

    lines = [Line("evaluation", "x", 68, 3.5, 4, 1.0)]
    assert _over_runtime("evaluation", lines)[0].startswith(
        "  ! 68 evaluation job(s) may exceed resources.evaluate.runtime (1 h)")


def test_a_step_longer_than_a_submission_is_named(paper):
    cfg = copy.deepcopy(paper)
    cfg["resources"]["train"]["runtime"] = 120   # 2 h jobs; a DAPO step takes up to 3.2 h
    text = make_bill(cfg).text()
    assert "cannot finish: one step takes up to 3.2 h and needs 1.5x that before " \
           "resources.train.runtime (2 h): raise it" in text


def test_memory_of_table4_micro_batches_is_refused_in_the_bill(paper):
    cfg = copy.deepcopy(paper)
    cfg["train"].pop("verl")                      # Table 4: 16 sequences per GPU
    warnings = make_bill(cfg).warnings
    assert "training memory of qwen2.5-vl-7b: update needs 204.7 GiB per GPU of 75.0 (95% of " \
           "79): set train.verl.ppo_micro_batch_size_per_gpu <= 2" in " ".join(warnings)


def test_checkpoint_disk_from_the_model_size(paper):
    # 7e9 params x (2 kept x 16 B + 2 B final bf16) = 238 GB
    assert checkpoint_gb(paper, "qwen2.5-vl-7b") == pytest.approx(7e9 * 34 / 1e9)


def test_checkpoint_disk_counts_the_runs_that_run_at_once(paper):
    """On main each job checked room for its own run (288 GB); the 15 runs share the disk."""
    # 6 runs of 3B x 102 GB + 9 of 7B x 238 GB = 2,754 GB, + 50 GB kept free
    assert runs_checkpoint_gb(paper) == (pytest.approx(6 * 3e9 * 34 / 1e9 + 9 * 7e9 * 34 / 1e9),
                                         15)
    text = make_bill(paper, free_gb=lambda p: 2000.0).text()
    assert "! checkpoint disk: 15 training runs at once keep 2,804 GB" in text
    assert "2,000 GB free at" in text
    assert "checkpoint disk" not in " ".join(make_bill(paper, free_gb=lambda p: 2805.0).warnings)


def test_gpus_beyond_the_workers_are_billed_idle_not_as_speed(paper):
    """resources.train.gpu: 8 with n_gpus_per_node: 4: main priced DAPO at 8 GPUs' speed (half
    the submissions); 4 GPUs work, so it is the 4-GPU run's 18 submissions, billed on 8 GPUs."""
    cfg = copy.deepcopy(paper)
    cfg["resources"]["train"]["gpu"] = 8
    base = {x.what: x for x in make_bill(paper, free_gb=lambda p: 1e5).lines}
    bill = make_bill(cfg, free_gb=lambda p: 1e5)
    dapo = next(x for x in bill.lines if x.what == "qwen2.5-vl-7b-grpo-dapo-s0")
    assert dapo.submissions == 18 and dapo.gpus == 8
    assert dapo.hours == pytest.approx(base[dapo.what].hours)
    assert dapo.gpu_hours == pytest.approx(2 * base[dapo.what].gpu_hours)
    assert any(w.startswith("resources.train.gpu asks for 4 GPU(s) no engine uses")
               for w in bill.warnings)


def test_every_lines_submissions_are_printed_when_one_cannot_finish(paper):
    """5 h submissions: a DAPO step (3.2 h, 1.5x margin) cannot fit, a vanilla one (2.05 h)
    can, 1 step per submission: 240 submissions. main printed only the DAPO refusal."""
    cfg = copy.deepcopy(paper)
    cfg["resources"]["train"]["runtime"] = 300
    bill = make_bill(cfg, free_gb=lambda p: 1e5)
    text = bill.text()
    assert "  ! 4 training job(s) cannot finish: one step takes up to 3.2 h" in text
    assert "  ! 11 training job(s) exceed resources.train.runtime (5 h) in the worst case: up " \
           "to 240 submissions each (1 of 240 steps per submission" in text
    assert "qwen2.5-vl-7b-grpo-vanilla-s0            1 job(s) x" in text
    assert text.count(", 240 submissions") == 11 and text.count(", cannot finish") == 4
    assert bill.retries("training") == 239


def test_retries_come_from_the_bill(paper):
    bill = make_bill(paper, free_gb=lambda p: 1e5)
    # worst case DAPO: 18 submissions, the first and 17 retries; initial rollouts 2
    assert (bill.retries("training"), bill.retries("initial rollouts")) == (17, 1)
    assert "the workflow sets rule train's Snakemake retries to 17" in bill.text()


@pytest.mark.e2e
@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed")
def test_dry_runs_refuse_a_short_gpu_layout_and_leave_the_bill_to_vade_plan(tmp_path, paper):
    repo = clean_copy(tmp_path / "repo")
    proc = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--profile", "slurm"], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    # every GPU job starts with its preflight, whose findings land in the rule's log
    assert out.count("python -m vade preflight --stage train --no-profile --model") == 15
    assert out.count("python -m vade preflight --stage evaluate") == 68
    assert out.count("python -m vade preflight --stage difficulty") == 2
    # the bill is printed when GPU jobs start, not on a dry run (vade plan prints it on demand)
    assert "bill of config" not in out
    bad = copy.deepcopy(paper)
    bad["resources"]["evaluate"]["gpu"] = 2
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    proc = subprocess.run([str(SNAKEMAKE), "-n", "--configfile", str(path)], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "resources.evaluate.gpu = 2 but evaluate.policy.tensor_parallel_size = 4" in (
        proc.stdout + proc.stderr)
    # a NaN lr: refused by the schema's check (finite numbers only), one line naming the key,
    # before the bill's arithmetic could meet it
    bad = copy.deepcopy(paper)
    bad["train"]["lr"] = float("nan")
    path.write_text(yaml.safe_dump(bad))
    proc = subprocess.run([str(SNAKEMAKE), "-n", "--configfile", str(path)], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "config key 'train.lr' must be a number, got nan" in out
    assert "bill.py" not in out and "Traceback" not in out


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
    assert "bill of config" not in out  # a CPU config has no GPU-hours to bill
