"""Session-wide isolation: the tests never read or write a user's pipeline outputs.

A user runs ``make demo`` and then ``make test`` in the same clone. Two things keep the second from
touching the first:

* MLflow: every process the tests start (and the tests themselves) log to a store in the session's
  temporary folder; ``MLFLOW_TRACKING_URI`` is set before any test runs and is inherited by the
  subprocesses (``vade`` commands, Snakemake jobs). A test that needs the unset case removes it with
  ``monkeypatch``. A user's ``VADE_MODEL_CACHE`` (built models, ``vade/models/cache.py``) is
  unset the same way: a clone's Snakemake run keeps its own under its ``results/``.
* A guard: the repository's output folders (``data/``, ``results/``, ``reports/``, ``logs/``,
  ``benchmarks/``, ``mlruns/``, ``.snakemake/``) are fingerprinted (path, size, mtime of every
  file) before the first test and compared after the last one; any difference fails the
  session, naming the paths. The check runs the same on CI's clean clone (nothing there may
  appear) and after a demo (nothing there may change).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from output_guard import ROOT, changed_paths, fingerprint

pytest_plugins = ("tiers", "pytester")


@pytest.fixture(scope="session", autouse=True)
def hermetic_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    store = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME",
                                            "VADE_MODEL_CACHE")}
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{store}"
    os.environ.pop("MLFLOW_EXPERIMENT_NAME", None)
    os.environ.pop("VADE_MODEL_CACHE", None)  # a user's model cache is not the tests' either
    before = fingerprint()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    changed = changed_paths(before, fingerprint())
    assert not changed, (
        "the tests wrote into the repository's pipeline outputs (they must work in temporary "
        f"folders): {changed[:20]}{' ...' if len(changed) > 20 else ''}")


@pytest.fixture(scope="session")
def smoke_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The completed smoke run of config/tiny.yaml (a clean clone); read it, copy to change it."""
    from smoke_pipeline import build_once

    base = tmp_path_factory.getbasetemp()
    # Workers of one xdist run share their base's parent; a plain run keeps to its own base.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "smoke-pipeline"
    shared.mkdir(exist_ok=True)
    workdir, error = build_once(shared)
    if error:
        pytest.fail(error)
    return workdir


@pytest.fixture
def paper(tmp_path: Path) -> dict:
    """The paper config as shipped, with its asset cache in the test's temporary folder."""
    import yaml

    with open(ROOT / "config" / "config.yaml", encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg["cluster"] = {"cache_dir": str(tmp_path / "cache")}
    return cfg
