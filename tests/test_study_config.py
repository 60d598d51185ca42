"""config/tiny-study.yaml: its design numbers (issue 16), its DAG, and a smoke-scale real run.

The shipped config is checked against what the study must be: >= 5 epochs of the pool per run,
>= 5 seeds, a validation set whose single-score standard error is <= 0.02, the six methods on
GRPO, no sampler lab. A dry run in a clean copy (``workflow_copy.clean_copy``) shows its 30
training runs. Then a real run at smoke scale (2 seeds, 3 steps, tiny data and warm start) of
the VADE and DAPO runs through Snakemake (one of them evaluated), and the workflow's report of the
finished runs: it runs no other job, lists the rest as missing, shows scores only where an
evaluation exists, and its statistics over seeds list both seeds. Everything is real; only the
sizes are small.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from smoke_pipeline import clone_env
from workflow_copy import clean_copy

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STUDY = yaml.safe_load((ROOT / "config" / "tiny-study.yaml").read_text())
METHODS = {"vanilla", "dapo", "vade", "symmetric", "greedy", "last-update"}

needs_snakemake = pytest.mark.skipif(not (BIN / "snakemake").exists(),
                                     reason="snakemake is not installed")


def test_study_numbers_meet_the_design():
    train, data = STUDY["train"], STUDY["data"]["synthetic"]
    epochs = train["steps"] * train["batch_size"] / data["train"]
    assert epochs >= 5
    assert len(STUDY["experiments"]["seeds"]) >= 5
    assert math.sqrt(0.25 / data["val"]) <= 0.02  # worst case p = 0.5
    grid = STUDY["experiments"]["grid"]
    assert {m for b in grid for m in b["methods"]} >= METHODS
    assert all("grpo" in b["algorithms"] for b in grid)
    assert STUDY["simulate"]["enabled"] is False
    # every key the study shares with the demo has the demo's value, except the study's own
    tiny = yaml.safe_load((ROOT / "config" / "tiny.yaml").read_text())
    assert STUDY["models"] == tiny["models"] and STUDY["sampler"] == tiny["sampler"]
    assert {k: v for k, v in STUDY["train"].items() if k not in ("steps", "val_every",
                                                                  "checkpoint_every")} == {
        k: v for k, v in tiny["train"].items() if k not in ("steps", "val_every",
                                                             "checkpoint_every")}


def _snakemake(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "snakemake"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=clone_env(), check=False)


def job_counts(out: str) -> dict[str, int]:
    """Snakemake's "Job stats" table of a dry run: {rule: jobs}."""
    table = out.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {ln.split()[0]: int(ln.split()[1]) for ln in table.splitlines()[3:] if ln.strip()}


@needs_snakemake
def test_study_dry_run_has_thirty_runs(tmp_path):
    repo = clean_copy(tmp_path / "repo")
    proc = _snakemake(repo, "-n", "--configfile", "config/tiny-study.yaml")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["train"] == 30 and counts["evaluate"] == 31 and "simulate" not in counts
    assert "results/tiny-study/runs/tiny-grpo-last-update-s4/done.json" in out


@needs_snakemake
def test_diva_overlay_adds_only_the_diva_runs(tmp_path):
    """config/tiny-study-diva.yaml on top of the study: the same 30 runs plus diva and vade-diva
    for each of the 5 seeds, every other setting the study's (one output folder)."""
    overlay = yaml.safe_load((ROOT / "config" / "tiny-study-diva.yaml").read_text())
    assert set(overlay) == {"experiments"}
    assert overlay["experiments"]["seeds"] == STUDY["experiments"]["seeds"]
    repo = clean_copy(tmp_path / "repo")
    proc = _snakemake(repo, "-n", "--configfile", "config/tiny-study.yaml",
                      "config/tiny-study-diva.yaml")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["train"] == 40 and counts["evaluate"] == 41
    assert "results/tiny-study/runs/tiny-grpo-vade-diva-s4/done.json" in out


@needs_snakemake
def test_report_of_finished_runs_refuses_when_none_has_finished(tmp_path):
    """The finished-runs report and the per-run table for docs/data (rule results_table) read
    the same finished runs: with none, both refuse with one line."""
    repo = clean_copy(tmp_path / "repo")
    for target in ("reports/tiny-study/finished/report.md", "docs/data/tiny-study/runs.csv"):
        proc = _snakemake(repo, "-n", target, "--configfile", "config/tiny-study.yaml")
        assert proc.returncode != 0, target
        assert ("no run of the grid has finished yet (no results/tiny-study/runs/*/done.json)"
                in proc.stdout + proc.stderr), target


