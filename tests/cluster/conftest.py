"""Fixtures for the real-cluster tests: one SLURM cluster and one MLflow server per test session.

Both are real daemons started in the session's temporary folder on free ports and stopped by
their pids at the end, so pytest workers (and other users of the machine) never share one.

A wait overlaps work: the MLflow server starts (a minute, mostly its database migrations) while
the SLURM smoke run's first jobs run (``pytest_collection_modifyitems`` puts that run first).
SLURM comes from system packages that ``make test`` never installs: without them these tests
skip, naming the one install command; under ``CI=true`` (where ``.ci/run`` installs them) that
skip is a failure instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from . import local_slurm, mlflow_server, pipeline

# the smoke run first: the MLflow server starts beside it
ORDER = {"test_slurm_pipeline.py": -1}


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


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory: pytest.TempPathFactory, slurm_cluster: local_slurm.LocalSlurm,
               mlflow_starting: mlflow_server.Server) -> pipeline.Runs:
    """The cluster smoke config run locally and through SLURM, the SLURM run logging to the
    MLflow server; the pipeline and fault tests compare against it."""
    try:
        runs = pipeline.run_both(tmp_path_factory.mktemp("smoke"), slurm_cluster,
                                 mlflow_starting.uri)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    print("smoke runs:", ", ".join(f"{k} {v:.0f} s" for k, v in runs.seconds.items()))
    return runs


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The pipeline tests first, the rest as collected."""
    items.sort(key=lambda item: ORDER.get(item.path.name, 0))
