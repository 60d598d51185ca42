"""The smoke pipeline through a real SLURM controller, against the same pipeline run locally.

Real: ``snakemake --profile slurm --profile tests/cluster/profile`` (the project's profile with the
test cluster's site profile on top), the SLURM executor plugin, sbatch/squeue/scontrol, slurmctld
and slurmd scheduling every job on partitions ``cpu`` and ``gpu``, the jobs' own Snakemake
(jobstep executor, srun), the tiny model's data, training, evaluation and report, and an ``mlflow
server`` over HTTP. Stand-in: the four GPUs are placeholder files declared as GRES (SLURM
allocates them; the tiny model runs on the CPU), so the GPU counts sit in the site profile and the
config keeps its CPU resources (a GPU stage would run ``vade preflight``, which looks for real
GPUs).

The config: tests/cluster/pipeline.py (the smoke scale, on the smallest grid that runs every rule).
"""

from __future__ import annotations

import re
import subprocess

import duckdb
import pytest
import yaml
from test_pipeline import scheduled

from vade.store.compare import compare_histories

from .faults import job_states
from .local_slurm import LocalSlurm
from .pipeline import BIN, PROFILE, ROOT, RUNS, SUBMITTED, Runs, through_slurm

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not (BIN / "snakemake").exists(), reason="snakemake is not installed"),
]


def site_resources(rule: str) -> dict:
    """What the site profile asks of SLURM for a rule (its set-resources over its defaults)."""
    profile = yaml.safe_load((ROOT / PROFILE / "config.yaml").read_text())
    return {**profile["default-resources"], **profile["set-resources"].get(rule, {})}


def test_every_job_went_through_sbatch_with_its_partition_and_gres(
        smoke_runs: Runs, slurm_cluster: LocalSlurm) -> None:
    submitted = dict(SUBMITTED.findall(smoke_runs.log))  # Snakemake job id -> SLURM job id
    jobs = scheduled(subprocess.CompletedProcess([], 0, smoke_runs.log, ""))
    expected = sum(n for rule, n in jobs.items() if rule != "all")  # `all` has no command
    # data, model, difficulty, 2 trainings, 3 evaluations (2 runs + base; a CPU config runs a
    # checkpoint's repeats in one job), report
    assert expected == 9 and len(submitted) == expected, (jobs, submitted)
    seen: dict[str, int] = {}
    for slurm_id in submitted.values():
        job = slurm_cluster.job(slurm_id)
        rule = re.match(r"rule_([a-z_]+?)(_wildcards_|$)", job["Comment"]).group(1)
        seen[rule] = seen.get(rule, 0) + 1
        want = site_resources(rule)
        assert job["JobState"] == "COMPLETED", (rule, job)
        assert job["Partition"] == want["slurm_partition"], (rule, job["Partition"])
        assert job["Account"] == want["slurm_account"], (rule, job["Account"])
        gres = f"gres:gpu:{want['gpu']}" if "gpu" in want else None
        assert job.get("TresPerJob") == gres, (rule, job.get("TresPerJob"))
    assert seen == {r: n for r, n in jobs.items() if r != "all"}


def test_outputs_equal_a_local_run(smoke_runs: Runs) -> None:
    diff = compare_histories(smoke_runs.local / "results/tiny/runs", smoke_runs.slurm / "results/tiny/runs")
    assert sorted(diff) == sorted(RUNS)
    assert all(v.startswith("same") for tables in diff.values() for v in tables.values()), diff
    local_tables = sorted((smoke_runs.local / "reports/tiny/tables").glob("*.html"))
    assert local_tables
    for page in local_tables:
        other = smoke_runs.slurm / "reports/tiny/tables" / page.name
        assert other.read_text() == page.read_text(), page.name


def test_training_metrics_reached_the_mlflow_server(smoke_runs: Runs, mlflow_http) -> None:
    from mlflow.tracking import MlflowClient

    from vade.tracking import KEY_TAG

    client = MlflowClient(mlflow_http.uri)
    exp = client.get_experiment_by_name("slurm-smoke")
    assert exp is not None
    for run_dir in sorted((smoke_runs.slurm / "results/tiny/runs").iterdir()):
        con = duckdb.connect(str(run_dir / "history.duckdb"), read_only=True)
        want = dict(con.execute("SELECT step, value FROM metrics WHERE name = 'val/acc' "
                                "ORDER BY step").fetchall())
        con.close()
        # the run this folder owns (the fault tests' clone logs a run of the same name)
        found = client.search_runs([exp.experiment_id],
                                   f"attributes.run_name = '{run_dir.name}' and "
                                   f"tags.{KEY_TAG} = '{run_dir.resolve()}'")
        assert len(found) == 1, run_dir.name
        got = {m.step: m.value for m in client.get_metric_history(found[0].info.run_id,
                                                                  "val/acc")}
        assert want and got == want, run_dir.name


def test_a_rerun_submits_nothing(smoke_runs: Runs, slurm_cluster: LocalSlurm) -> None:
    """The fault scenarios share the cluster and go on submitting from their own folders while
    this runs, so SLURM's jobs are compared for the smoke run's folder only."""
    def own_jobs() -> set[str]:
        return set(job_states(slurm_cluster).get(str(smoke_runs.slurm.resolve()), {}))

    before = own_jobs()
    assert before, "the smoke run's own jobs (kept for MinJobAge) are not found by folder"
    proc = through_slurm(smoke_runs.slurm, slurm_cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "Nothing to be done" in out and not SUBMITTED.search(out)
    assert own_jobs() == before
