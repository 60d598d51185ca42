"""MLflow adapter against a temporary sqlite store: layout, params, resume without duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest

from vade.tracking import NullTracker, Tracker, TrackingConfig, flatten, open_tracker


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from test_train_local import write_toy_data  # not at the top: it imports torch, which the
    # processes of the parallel-store test (they import this module) would import for nothing

    return write_toy_data(tmp_path_factory.mktemp("data"))


def test_config_defaults_and_errors(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    cfg = TrackingConfig.from_dict({})
    assert cfg.uri_for("tiny") == "sqlite:///results/tiny/mlflow.db"
    assert cfg.experiment_for("tiny") == "tiny"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")  # what the workflow passes
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "vade-paper")
    assert cfg.uri_for("tiny") == "http://mlflow:5000"
    assert cfg.experiment_for("tiny") == "vade-paper"
    assert TrackingConfig(mlflow_uri="sqlite:///x.db").uri_for("tiny") == "sqlite:///x.db"
    assert isinstance(open_tracker(TrackingConfig(enabled=False), "tiny", "r"), NullTracker)
    with pytest.raises(ValueError, match="tracking.uri"):
        TrackingConfig.from_dict({"uri": "x"})
    with pytest.raises(ValueError, match="tracking.enabled"):
        TrackingConfig.from_dict({"enabled": "yes"})
    assert flatten({"train": {"lr": 0.001, "grpo": {"clip": 0.2}}, "seed": 0}) == {
        "train.lr": "0.001", "train.grpo.clip": "0.2", "seed": "0"}


def test_run_layout_params_and_resume_without_duplicated_steps(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    cfg = TrackingConfig(mlflow_uri=uri)
    with open_tracker(cfg, "tiny", "tiny-grpo-vade-s0") as t:
        t.log_params({"train": {"lr": 0.001}, "seed": 0})
        t.set_tags({"code_version": "vade test"})
        for step in (1, 2, 3):
            t.log_metrics({"loss": step * 1.0, "reward": 0.5}, step=step)
        first_id = t.run_id
    # the process died after step 3 with its checkpoint at step 2: steps 3.. are replayed
    with open_tracker(cfg, "tiny", "tiny-grpo-vade-s0") as t:
        assert t.run_id == first_id  # the same MLflow run, found by run name
        t.log_params({"train": {"lr": 0.001}, "seed": 0, "resumed": True})
        for step in (3, 4):
            t.log_metrics({"loss": step * 1.0, "reward": 0.5, "new": 1.0}, step=step)
    client = Tracker(uri, "tiny", "tiny-grpo-vade-s0").client
    hist = client.get_metric_history(first_id, "loss")
    assert sorted(m.step for m in hist) == [1, 2, 3, 4]  # 3 not duplicated, 4 added
    assert [m.step for m in client.get_metric_history(first_id, "new")] == [3, 4]
    run = client.get_run(first_id)
    assert run.info.run_name == "tiny-grpo-vade-s0"
    assert run.data.params == {"train.lr": "0.001", "seed": "0", "resumed": "True"}
    assert run.data.tags["code_version"] == "vade test"
    assert client.get_experiment(run.info.experiment_id).name == "tiny"
    # a second run in the same experiment is a separate MLflow run
    with open_tracker(cfg, "tiny", "tiny-grpo-vanilla-s0") as other:
        assert other.run_id != first_id


def test_rerun_from_step_zero_replaces_the_run_and_evaluation_keeps_its_duration(tmp_path):
    """What the UI shows after Snakemake reruns a training and its evaluation (real MLflow store).

    A fresh start deletes the old run (soft) and starts a new one; evaluating afterwards logs into
    the new run, replacing a value at the same step, without moving its status or end time.
    """
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    cfg = TrackingConfig(mlflow_uri=uri)
    with open_tracker(cfg, "tiny", "tiny-grpo-vade-s0", mode="new") as t:
        t.log_metrics({"val/acc": 0.25}, step=1)
        old_id = t.run_id
    with open_tracker(cfg, "tiny", "tiny-grpo-vade-s0", mode="new") as t:
        t.log_metrics({"val/acc": 0.75}, step=1)  # not skipped: a new run holds nothing yet
        new_id = t.run_id
    client = Tracker(uri, "tiny", "other").client
    assert new_id != old_id
    assert client.get_run(old_id).info.lifecycle_stage == "deleted"
    (active,) = client.search_runs([client.get_experiment_by_name("tiny").experiment_id],
                                   "attributes.run_name = 'tiny-grpo-vade-s0'")
    assert active.info.run_id == new_id and active.data.metrics["val/acc"] == 0.75
    ended = client.get_run(new_id).info.end_time

    for score in (10.0, 40.0):  # an evaluation, then its rerun
        with open_tracker(cfg, "tiny", "tiny-grpo-vade-s0", mode="attach") as ev:
            assert ev.run_id == new_id
            ev.log_metrics({"eval/math/average_at_4": score}, step=0)
    run = client.get_run(new_id)
    assert run.data.metrics["eval/math/average_at_4"] == 40.0  # the rerun's value is shown
    assert run.info.end_time == ended and run.info.status == "FINISHED"


def test_a_fresh_run_deletes_only_its_own_folders_runs(data, tmp_path):
    """Two run folders, one MLflow store, one run name (two checkouts of the study): before, a
    fresh ``vade train`` in one soft-deleted the other's run while it was still training. Real:
    the local trainer and MLflow store; stand-in: the toy policy. The experiment is tagged as
    model training (MLflow 3's UI then opens on runs and charts, not on GenAI traces)."""
    from test_train_local import _cfg, _paths

    from vade.train.local import train_local
    from vade.train.local.toy import ToyPolicy

    cfg = _cfg(tmp_path, steps=2)
    # another folder's run, still RUNNING (untagged: any run this folder's tag does not name)
    live = Tracker(cfg.tracking.mlflow_uri, "toy", "toy-grpo-vade-s0", mode="new")
    live.log_metrics({"val/acc": 0.5}, step=1)
    out = tmp_path / "here" / "toy-grpo-vade-s0"
    first = train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    assert live.client.get_run(live.run_id).info.lifecycle_stage == "active"
    second = train_local(_cfg(tmp_path, steps=2, lr=0.01), _paths(data, out), progress=False,
                         load_policy=ToyPolicy.load)  # a changed key: a fresh start here
    client = live.client
    assert client.get_run(live.run_id).info.lifecycle_stage == "active"
    assert client.get_run(live.run_id).info.status == "RUNNING"
    assert client.get_run(first["mlflow_run_id"]).info.lifecycle_stage == "deleted"
    mine = client.get_run(second["mlflow_run_id"])
    assert mine.data.tags["vade_run_key"] == str(out.resolve())
    exp = client.get_experiment_by_name("toy")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


def test_attach_without_a_run_creates_and_ends_one_and_modes_are_checked(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with Tracker(uri, "tiny", "tiny-base", mode="attach") as t:
        t.log_metrics({"eval/math/average_at_4": 12.5}, step=0)
    run = t.client.get_run(t.run_id)
    assert run.info.status == "FINISHED" and run.info.end_time is not None
    with pytest.raises(ValueError, match="mode"):
        Tracker(uri, "tiny", "x", mode="reopen")


def _open_at_once(uri: str, name: str, barrier) -> str:
    barrier.wait()
    with Tracker(uri, "tiny", name, mode="new") as t:
        t.log_metrics({"x": 1.0}, step=1)
    return name


@pytest.mark.e2e  # four spawned processes import MLflow and migrate one store at once
def test_parallel_jobs_can_open_a_new_store_together(tmp_path):
    """Four processes (what parallel Snakemake jobs are) open one not-yet-existing sqlite store at
    the same moment: every one gets its run (real MLflow migrations and experiment creation)."""
    import multiprocessing as mp

    uri = f"sqlite:///{tmp_path}/fresh/mlflow.db"
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(4)
        with ctx.Pool(4) as pool:
            done = pool.starmap(_open_at_once, [(uri, f"run-{i}", barrier) for i in range(4)])
    client = Tracker(uri, "tiny", "reader", mode="attach").client
    exp = client.get_experiment_by_name("tiny")
    names = {r.info.run_name for r in client.search_runs([exp.experiment_id])}
    assert sorted(done) == [f"run-{i}" for i in range(4)] and {"run-0", "run-3"} <= names
