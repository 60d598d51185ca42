"""The Snakemake workflow's DAG, resources and config checks, through real dry runs (no sbatch, no GPU).

The paper config must expand to Table 1 (2 models x 2 algorithms x 3 methods) plus the Table 2
ablations (3 on 7B GRPO): 15 training runs, each asking SLURM for 4 GPUs on one node, 17
evaluations (15 runs + 2 base models), each four GPU jobs (one per repeat) and a CPU merge, and one
report. A malformed config must stop Snakemake before
any job, with the schema's message naming the key.

Every dry run works in a clean copy of the repository (``workflow_copy.clean_copy``), so what a
user's own ``make demo`` left in the checkout neither changes the expected DAG nor gets touched.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_copy import clean_copy

SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone's files, with no pipeline outputs."""
    return clean_copy(tmp_path_factory.mktemp("repo"))


def dry_run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SNAKEMAKE), "-n", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)


def job_counts(output: str) -> dict[str, int]:
    table = output.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.MULTILINE)}


def jobs_of(output: str, rule: str) -> list[str]:
    """The dry run's text block of every job of ``rule``."""
    blocks = re.split(r"\n(?=\[[^\]]+\]\n|rule \w+:)", output)
    return [b for b in blocks if b.lstrip().startswith(f"rule {rule}:")]


def resources_of(block: str) -> dict[str, str]:
    line = next(ln for ln in block.splitlines() if ln.strip().startswith("resources:"))
    pairs = line.split("resources:", 1)[1].split(", ")
    return dict(p.strip().split("=", 1) for p in pairs)


@pytest.fixture(scope="module")
def paper_dry_run(repo: Path) -> str:
    proc = dry_run(repo, "--profile", "slurm")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout + proc.stderr


def test_paper_config_expands_to_tables_1_and_2(paper_dry_run: str) -> None:
    counts = job_counts(paper_dry_run)
    assert counts["train"] == 15
    assert counts["evaluate"] == 17  # the merge of each checkpoint's repeats
    assert counts["evaluate_repeat"] == 17 * 4  # one job per (checkpoint, repeat)
    assert counts["report"] == 1
    assert counts["init_difficulty"] == 2  # one per base model
    assert "build_model" not in counts  # pretrained models are not built


def test_every_paper_training_job_asks_for_four_gpus_on_one_node(paper_dry_run: str) -> None:
    blocks = jobs_of(paper_dry_run, "train")
    assert len(blocks) == 15
    runs = set()
    for block in blocks:
        res = resources_of(block)
        assert res["gpu"] == "4" and res["cpus_per_gpu"] == "8"
        assert res["nodes"] == "1" and res["tasks_per_gpu"] == "0"
        assert res["slurm_partition"] == "your-gpu-partition"  # the profile's set-resources
        assert res["slurm_account"] == "your-account"
        runs.add(re.search(r"output: (\S+)", block).group(1))
    ablations = {r for r in runs if re.search(r"-(symmetric|greedy|last-update)-", r)}
    assert len(runs) == 15 and len(ablations) == 3
    assert all("qwen2.5-vl-7b-grpo-" in r for r in ablations)


def test_training_params_hold_only_what_the_method_reads(paper_dry_run: str) -> None:
    """A VADE lambda is in VADE-family runs' params only, the DAPO cap in DAPO runs' only."""
    for block in jobs_of(paper_dry_run, "train"):
        method = re.search(r"method=([\w-]+)", block).group(1)
        cmd = block.split("--config-json", 1)[1]
        assert ('"lambda1"' in cmd) == (method in {"vade", "symmetric", "greedy", "last-update"})
        assert ('"max_rollout_factor"' in cmd) == (method == "dapo")
        algorithm = re.search(r"algorithm=(\w+)", block).group(1)
        other = {"grpo": "gspo", "gspo": "grpo"}[algorithm]
        assert f'"{other}"' not in cmd


