"""The whole tiny pipeline, end to end through Snakemake on CPU, then its rerun behaviour.

The run of ``config/tiny.yaml`` at smoke scale is the session's shared one (the ``smoke_pipeline``
fixture, ``smoke_pipeline.py``: built once per test run, in a clean copy of the repository; the
checkout's own data/, results/ and reports/ are never touched): data -> tiny model -> initial
difficulty -> 6 training runs -> 7 evaluations (on CPU, one job runs a checkpoint's repeats) ->
report, plus the sampler lab. Then, against that completed run: nothing to do when nothing
changed, nor after moving the whole clone elsewhere; a changed VADE lambda reruns only the VADE
runs and what depends on them, with Snakemake's reason; a changed evaluation setting reruns no
training; and tests that run Snakemake or MLflow, run inside that clone the way ``make test`` runs
them after ``make demo``, pass and leave its outputs as they were.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from output_guard import changed_paths, fingerprint

# smoke_scale is not used here: other test modules import it (and the rest) from this module
from smoke_pipeline import BIN, CONFIG, clone_env, smoke_scale, snakemake, write_config  # noqa: F401

pytestmark = pytest.mark.skipif(not (BIN / "snakemake").exists(),
                                reason="snakemake is not installed")


def on_the_shared_run(test):
    """End to end (``make test --dist loadscope`` keeps a module on one worker: that one waits
    for the build, the others go on)."""
    return pytest.mark.e2e(test)


@pytest.fixture
def completed(smoke_pipeline: Path) -> Path:
    return smoke_pipeline


def scheduled(proc: subprocess.CompletedProcess) -> dict[str, int]:
    out = proc.stdout + proc.stderr
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.MULTILINE)
            if m.group(1) != "total"}


def test_smoke_config_schedules_every_stage(tmp_path: Path) -> None:
    """The smoke config's dry run in a clean copy: every stage the shared run builds, once."""
    from workflow_copy import clean_copy

    clone = clean_copy(tmp_path / "clone")
    proc = snakemake(clone, "-n", "--configfile", str(write_config(clone, "smoke.yaml")))
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {"build_data": 1, "build_model": 1, "init_difficulty": 1,
                               "train": 6, "evaluate": 7, "report": 1,
                               "simulate": 1, "all": 1}


@on_the_shared_run
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


@on_the_shared_run
def test_nothing_to_do_when_nothing_changed(completed: Path) -> None:
    proc = snakemake(completed, "-n", "--configfile", CONFIG)
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {}


@on_the_shared_run
def test_changed_vade_lambda_reruns_only_vade_runs(completed: Path) -> None:
    cfg = write_config(completed, "lambda.yaml", lambda c: c["sampler"].update(lambda1=0.3))
    proc = snakemake(completed, "-n", "--configfile", str(cfg.relative_to(completed)))
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {"train": 2, "evaluate": 2, "report": 1, "all": 1}
    out = proc.stdout + proc.stderr
    reruns = set(re.findall(r"output: results/tiny/runs/([\w.-]+)/done.json", out))
    assert reruns == {"tiny-grpo-vade-s0", "tiny-gspo-vade-s0"}
    assert "Params have changed since last execution" in out
    assert not re.findall(r"vade/[\w/]+\.py", out)  # no source files among inputs or reasons


@on_the_shared_run
def test_changed_report_code_reruns_only_the_report(completed: Path, tmp_path: Path) -> None:
    """The code version in each rule's params covers the files its verb imports: an edit to the
    report's tables reruns the report, not hours of training (a copy of the run is edited)."""
    from smoke_pipeline import copy_of

    clone = copy_of(completed, tmp_path / "clone")
    tables = clone / "vade" / "report" / "tables.py"
    tables.write_text(tables.read_text() + "\n# an edit\n")
    proc = snakemake(clone, "-n", "--configfile", CONFIG)
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {"report": 1, "all": 1}


@on_the_shared_run
def test_changed_evaluation_setting_reruns_no_training(completed: Path) -> None:
    def edit(c: dict) -> None:
        c["evaluate"]["repeats"] = c["evaluate"].get("repeats", 1) + 1

    cfg = write_config(completed, "eval.yaml", edit)
    proc = snakemake(completed, "-n", "--configfile", str(cfg.relative_to(completed)))
    assert proc.returncode == 0, proc.stderr
    jobs = scheduled(proc)
    assert "train" not in jobs and "init_difficulty" not in jobs
    assert jobs["evaluate"] == 7  # every checkpoint's evaluation (its params changed), and only
    assert set(jobs) == {"evaluate", "report", "all"}


@on_the_shared_run
def test_moved_checkout_reruns_nothing(completed: Path, tmp_path: Path) -> None:
    """Code inputs and the MLflow store are relative to the clone: moving it changes nothing."""
    from smoke_pipeline import copy_of

    moved = copy_of(completed, tmp_path / "elsewhere" / "clone")
    proc = snakemake(moved, "-n", "--configfile", CONFIG)
    assert proc.returncode == 0, proc.stderr
    assert scheduled(proc) == {}
    assert (moved / "results" / "tiny" / "mlflow.db").is_file()


# Inside the completed clone: the guard and the clean copy themselves, a workflow dry run in a
# clean copy of it (the demo's outputs must not come along: the tiny DAG is still whole), a config
# refusal, and MLflow runs in a temporary store. The rest of those modules, and every other
# module, run in the outer session, whose guard covers the same folders of this checkout.
INSIDE_THE_DEMO = (
    "tests/test_hermetic.py",
    "tests/test_workflow.py::test_tiny_config_builds_the_model_and_trains_on_cpu",
    "tests/test_workflow.py::test_bad_config_on_the_command_line_prints_a_short_summary",
    "tests/test_tracking.py::test_rerun_from_step_zero_replaces_the_run_and_evaluation_keeps_its_duration",
)


@on_the_shared_run
def test_make_test_after_the_demo_passes_and_leaves_it_untouched(completed: Path) -> None:
    """``make test`` after ``make demo`` in one clone, for tests that run Snakemake or MLflow.

    Real: the clone's own pytest session (its conftest guard included) over the completed demo's
    outputs, on the tests in ``INSIDE_THE_DEMO``. Not re-run here: the rest of the suite, which
    this outer session's guard covers.
    """
    before = fingerprint(completed)
    assert any(p.startswith("results/tiny/runs/") for p in before)
    env = {**clone_env(), "PYTHONPATH": str(completed)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--budget-s", "0",
         *INSIDE_THE_DEMO], cwd=completed, capture_output=True, text=True, timeout=1800, env=env,
        check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert re.search(r"\b6 passed\b", proc.stdout), proc.stdout[-2000:]  # nothing deselected
    assert changed_paths(before, fingerprint(completed)) == []