@pytest.mark.e2e
@needs_snakemake
def test_study_at_smoke_scale_trains_two_seeds_and_reports_intervals(tmp_path):
    """Four of the grid's 12 runs (6 methods, 2 seeds) trained and one of them evaluated, then
    ``reports/<name>/finished/report.md``: a report of the runs that finished, which runs no other
    job: the unevaluated three show no scores, the other 8 runs show as missing."""
    repo = clean_copy(tmp_path / "repo")
    cfg = yaml.safe_load((repo / "config" / "tiny-study.yaml").read_text())
    cfg["data"]["synthetic"].update(train=32, val=8, warmstart=32, eval=4)
    cfg["models"]["tiny"]["warm_start"].update(steps=2)
    cfg["train"].update(steps=2, batch_size=8, val_every=2, checkpoint_every=0)
    cfg["dapo"]["max_rollout_factor"] = 1.5  # an untrained model: few informative groups
    cfg["experiments"]["seeds"] = [0, 1]
    cfg["evaluate"]["repeats"] = 1
    (repo / "config" / "smoke-study.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    runs = [f"results/tiny-study/runs/tiny-grpo-{m}-s{s}/done.json"
            for m in ("vade", "dapo") for s in (0, 1)]
    proc = _snakemake(repo, *runs, "results/tiny-study/eval/tiny-grpo-vade-s0.duckdb",
                      "--cores", "2", "--configfile", "config/smoke-study.yaml",
                      timeout=1800)  # 8 jobs: 600 s ran out beside a demo (load average 13)
    assert proc.returncode == 0, proc.stderr[-4000:]
    proc = _snakemake(repo, "reports/tiny-study/finished/report.md", "--cores", "2",
                      "--configfile", "config/smoke-study.yaml", timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert job_counts(proc.stdout + proc.stderr) == {"report_finished": 1, "total": 1}
    assert not (repo / "reports" / "tiny-study" / "report.md").exists()
    md = (repo / "reports" / "tiny-study" / "finished" / "report.md").read_text()
    inventory = md.split("## Runs", 1)[1].split("\n## ", 1)[0]
    rows = {ln.split(" | ")[0].lstrip("| "): ln.split(" | ") for ln in inventory.splitlines()
            if ln.startswith("| tiny-")}
    assert len(rows) == 13  # the grid's 12 runs and the base model (not evaluated: missing)
    trained = {f"tiny-grpo-{m}-s{s}" for m in ("vade", "dapo") for s in (0, 1)}
    assert {r for r, row in rows.items() if row[5] == "complete"} == trained
    assert {r for r, row in rows.items() if row[5] == "missing"} == set(rows) - trained
    assert {r for r, row in rows.items() if row[7] != "none"} == {"tiny-grpo-vade-s0"}
    stats = md.split("## Statistics over seeds", 1)[1].split("\n## ", 1)[0]
    rows = {ln.split(" | ")[0].lstrip("| "): ln.split(" | ") for ln in stats.splitlines()
            if ln.startswith("| ")}
    assert rows["vade"][1] == "2" and rows["dapo"][1] == "2"  # both seeds, complete
    assert rows["vade"][2] == "2" and "[" in rows["vade"][3]  # 2 steps; a mean with its interval
    assert "cannot rank" not in stats


@pytest.mark.e2e  # two Snakemake starts
@needs_snakemake
def test_peers_overlay_and_plateau_overlay(tmp_path):
    """config/tiny-study-peers.yaml: the study's seeds and steps, its own outputs, vanilla, DAPO,
    VADE and the four peers (35 runs, MMR1 and SEC after the initial rollouts); the plateau
    overlay on top keeps all 35 runs in the grid (and so in the report) but gives only DAPO and
    VADE 300 steps, in the same outputs."""
    peers = yaml.safe_load((ROOT / "config" / "tiny-study-peers.yaml").read_text())
    assert peers["name"] != STUDY["name"] and "train" not in peers
    assert peers["experiments"]["seeds"] == STUDY["experiments"]["seeds"]
    plateau = yaml.safe_load((ROOT / "config" / "tiny-study-plateau.yaml").read_text())
    assert set(plateau) == {"experiments"}  # train.steps stays the study's 150
    longer, peer_block = plateau["experiments"]["grid"]
    assert longer["methods"] == ["dapo", "vade"] and longer["steps"] == 300
    assert peer_block["methods"] == ["vanilla", "mopps", "greso", "mmr1", "sec"]
    assert "steps" not in peer_block
    repo = clean_copy(tmp_path / "repo")
    base = ["-n", "--configfile", "config/tiny-study.yaml", "config/tiny-study-peers.yaml"]
    proc = _snakemake(repo, *base)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["train"] == 35 and counts["evaluate"] == 36
    for method in ("mopps", "greso", "mmr1", "sec"):
        assert f"results/tiny-study-peers/runs/tiny-grpo-{method}-s4/done.json" in out
    proc = _snakemake(repo, *base, "config/tiny-study-plateau.yaml", "-p")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["train"] == 35
    steps = {}  # run -> the steps in its training command's config
    for cmd in re.findall(r"python -m vade train --config-json (\S+) .*?--method (\S+) "
                          r"--seed (\d+)", out):
        steps[f"{cmd[1]}-s{cmd[2]}"] = json.loads(shlex.split(cmd[0])[0])["train"]["steps"]
    assert len(steps) == 35
    assert {r: n for r, n in steps.items() if n != 150} == {
        f"{m}-s{s}": 300 for m in ("dapo", "vade") for s in range(5)}


def test_fair_race_overlay_states_its_rules_up_front():
    """config/tiny-study-fair.yaml: DAPO to 600 steps on the study's 5 seeds, with the plateau
    rule checked at 300, 450, 600; VADE, vanilla and the two peers closest to VADE at 300 steps
    on as many seeds as the earlier study's paired intervals ask for a 0.02 difference (the
    largest of the three estimates, >= 10); one cost axis; every published peer and named
    variant present."""
    from vade import methods
    from vade.grid import cells
    from vade.report.config import ReportConfig
    from vade.report.stats import paired_sd_from_interval, seeds_to_separate

    fair = yaml.safe_load((ROOT / "config" / "tiny-study-fair.yaml").read_text())
    assert fair["name"] != STUDY["name"] and "train" not in fair
    cfg = ReportConfig.from_dict(fair["report"])
    assert cfg.cost_axis == "all" and cfg.plateau_checks == (300, 450, 600)
    runs = cells({**STUDY, **fair})
    by = {}
    for c in runs:
        by.setdefault(c.method, set()).add((c.seed, c.steps))
    assert by["dapo"] == {(s, 600) for s in range(5)}
    # VADE - vanilla, - SEC, - MMR1 at step 150 over 5 seeds, from the earlier study
    need = max(seeds_to_separate(paired_sd_from_interval(lo, hi, 5), 0.02)
               for lo, hi in ((-0.013, 0.058), (-0.023, 0.060), (-0.024, 0.066)))
    assert need >= 10
    for method in ("vade", "vanilla", "sec", "mmr1"):
        assert by[method] == {(s, 300) for s in range(need)}, method
    # every published peer and the variants of its day (mmr1-stale is what it ran as mmr1)
    assert set(by) == {"dapo", *methods.names_where(chooser="peer"), "vade",
                       "vanilla"} - {"mmr1-stale"}


def test_race_rerun_and_its_controls_are_preregistered_configs():
    """config/tiny-race.yaml (the rerun, 2026-11-28): at least 10 seeds for every method of the
    primary family (VADE, vanilla, DAPO, MoPPS, GRESO, MMR1, SEC), 16 for the four the first race
    ran on 12; DAPO to 600 steps, the others 300; the estimators' grid fixed in the config; the
    controls (vanilla at B = 24, the learning rate 2e-4) on the race's seeds; the regime testbed
    with 10 seeds for VADE, vanilla, DAPO, MoPPS and MMR1."""
    from vade import methods
    from vade.grid import cells
    from vade.report.config import ReportConfig

    def load(name):
        return yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())

    def by_method(overlay):
        out = {}
        for c in cells({**STUDY, **overlay}):
            out.setdefault(c.method, set()).add((c.seed, c.steps))
        return out

    race = load("tiny-race")
    assert ReportConfig.from_dict(race["report"]).rollout_grid == 3840
    by = by_method(race)
    assert by["dapo"] == {(s, 600) for s in range(10)}
    for m in ("vade", "vanilla", "sec", "mmr1"):
        assert by[m] == {(s, 300) for s in range(16)}, m
    for m in ("mopps", "greso"):
        assert by[m] == {(s, 300) for s in range(10)}, m
    assert set(by) == {"dapo", "vade", "vanilla", *methods.names_where(chooser="peer")}
    b24, lr = load("tiny-race-b24"), load("tiny-race-lr2e-4")
    assert b24["train"] == {"batch_size": 24} and by_method(b24) == {
        "vanilla": {(s, 300) for s in range(16)}}
    assert lr["train"] == {"lr": 2.0e-4}
    assert by_method(lr) == {m: {(s, 300) for s in range(10)} for m in ("vanilla", "vade")}
    regime = load("tiny-regime")
    rb = by_method({**regime, "train": {**STUDY["train"], **regime["train"]}})
    assert rb["dapo"] == {(s, 600) for s in range(10)}
    for m in ("vanilla", "vade", "mopps", "mmr1"):
        assert rb[m] == {(s, None) for s in range(10)}, m
    assert regime["train"]["steps"] == 300