def test_tiny_config_builds_the_model_and_trains_on_cpu(repo: Path) -> None:
    proc = dry_run(repo, "-p", "--configfile", "config/tiny.yaml")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["build_model"] == 1 and counts["train"] == 6 and counts["evaluate"] == 7
    # the code a job runs is a params value (its version), not ~100 source files as inputs: the
    # dry run's jobs list only data, models and configs
    inputs = re.findall(r"^\s+input: (.*)$", out, flags=re.MULTILINE)
    assert inputs and not [i for i in inputs if ".py" in i], inputs
    assert "bill of config" not in out  # a dry run prints no bill (vade plan does)
    assert re.search(r"--config-json .* --backend local", out)  # -p: the command, unchanged
    for block in jobs_of(out, "train"):
        assert "gpu=" not in block.split("resources:", 1)[1].splitlines()[0]
    # CPU evaluation: one job runs a checkpoint's repeats (tiny.yaml: 2) in one process, into
    # the checkpoint's file; no job per repeat, no merge
    assert "evaluate_repeat" not in counts
    for block in jobs_of(out, "evaluate"):
        run = re.search(r"wildcards: run=([\w.-]+)", block).group(1)
        cmd = block.split("Shell command:", 1)[1]
        assert "gpu=" not in block.split("resources:", 1)[1].splitlines()[0]
        assert f"output: results/tiny/eval/{run}.duckdb" in block
        assert "--repeat" not in cmd and "--merge" not in cmd, block


REFUSALS = {  # case -> (edit of tiny.yaml, what the message must name)
    "typo-key": (lambda c: c["sampler"].update(lamda1=0.2), "lamda1"),
    "lambda-out-of-range": (lambda c: c["sampler"].update(lambda1=1.5), "lambda1"),
    "unknown-method": (lambda c: c["experiments"]["grid"][0]["methods"].append("dapoo"), "dapoo"),
    "one-rollout": (lambda c: c["difficulty"].update(rollouts=1), "rollouts"),
    "typo-section": (lambda c: c.update(traning={}), "traning"),
    "train-typo": (lambda c: c["train"].update(learning_rate=1e-3), "learning_rate"),
    "train-one-rollout": (lambda c: c["train"].update(rollouts_per_prompt=1),
                          "rollouts_per_prompt"),
    "bad-loss-mode": (lambda c: c["train"].setdefault("gspo", {}).update(loss_agg_mode="mean"),
                      "mean"),
    "block-steps-zero": (lambda c: c["experiments"]["grid"][0].update(steps=0),
                         "config key 'experiments.grid[0].steps' must be an integer >= 1, got 0"),
    # before: ".." passed and planned data/../train.parquet; 10 MB was refused after the model
    # loaded, in a 10 MB line (issue 49). 1 MB here: the same cut of the line, a tenth of the
    # YAML parsing (the CLI test takes the 10 MB one, as JSON)
    "name-dot-dot": (lambda c: c.update(name=".."), "config key 'name' must match ^[A-Za-z0-9_-]"),
    "name-1-mb": (lambda c: c.update(name="x" * 1_000_000),
                  "config key 'name' must match ^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$, got 'xxxx"),
    "run-in-two-blocks-with-different-steps": (
        lambda c: c["experiments"]["grid"].append({**c["experiments"]["grid"][0], "steps": 7}),
        "different steps (None and 7)"),
}


def bad_config(repo: Path, folder: Path, case: str) -> Path:
    cfg = yaml.safe_load((repo / "config" / "tiny.yaml").read_text())
    REFUSALS[case][0](cfg)
    path = folder / f"{case}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def key_twice_config(repo: Path, folder: Path) -> Path:
    """Snakemake's YAML reader keeps the last of two equal keys; the workflow refuses them."""
    text = (repo / "config" / "tiny.yaml").read_text()
    path = folder / "twice.yaml"
    path.write_text(text.replace("\ntrain:\n", "\ntrain:\n  steps: 3\n", 1))
    return path


