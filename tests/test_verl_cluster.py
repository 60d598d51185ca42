"""verl on a cluster: the environment reaches Ray actors through runtime_env, a resumed run logs
to one MLflow run, and the pooled validation weighs the rows verl actually validated.

Real: Hydra composition of verl 0.7.1's ``ppo_trainer`` with our overrides and verl's own merge
of its default runtime env (``run_ppo``'s code path up to ``ray.init``); verl's own MLflow logger
(``verl.utils.tracking.Tracking``) run in two separate processes, as two attempts of one run;
MLflow on sqlite in tmp_path; the launcher's pooling into DuckDB. Stand-in: the trainer object
handed to ``write_validated_counts`` (a namespace with verl's ``val_dataset.dataframe`` and
``config.trainer.default_local_dir``, the two attributes it reads) and the metric files verl's
file logger would write. No Ray cluster is started (see the final report: not done).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("verl")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from test_verl_overrides import spec, verl_config_dir  # noqa: E402
from test_verl_validation import (  # noqa: E402
    planned_run,
    pooled_rows,
    step_metrics,
    vanilla_cfg,
    write_attempt,
    write_sources,
)

from vade.train.verl.launch import mlflow_run_for, ray_env_overrides  # noqa: E402
from vade.train.verl.overrides import build_overrides  # noqa: E402


def test_run_env_reaches_rays_runtime_env_through_verls_own_merge():
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    env = {"MLFLOW_TRACKING_URI": "sqlite:////shared/results/paper/mlflow.db",
           "MLFLOW_RUN_ID": "abc123", "VERL_FILE_LOGGER_PATH": "/shared/run/attempt-1.jsonl",
           "PYTHONPATH": "/shared/repo:/opt/recipe's", "HF_HUB_OFFLINE": "1",
           "HOME": "/root"}  # not a run setting: not passed
    ov = build_overrides(spec(), tracking_uri=env["MLFLOW_TRACKING_URI"]) + ray_env_overrides(env)
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        cfg = compose("ppo_trainer", overrides=ov)
    ray_init = cfg.ray_kwargs.get("ray_init", {})
    # what run_ppo does before ray.init
    merged = OmegaConf.to_container(OmegaConf.merge(get_ppo_ray_runtime_env(),
                                                    ray_init.get("runtime_env", {})))
    got = merged["env_vars"]
    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "VERL_FILE_LOGGER_PATH", "PYTHONPATH",
                "HF_HUB_OFFLINE"):
        assert got[key] == env[key], key
    assert "HOME" not in got
    assert "TOKENIZERS_PARALLELISM" in got or "NCCL_DEBUG" in got  # verl's defaults kept


ATTEMPT = r"""
import sys
from verl.utils.tracking import Tracking
t = Tracking(project_name=sys.argv[1], experiment_name=sys.argv[2], default_backend=["mlflow"],
             config={"trainer": {"total_training_steps": 2}})  # the same on every attempt
