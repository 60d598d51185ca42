"""The whole tiny pipeline, end to end through Snakemake on CPU, then its rerun behaviour.

One module-scoped run of ``config/tiny.yaml`` at smoke scale (the same stages, models, methods and
algorithms; fewer rows, warm-start and training steps, so CI stays well inside its time) in a clean
copy of the repository (a fresh clone's files; the checkout's own data/, results/ and reports/ are
never touched): data -> tiny model -> initial difficulty -> 6 training runs -> 7 evaluations (one job per repeat, then a merge) ->
report, plus the sampler lab. Then, against that completed run:
nothing to do when nothing changed, nor after moving the whole clone elsewhere; a changed VADE
lambda reruns only the VADE runs and what depends on them, with Snakemake's reason; a changed
evaluation setting reruns no training; and the tests that run Snakemake or MLflow, run inside that
clone the way ``make test`` runs them after ``make demo``, pass and leave its outputs as they were.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from conftest import changed_paths, fingerprint
from workflow_copy import clean_copy

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (BIN / "snakemake").exists(), reason="snakemake is not installed"),
]


def clone_env() -> dict[str, str]:
    """A user's shell in the clone: the venv on PATH, offline, no MLflow URI of the tests' own."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "WANDB_MODE": "disabled"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def snakemake(workdir: Path, *args: str, timeout: int = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "snakemake"), *args], cwd=workdir, capture_output=True,
                          text=True, timeout=timeout, env=clone_env())


def smoke_scale(cfg: dict) -> None:
    cfg["data"]["synthetic"].update(train=96, val=16, warmstart=256, eval=8)
    cfg["models"]["tiny"]["warm_start"].update(steps=20)
    cfg["train"].update(steps=4, batch_size=8, val_every=2, checkpoint_every=2)
    cfg["evaluate"].update(repeats=1)
    cfg["simulate"]["quick"] = True


def write_config(workdir: Path, name: str, edit=None) -> Path:
    cfg = yaml.safe_load((ROOT / "config" / "tiny.yaml").read_text())
    smoke_scale(cfg)
    if edit is not None:
        edit(cfg)
    path = workdir / "config" / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def completed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = clean_copy(tmp_path_factory.mktemp("pipeline") / "clone")
    write_config(workdir, "smoke.yaml")
    proc = snakemake(workdir, "--cores", "2", "--configfile", "config/smoke.yaml")
    if proc.returncode != 0:
        logs = "\n".join(f"== {p}\n{p.read_text()[-3000:]}"
                         for p in sorted((workdir / "logs").rglob("*.log")))
        pytest.fail(f"tiny pipeline failed:\n{proc.stderr[-6000:]}\n{logs}")
    return workdir


def scheduled(proc: subprocess.CompletedProcess) -> dict[str, int]:
    out = proc.stdout + proc.stderr
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.MULTILINE)
            if m.group(1) != "total"}


def test_pipeline_writes_every_stage(completed: Path) -> None:
    results = completed / "results" / "tiny"
    runs = sorted(p.name for p in (results / "runs").iterdir() if (p / "done.json").exists())
    assert runs == sorted(f"tiny-{a}-{m}-s0" for a in ("grpo", "gspo")
                          for m in ("vanilla", "dapo", "vade"))
    # what the smoke config implies: 4 steps of B = 8 prompts x G = 8 rollouts, validation before
    # training and every 2 steps; DAPO may stop early at its rollout cap (3 x 4 x 8 x 8)
    for run in runs:
        done = json.loads((results / "runs" / run / "done.json").read_text())
        con = duckdb.connect(str(results / "runs" / run / "history.duckdb"), read_only=True)
        steps = con.execute("SELECT count(*), sum(rollouts) FROM steps").fetchone()
        events, = con.execute("SELECT count(*) FROM events").fetchone()
        con.close()
        assert steps == (done["steps"], done["rollouts_cumulative"]), run
        if "-dapo-" in run:
            assert done["steps"] == 4 or done["stopped_by"] == "rollout_cap", run
            assert 4 * 64 <= done["rollouts_cumulative"] <= 3 * 4 * 64, run
            continue
        assert (done["steps"], done["stopped_by"], steps, events) == (
            4, "completed", (4, 4 * 64), 4 * 8), run
        assert sorted(done["val_acc"], key=int) == ["0", "2", "4"], run
    assert sorted(p.name for p in (results / "eval").glob("*.duckdb")) == sorted(
        [f"{r}.duckdb" for r in runs] + ["tiny-base.duckdb"])
    report = completed / "reports" / "tiny" / "report.md"
    assert report.stat().st_size > 0
    assert any((completed / "reports" / "tiny" / "figures").glob("*.png"))
    assert (completed / "reports" / "tiny" / "simulate" / "sim_summary.csv").exists()


def test_nothing_to_do_when_nothing_changed(completed: Path) -> None:
    proc = snakemake(completed, "-n", "--configfile", "config/smoke.yaml")
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {}


def test_changed_vade_lambda_reruns_only_vade_runs(completed: Path) -> None:
    cfg = write_config(completed, "lambda.yaml", lambda c: c["sampler"].update(lambda1=0.3))
    proc = snakemake(completed, "-n", "--configfile", str(cfg.relative_to(completed)))
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {"train": 2, "evaluate_repeat": 2, "evaluate": 2, "report": 1,
                               "all": 1}
    out = proc.stdout + proc.stderr
    reruns = set(re.findall(r"output: results/tiny/runs/([\w.-]+)/done.json", out))
    assert reruns == {"tiny-grpo-vade-s0", "tiny-gspo-vade-s0"}
    assert "Params have changed since last execution" in out


def test_changed_evaluation_setting_reruns_no_training(completed: Path) -> None:
    def edit(c: dict) -> None:
        c["evaluate"]["repeats"] = c["evaluate"].get("repeats", 1) + 1

    cfg = write_config(completed, "eval.yaml", edit)
    proc = snakemake(completed, "-n", "--configfile", str(cfg.relative_to(completed)))
    assert proc.returncode == 0, proc.stderr
    jobs = scheduled(proc)
    assert "train" not in jobs and "init_difficulty" not in jobs
    assert jobs["evaluate"] == 7  # the merges; every repeat job reruns (params) and r1 is new
    assert jobs["evaluate_repeat"] == 14


def test_moved_checkout_reruns_nothing(completed: Path, tmp_path: Path) -> None:
    """Code inputs and the MLflow store are relative to the clone: moving it changes nothing."""
    moved = tmp_path / "elsewhere" / "clone"
    shutil.copytree(completed, moved, symlinks=True)  # copy2: modification times kept
    proc = snakemake(moved, "-n", "--configfile", "config/smoke.yaml")
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {}
    assert (moved / "results" / "tiny" / "mlflow.db").is_file()


def test_make_test_after_the_demo_passes_and_leaves_it_untouched(completed: Path) -> None:
    """``make test`` after ``make demo`` in one clone, for the tests that run Snakemake or MLflow.

    Real: the clone's own pytest session (its conftest guard included) over the completed demo's
    outputs. Not re-run here: the rest of the suite, which this outer session's guard covers.
    """
    before = fingerprint(completed)
    assert any(p.startswith("results/tiny/runs/") for p in before)
    env = {**clone_env(), "PYTHONPATH": str(completed)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_workflow.py",
         "tests/test_tracking.py", "tests/test_eval.py"],
        cwd=completed, capture_output=True, text=True, timeout=1800, env=env)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert changed_paths(before, fingerprint(completed)) == []
