"""Fixtures for the real-cluster tests: one SLURM cluster and one MLflow server per test session.

Both are real daemons started in the session's temporary folder on free ports and stopped by
their pids at the end, so pytest workers (and other users of the machine) never share one.

Waits overlap work, since most of this group's time is SLURM's (status polls, whole-minute time
limits checked every 30 s): the MLflow server starts (a minute, mostly its database migrations)
while the SLURM smoke run's first jobs run; the fault scenarios start as soon as the local smoke
run has made the data, model and initial difficulty they train from, and go on in the background
through the smoke, MLflow and Ray tests; the fault tests come last
(``pytest_collection_modifyitems``).
SLURM comes from system packages that ``make test`` never installs: without them these tests
skip, naming the one install command; under ``CI=true`` (where ``.ci/run`` installs them) that
skip is a failure instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import faults, local_slurm, mlflow_server, pipeline

# the smoke runs' results first, the faults' last; the MLflow and Ray tests between, while the
# fault scenarios wait on their time limits (run beside the smoke runs, they only slow them down:
# every core is busy until the local run ends)
ORDER = {"test_slurm_pipeline.py": -1, "test_slurm_faults.py": 1}


def require(missing: list[str], install: str) -> None:
    """Skip (fail on CI) when a system program the test needs is absent."""
    if not missing:
        return
    reason = f"needs {', '.join(missing)}: {install}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the real-cluster tests ({reason})")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[local_slurm.LocalSlurm]:
    require(local_slurm.missing_binaries(), local_slurm.INSTALL)
    with contextlib.closing(local_slurm.start(tmp_path_factory.mktemp("slurm"))) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def mlflow_starting(tmp_path_factory: pytest.TempPathFactory,
                    ) -> Iterator[mlflow_server.Server]:
    """The server, maybe still starting: the SLURM smoke run takes its URI at once (its first
    request comes from the first training job, minutes later; MLflow's client retries)."""
    with contextlib.closing(mlflow_server.start(tmp_path_factory.mktemp("mlflow-server"))) as s:
        yield s


@pytest.fixture(scope="session")
def mlflow_http(mlflow_starting: mlflow_server.Server) -> mlflow_server.Server:
    """The server, answering."""
    try:
        return mlflow_server.wait(mlflow_starting)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@dataclass
class ClusterRuns:
    """The smoke runs and the fault scenarios, all under way."""

    smoke: pipeline.Started
    faults: faults.Running


@pytest.fixture(scope="session")
def cluster_runs(tmp_path_factory: pytest.TempPathFactory, slurm_cluster: local_slurm.LocalSlurm,
                 mlflow_starting: mlflow_server.Server) -> Iterator[ClusterRuns]:
    """The cluster smoke config run locally and through SLURM (logging to the MLflow server),
    and the fault scenarios, which start from the local run's upstream stages."""
    started: list[faults.Running] = []

    def start_faults(upstream: Path) -> None:
        started.append(faults.Running(upstream, slurm_cluster, tmp_path_factory.mktemp("faults")))

    try:
        smoke = pipeline.start_both(tmp_path_factory.mktemp("smoke"), slurm_cluster,
                                    mlflow_starting.uri, start_faults)
    except RuntimeError as exc:
        for running in started:
            running.stop()
        pytest.fail(str(exc))
    runs = ClusterRuns(smoke, started[0])
    try:
        yield runs
    finally:
        runs.faults.stop()
        runs.smoke.stop()


@pytest.fixture(scope="session")
def smoke_runs(cluster_runs: ClusterRuns) -> pipeline.Runs:
    """Both smoke runs, completed; the pipeline and fault tests compare against them."""
    try:
        runs = cluster_runs.smoke.finish()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    print(f"smoke runs: upstream {cluster_runs.smoke.upstream_s:.0f} s, "
          + ", ".join(f"{k} {v:.0f} s" for k, v in runs.seconds.items()))
    return runs


@pytest.fixture(scope="session")
def fault_scenarios(cluster_runs: ClusterRuns) -> dict[str, faults.Scenario]:
    """Both fault scenarios, ended."""
    try:
        done = cluster_runs.faults.finish()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    print(f"fault scenarios: {cluster_runs.faults.seconds:.0f} s")
    return done


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The pipeline tests first, the rest as collected."""
    items.sort(key=lambda item: ORDER.get(item.path.name, 0))
