"""Parallel training jobs open one fresh local MLflow store at the same moment (2 cores, two train
jobs start together after the model build): every one of them must get its run. Real MLflow and
sqlite; real processes started together on a barrier."""

from __future__ import annotations

import multiprocessing as mp

from vade.tracking import TrackingConfig, open_tracker


def _open(uri: str, name: str, barrier, results) -> None:
    import mlflow  # noqa: F401  (imported before the barrier: the race is in opening the store)

    barrier.wait()
    try:
        tracker = open_tracker(TrackingConfig(mlflow_uri=uri), "race", name, mode="new")
        tracker.log_metrics({"x": 1.0}, step=1)
        tracker.close()
        results.put((name, "ok"))
    except Exception as exc:  # noqa: BLE001 (the test reports whatever a process hit)
        results.put((name, f"{type(exc).__name__}: {exc}"[:300]))


def test_parallel_jobs_open_one_fresh_store(tmp_path):
    uri = f"sqlite:///{tmp_path}/results/mlflow.db"
    ctx = mp.get_context("spawn")
    n = 4
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(uri, f"run{i}", barrier, results)) for i in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    got = dict(results.get(timeout=5) for _ in range(n))
    assert got == {f"run{i}": "ok" for i in range(n)}
