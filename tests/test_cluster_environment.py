"""The environment the workflow gives jobs, said rather than done silently: a user's value it
replaces, a variable whose name is a near miss of one we read, and preflight by hand checking
the job's environment (and saying so) instead of failing on the shell's.

Nothing stands in: the functions run on dictionaries shaped like ``os.environ``, and
``vade preflight`` runs in-process with the paper config.
"""

from __future__ import annotations

import pytest
import yaml

from vade.cli import main
from vade.job.config import job_env, near_miss_env, overridden


def test_near_misses_are_named_and_real_names_are_not():
    env = {"MLFLOW_TRACKING_URL": "http://x", "MLFLOW_TRACKING_URI": "http://y",
           "HF_HUB_OFLINE": "1", "HF_HOME": "/h", "HF_ENDPOINT": "https://hub", "HOME": "/root",
           "VADE_TIME_MARGN": "2"}
    assert near_miss_env(env) == [
        "HF_HUB_OFLINE is set but nothing reads it: did you mean HF_HUB_OFFLINE?",
        "MLFLOW_TRACKING_URL is set but nothing reads it: did you mean MLFLOW_TRACKING_URI?",
        "VADE_TIME_MARGN is set but nothing reads it: did you mean VADE_TIME_MARGIN?"]


def test_a_replaced_value_is_said(paper):
    new = job_env(paper)
    lines = overridden({"HF_HOME": "/home/me/.cache/huggingface", "HF_HUB_OFFLINE": "1"}, new,
                       {"HF_HOME": "cluster.cache_dir"})
    assert lines == [f"HF_HOME=/home/me/.cache/huggingface is replaced by {new['HF_HOME']} for "
                     "the jobs (cluster.cache_dir)"]


@pytest.mark.e2e  # several seconds: real processes / a training run
def test_preflight_by_hand_checks_the_jobs_environment(paper, tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "paper.yaml"
    cfg.write_text(yaml.safe_dump(paper))
    for var in ("VADE_WORKFLOW_CONFIG", "HF_HOME", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URL", "http://typo")
    main(["preflight", "--config", str(cfg), "--stage", "train", "--gpus", "0",
          "--no-profile", "--model", "qwen2.5-vl-7b", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "by hand: checking the environment the workflow gives the job (HF_DATASETS_OFFLINE" \
           in out
    assert "warn MLFLOW_TRACKING_URL is set but nothing reads it: did you mean " \
           "MLFLOW_TRACKING_URI?" in out
    offline = [ln for ln in out.splitlines() if "offline environment" in ln]
    assert offline and offline[0].startswith("ok ")
