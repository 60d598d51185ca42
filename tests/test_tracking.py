"""MLflow adapter against a temporary sqlite store: layout, params, resume without duplicates."""

from __future__ import annotations

import pytest

from vade.tracking import NullTracker, Tracker, TrackingConfig, flatten, open_tracker


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