@pytest.fixture(scope="module")
def refusals(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every bad config read by the workflow in one process, through Snakemake's API
    (``snakemake_probe.py``): the refusal is raised while the workflow is read, so one start for
    the family proves what one start per case did. ``tiny.yaml`` itself is read too, as the
    control that the probe accepts a good config."""
    folder = tmp_path_factory.mktemp("bad-configs")
    files = {case: bad_config(repo, folder, case) for case in REFUSALS}
    files["key-twice"] = key_twice_config(repo, folder)
    files["good"] = repo / "config" / "tiny.yaml"
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("snakemake_probe.py")),
                           str(repo), *map(str, files.values())], capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    by_file = {r["configfile"]: r for r in map(json.loads, proc.stdout.splitlines())}
    return {case: by_file[str(path.resolve())] for case, path in files.items()}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_bad_config_fails_at_start_naming_the_key(refusals: dict[str, dict], case: str) -> None:
    result = refusals[case]
    assert not result["ok"]  # refused while reading the workflow: no DAG, no job
    assert result["error"].startswith("config ") and REFUSALS[case][1] in result["error"]
    assert len(result["error"].splitlines()) == 1, result  # not the schema and config (484 lines)
    assert len(result["error"]) < 600, result["error"][:600]  # nor a 10 MB value


def test_a_key_given_twice_fails_at_start_naming_it(refusals: dict[str, dict]) -> None:
    assert not refusals["key-twice"]["ok"]
    assert "key 'steps' is given twice" in refusals["key-twice"]["error"]
    assert refusals["good"] == {**refusals["good"], "ok": True, "error": ""}


def test_bad_config_on_the_command_line_prints_a_short_summary(repo: Path,
                                                                tmp_path: Path) -> None:
    """The family's one real ``snakemake`` start: what a user sees is the one-line reason."""
    proc = dry_run(repo, "--configfile", str(bad_config(repo, tmp_path, "typo-key")))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config " in out and "lamda1" in out
    assert "Job stats" not in out  # stopped before scheduling anything
    assert len(out.strip().splitlines()) <= 4, out  # a summary, not the schema and config (484)


@pytest.mark.e2e
def test_lint_is_clean(repo: Path) -> None:
    proc = subprocess.run([str(SNAKEMAKE), "--lint"], cwd=repo, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_profile_sits_where_profile_slurm_finds_it(repo: Path) -> None:
    profile = yaml.safe_load((repo / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert profile["rerun-incomplete"] is True
    assert "cpus_per_task" not in profile["default-resources"]  # would override every rule


class _Resources(dict):
    """The attribute-and-get access the SLURM plugin uses on ``job.resources``."""

    __getattr__ = dict.__getitem__


def test_sbatch_command_of_a_training_job_is_one_task_on_one_node(paper_dry_run: str) -> None:
    """The SLURM plugin's own submit-string builder on a dry-run training job's resources.

    Real: snakemake-executor-plugin-slurm's ``get_submit_command``. Stand-in: the job object (only
    its resources and threads), since no sbatch runs here.
    """
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.submit_string import get_submit_command

    res = _Resources({k: int(v) if v.isdigit() else v
                      for k, v in resources_of(jobs_of(paper_dry_run, "train")[0]).items()})
    job = SimpleNamespace(resources=res, threads=1)
    call = get_submit_command(job, {"run_uuid": "u", "slurm_logfile": "l", "comment_str": "c",
                                    "account": "-A a", "partition": "-p p", "workdir": "w"})
    assert "--nodes=1" in call and "--cpus-per-gpu=8" in call
    assert "--ntasks-per-gpu" not in call  # one process; Ray spreads it over the 4 GPUs


def test_cpu_stages_go_to_the_cpu_partition(paper_dry_run: str) -> None:
    for rule in ("build_data", "report"):
        (block,) = jobs_of(paper_dry_run, rule)
        res = resources_of(block)
        assert res["slurm_partition"] == "your-cpu-partition" and "gpu" not in res
    for block in jobs_of(paper_dry_run, "evaluate"):  # the merge of a checkpoint's repeats
        res = resources_of(block)
        assert res["slurm_partition"] == "your-cpu-partition" and "gpu" not in res


def test_paper_evaluation_is_one_gpu_job_per_checkpoint_and_repeat(paper_dry_run: str) -> None:
    """Four repeats of each of the 17 checkpoints as parallel GPU jobs, each given its runtime
    (its plan is checked against it) and a judge log; one merge per checkpoint over exactly its
    four files."""
    jobs = jobs_of(paper_dry_run, "evaluate_repeat")
    seen = set()
    for block in jobs:
        res = resources_of(block)
        assert res["gpu"] == "4" and res["nodes"] == "1" and res["runtime"] == "720"
        assert res["slurm_partition"] == "your-gpu-partition"
        run, repeat = re.search(r"wildcards: run=([\w.-]+), repeat=(\d+)", block).groups()
        seen.add((run, int(repeat)))
        cmd = block.split("Shell command:", 1)[1]
        assert f"--repeat {repeat} " in cmd and "--runtime-min 720 --gpus 4" in cmd
        assert f"--judge-log logs/paper/evaluate/{run}/r{repeat}.judge.log" in cmd
        assert f"--out results/paper/eval/repeats/{run}/r{repeat}.duckdb" in cmd
    runs = {r for r, _ in seen}
    assert len(runs) == 17 and seen == {(r, i) for r in runs for i in range(4)}
    # the dry run states what each checkpoint's evaluation costs (vade evaluate --plan)
    assert "13,701 items x 4 repeats x 2048 tokens = 112,238,592 tokens" in paper_dry_run
    assert "per job: 278.8 min (runtime 720 min); per checkpoint: 74.4 GPU-hours" in paper_dry_run
    assert "evaluation plan cannot finish" not in paper_dry_run
    for block in jobs_of(paper_dry_run, "evaluate"):
        run = re.search(r"wildcards: run=([\w.-]+)", block).group(1)
        cmd = block.split("Shell command:", 1)[1]
        files = " ".join(f"results/paper/eval/repeats/{run}/r{i}.duckdb" for i in range(4))
        assert f"--merge {files} --out results/paper/eval/{run}.duckdb" in cmd


def test_profile_placeholders_warn_until_replaced(repo: Path, paper_dry_run: str,
                                                  tmp_path: Path) -> None:
    assert "SLURM profile placeholders are still set" in paper_dry_run
    assert "default-resources.slurm_account=your-account" in paper_dry_run
    assert "set-resources.train.slurm_partition=your-gpu-partition" in paper_dry_run
    mine = tmp_path / "repo"
    shutil.copytree(repo, mine)
    profile = mine / "slurm" / "config.yaml"
    text = profile.read_text()
    for placeholder, real in (("your-account", "lab42"), ("your-cpu-partition", "cpu"),
                              ("your-gpu-partition", "a100")):
        text = text.replace(f'"{placeholder}"', f'"{real}"')
    profile.write_text(text)
    proc = dry_run(mine, "--profile", "slurm")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "placeholders are still set" not in out and "slurm_partition=a100" in out


def test_report_reads_the_files_the_rule_names(paper_dry_run: str) -> None:
    """Every history and evaluation file of the grid, by name: never the eval or runs folder,
    so a stale file left there by a removed grid cell is not read."""
    (block,) = jobs_of(paper_dry_run, "report")
    cmd = block.split("Shell command:", 1)[1]
    evals = cmd.split(" --evals ", 1)[1].split(" --samples ", 1)[0].split()
    histories = cmd.split(" --runs ", 1)[1].split(" --evals ", 1)[0].split()
    assert len(evals) == 17 and all(re.fullmatch(r"results/paper/eval/[\w.-]+\.duckdb", e)
                                    for e in evals)
    assert len(histories) == 15 and all(
        re.fullmatch(r"results/paper/runs/[\w.-]+/history\.duckdb", h) for h in histories)
    assert '"evaluate":{"benchmarks":null,"kind":"paper"}' in cmd  # the five default columns


def test_diva_methods_run_in_the_grid_with_initial_difficulty(repo: Path, tmp_path: Path) -> None:
    cfg = yaml.safe_load((repo / "config" / "tiny.yaml").read_text())
    cfg["experiments"]["grid"][0]["methods"] += ["diva", "vade-diva"]
    path = tmp_path / "diva.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = dry_run(repo, "-p", "--configfile", str(path))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    assert job_counts(out)["train"] == 10 and job_counts(out)["evaluate"] == 11
    assert "evaluate_repeat" not in job_counts(out)  # CPU: one job per checkpoint
    diva = [b for b in jobs_of(out, "train") if "-diva-s0" in b]
    assert len(diva) == 4  # grpo/gspo x diva/vade-diva
    for block in diva:
        assert "results/tiny/difficulty/tiny/initial.parquet" in block  # levels start there
        assert '"diva":' in block.split("--config-json", 1)[1]