t.log({"actor/grad_norm": float(sys.argv[3])}, step=int(sys.argv[3]))
t.finish() if hasattr(t, "finish") else None
"""


def _attempt(uri: str, run_id: str, step: int) -> None:
    env = dict(os.environ, MLFLOW_TRACKING_URI=uri, MLFLOW_RUN_ID=run_id)
    proc = subprocess.run([sys.executable, "-c", ATTEMPT, "exp", "m-grpo-vade-s0", str(step)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.e2e
def test_a_resumed_run_logs_to_one_mlflow_run(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = mlflow_run_for(uri, "exp", "m-grpo-vade-s0", fresh=True)
    _attempt(uri, first, 1)                      # the job is killed after step 1 ...
    again = mlflow_run_for(uri, "exp", "m-grpo-vade-s0", fresh=False)
    assert again == first                        # ... and resumed: the same run
    _attempt(uri, again, 2)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("exp")
    runs = client.search_runs([exp.experiment_id], "attributes.run_name = 'm-grpo-vade-s0'")
    assert [r.info.run_id for r in runs] == [first]
    steps = [m.step for m in client.get_metric_history(first, "actor/grad_norm")]
    assert sorted(steps) == [1, 2]
    # the sampler's recorder opens the run by name: the same one
    from vade.train.recorder import reopen_by_name

    tracker = reopen_by_name(uri, "exp", "m-grpo-vade-s0")()
    assert tracker.run_id == first
    # a restart from step 0 replaces it
    assert mlflow_run_for(uri, "exp", "m-grpo-vade-s0", fresh=True) != first


def test_pooled_validation_weighs_validated_rows_and_reports_a_missing_source(tmp_path, capsys):
    """val.parquet holds 3 geo3k, 1 ai2d, 4 CLEVR rows; verl validated 2 geo3k and 4 CLEVR (its
    overlong filter dropped a geo3k row and the only ai2d row)."""
    from vade.train.verl.validated import read_validated_counts, write_validated_counts
    from vade.train.verl.validation import POOLED, VAL_ITEMS

    run_spec = planned_run(tmp_path)
    trainer = SimpleNamespace(
        val_dataset=SimpleNamespace(dataframe={"data_source": ["geo3k", "CLEVR-Math/sub"] * 2
                                               + ["CLEVR-Math/sub"] * 2}),
        config=SimpleNamespace(trainer=SimpleNamespace(
            default_local_dir=str(run_spec.out_dir / "checkpoints"))))
    path = write_validated_counts(trainer)
    assert json.loads(Path(path).read_text()) == {"CLEVR-Math/sub": 4, "geo3k": 2}
    assert read_validated_counts(run_spec.out_dir, tmp_path / "data/val.parquet")[0] == {
        "CLEVR-Math/sub": 4, "geo3k": 2}
    write_attempt(run_spec.out_dir / "verl-metrics" / "attempt-1.jsonl",
                  (0, step_metrics(1.0, None, 0.5)))
    # (2 x 1.0 + 4 x 0.5) / 6, not (3 x 1.0 + 4 x 0.5) / 8 from val.parquet
    assert pooled_rows(run_spec) == [(POOLED, pytest.approx(4 / 6)), (VAL_ITEMS, 6.0)]


def test_launch_attempts_share_one_logger_path_and_a_missing_source_is_reported(tmp_path,
                                                                                monkeypatch,
                                                                                capsys):
    """Two attempts through ``launch`` with verl replaced by a stand-in that writes what verl's
    file logger would (step metrics with the ai2d source missing) and a checkpoint."""
    from vade.train.verl import launch as launch_mod

    cfg = vanilla_cfg({"mlflow_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"})
    (tmp_path / "data").mkdir()
    for name in ("train", "val"):
        write_sources(tmp_path / "data" / f"{name}.parquet")
    out = tmp_path / "run"
    seen = []

    def verl(cmd, env, log_path):
        seen.append((env["VERL_FILE_LOGGER_PATH"], env["MLFLOW_RUN_ID"], cmd))
        write_attempt(Path(env["VERL_FILE_LOGGER_PATH"]), (len(seen), step_metrics(1.0, None, 0.5)))
        hf = out / "checkpoints" / "global_step_1" / "actor" / "huggingface"
        hf.mkdir(parents=True, exist_ok=True)
        (out / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("1")
        return 1 if len(seen) == 1 else 0    # the first attempt is killed

    monkeypatch.setattr(launch_mod, "_stream", verl)
    kwargs = dict(model="m", model_path="m", data_dir=tmp_path / "data", difficulty=None,
                  out_dir=out)
    with pytest.raises(RuntimeError, match="verl exited with status 1"):
        launch_mod.launch(cfg, **kwargs)
    launch_mod.launch(cfg, **kwargs)          # resumed: succeeds, done.json written
    assert (out / "done.json").is_file()
    (p1, run1, cmd1), (p2, run2, cmd2) = seen
    assert p1 == p2 and run1 == run2          # one logger path, one MLflow run
    assert f"+ray_kwargs.ray_init.runtime_env.env_vars.MLFLOW_RUN_ID='{run1}'" in cmd2
    assert f"+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH='{p1}'" in cmd1
    attempts = sorted(p.name for p in (out / "verl-metrics").glob("attempt-*.jsonl"))
    assert len(attempts) == 2 and not Path(p1).exists()
    err = capsys.readouterr().err
    assert "pooled validation (val/acc) not written" in err and "ai2d" in err
