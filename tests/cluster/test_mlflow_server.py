"""Eight SLURM jobs log to one real ``mlflow server`` at the same time, and no metric is lost.

Why: on a cluster the alternative, one SQLite file on the shared filesystem written by every
job, depends on file locks working across nodes (docs/cluster.md, "An MLflow server"); a
server owns its database alone and takes the jobs' writes over HTTP.

Real: the SLURM cluster, an eight-task job array on the ``cpu`` partition (the node declares
more CPUs than the machine has, ``local_slurm.SLOTS_PER_CPU``, so all eight run at once), the
local trainer with the VADE sampler, its DuckDB history and MLflow tracker, the tracking server (SQLite backend on local disk).
Stand-in: the toy policy in place of a model (tests/fixtures/toy_train_job.py).
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from test_train_local import write_toy_data

from .local_slurm import LocalSlurm
from .mlflow_server import Server
from .pipeline import ROOT

pytestmark = pytest.mark.cluster
JOBS = 8


def test_eight_jobs_log_concurrently_and_no_metric_is_lost(
        slurm_cluster: LocalSlurm, mlflow_http: Server, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    for sub in ("data", "slurm"):
        (tmp_path / sub).mkdir()
    data = write_toy_data(tmp_path / "data")
    runs = tmp_path / "runs"
    job = slurm_cluster.run(
        "sbatch", "--parsable", f"--array=0-{JOBS - 1}", "-p", "cpu", "--mem=400", "-c", "1",
        "-o", f"{tmp_path}/slurm/%a.log", "--wrap",
        f"{sys.executable} {ROOT}/tests/fixtures/toy_train_job.py {data} {runs} "
        f"{mlflow_http.uri}").stdout.strip()
    tasks = [f"{job}_{i}" for i in range(JOBS)]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        states = {t: slurm_cluster.job(t)["JobState"] for t in tasks}
        if all(s not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")
               for s in states.values()):
            break
        time.sleep(1)
    logs = "\n".join(p.read_text()[-1500:] for p in sorted((tmp_path / "slurm").glob("*.log")))
    assert set(states.values()) == {"COMPLETED"}, (states, logs)
    spans = [(datetime.fromisoformat(slurm_cluster.job(t)["StartTime"]),
              datetime.fromisoformat(slurm_cluster.job(t)["EndTime"])) for t in tasks]
    assert max(s for s, _ in spans) < min(e for _, e in spans), "the eight did not overlap"

    client = MlflowClient(mlflow_http.uri)
    exp = client.get_experiment_by_name("concurrent")
    for i in range(JOBS):
        name = f"toy-grpo-vade-s{i}"
        con = duckdb.connect(str(runs / name / "history.duckdb"), read_only=True)
        history = con.execute("SELECT name, step, value FROM metrics ORDER BY ALL").fetchall()
        con.close()
        found = client.search_runs([exp.experiment_id], f"attributes.run_name = '{name}'")
        assert len(found) == 1, name
        val = {step: value for metric, step, value in history if metric == "val/acc"}
        assert len(val) == 13, (name, val)  # validation before step 1 and after each of 12
        for metric in sorted({m for m, _, _ in history}):
            logged = {m.step: m.value for m in client.get_metric_history(found[0].info.run_id,
                                                                         metric)}
            want = {step: value for m, step, value in history if m == metric}
            assert logged == want, (name, metric)
