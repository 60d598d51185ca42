"""Launch one verl run (a Table-1/Table-2 cell) from its ``TrainConfig``.

``launch(cfg, model=, model_path=, data_dir=, difficulty=, out_dir=)`` builds
``python -m vade.train.verl.ppo_entry <overrides>`` (verl's ``main_ppo`` with the sampler observing
each batch before the checkpoint; ``vade.train.verl.dapo_entry`` for DAPO), runs
it with its output streamed to the terminal and to ``<out_dir>/train.log``, pools verl's
per-source validation scores into ``val/acc`` / ``val/n`` in the run's history and MLflow
(``vade.train.verl.validation``; also after a failed attempt), and on success copies
the last checkpoint's Hugging Face model to ``<out_dir>/final/`` and writes ``done.json`` last,
atomically (the Snakemake output).

The config was parsed and validated once, by ``vade train`` (``TrainConfig.from_config``); this
module only adds ``models.<model>.name_or_path`` and where the files are. The environment it sets
for verl: ``MLFLOW_TRACKING_URI`` (verl's MLflow logger reads only that) and ``MLFLOW_RUN_ID``
(the run's one MLflow run, found by name, which verl attaches to on every attempt),
``VERL_FILE_LOGGER_PATH`` (one metrics file per attempt, renamed after it, see ``_rotate`` and
``vade.train.verl.rollouts``) and,
for DAPO, ``PYTHONPATH`` with the verl-recipe checkout; each also goes to Ray's runtime_env
(``ray_env_overrides``), so actors get it on any Ray cluster.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vade.job.cpus import allocated_cpus
from vade.job.timelimit import END_ENV, FLAG_ENV, TimeLimitReached, flag_on_signal, job_end_time
from vade.tracking import Tracker
from vade.train.config import TrainConfig
from vade.train.verl.overrides import RunSpec, build_overrides
from vade.train.verl.recipe import locate
from vade.train.verl.timelimit import STOP_ENV
from vade.train.verl.validated import read_validated_counts
from vade.train.verl.validation import pool_run_validation

__all__ = ["RAY_ENV", "launch", "mlflow_run_for", "model_path", "plan", "ray_env_overrides", "run"]

_SQLITE = "sqlite:///"


def _tracking(cfg: TrainConfig) -> tuple[str | None, str]:
    experiment = cfg.tracking.experiment or cfg.name
    if not cfg.tracking.enabled:
        return None, experiment
    uri = cfg.tracking.uri_for(cfg.name)
    if uri.startswith(_SQLITE) and not uri.startswith(_SQLITE + "/"):
        uri = _SQLITE + str(Path(uri[len(_SQLITE):]).resolve())  # Ray workers: other cwd
    return uri, experiment


def model_path(config: Mapping[str, Any], model: str) -> str:
    """``models.<model>.name_or_path``, or ``model`` itself (an HF id or a local directory)."""
    models = config.get("models") or {}
    entry = models.get(model)
    if entry is None:
        return model
    path = entry.get("name_or_path") if isinstance(entry, Mapping) else None
    if not path:
        raise ValueError(f"models.{model} has no name_or_path (verl needs a pretrained model)")
    return str(path)


def plan(cfg: TrainConfig, *, model: str, model_path: str, data_dir: str | Path,
         difficulty: str | Path | None, out_dir: str | Path,
         ) -> tuple[RunSpec, list[str], dict[str, str]]:
    """(run spec, command, extra environment) without running anything."""
    uri, experiment = _tracking(cfg)
    spec = RunSpec(cfg=cfg, model=model, model_path=model_path, data_dir=Path(data_dir),
                   out_dir=Path(out_dir).resolve(),
                   difficulty=Path(difficulty) if difficulty else None)
    overrides = build_overrides(spec, tracking_uri=uri, experiment=experiment)
    env = {"MLFLOW_TRACKING_URI": uri} if uri else {}
    return spec, [sys.executable, "-m", spec.entry, *overrides], env


def _check_inputs(spec: RunSpec) -> None:
    for f in ("train.parquet", "val.parquet"):
        if not (spec.data_dir / f).is_file():
            raise FileNotFoundError(f"verl input not found: {spec.data_dir / f}")
    if spec.cfg.needs_difficulty and (spec.difficulty is None or not spec.difficulty.is_file()):
        raise FileNotFoundError(f"initial difficulty not found: {spec.difficulty} "
                                f"(method {spec.cfg.method} starts from it)")


def _stream(cmd: list[str], env: dict[str, str], log_path: Path) -> int:
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(cmd)}\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, text=True, bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            log.write(line)
        return proc.wait()


def _copy_final(out_dir: Path) -> Path:
    ckpt = out_dir / "checkpoints"
    marker = ckpt / "latest_checkpointed_iteration.txt"
    if not marker.is_file():
        raise FileNotFoundError(f"no checkpoint recorded in {ckpt} (is trainer.save_freq > 0?)")
    step = int(marker.read_text().strip())
    source = ckpt / f"global_step_{step}" / "actor" / "huggingface"
    if not source.is_dir():
        raise FileNotFoundError(f"checkpoint of step {step} has no Hugging Face model: {source}")
    final = out_dir / "final"
    tmp = out_dir / "final.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final


# What every process of the run must see, passed to Ray explicitly (verl merges
# ray_kwargs.ray_init.runtime_env into the job's runtime env): inheritance from this process
# reaches the actors only when Ray starts here, not on a pre-started or multi-node cluster.
RAY_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME",
           "VERL_FILE_LOGGER_PATH", "PYTHONPATH", "HF_HOME", "HF_HUB_OFFLINE",
           "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "VADE_VERL_RECIPE_DIR",
           # the time limit (vade.train.verl.timelimit): the trainer runs in a Ray actor
           "SLURM_JOB_END_TIME", "VADE_TIME_MARGIN", "VADE_CHECKPOINT_FLAG", "VADE_TIME_STOP")


# verl's file logger truncates its file: every attempt writes this one path (so the config, which
# verl logs to the run's one MLflow run as params, is the same on every attempt; MLflow refuses a
# changed param) and the launcher renames it to attempt-<ns>.jsonl once the attempt ends.
CURRENT = "current.jsonl"


def _rotate(current: Path) -> None:
    if current.is_file():
        current.rename(current.with_name(f"attempt-{current.stat().st_mtime_ns}.jsonl"))


def ray_env_overrides(env: Mapping[str, str]) -> list[str]:
    """``+ray_kwargs.ray_init.runtime_env.env_vars.<K>='<v>'`` for each ``RAY_ENV`` key set."""
    out = []
    for key in RAY_ENV:
        if env.get(key):
            value = env[key].replace("\\", "\\\\").replace("'", "\\'")
            out.append(f"+ray_kwargs.ray_init.runtime_env.env_vars.{key}='{value}'")
    return out


def ray_cpus_override(env: Mapping[str, str]) -> str:
    """``ray_kwargs.ray_init.num_cpus=<the job's CPUs>`` (``vade.job.cpus``)."""
    cpus, source = allocated_cpus(env)
    print(f"Ray num_cpus = {cpus} (from {source})", flush=True)
    return f"ray_kwargs.ray_init.num_cpus={cpus}"


def _time_limit_files(out: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """The flag this process writes on a checkpoint signal and the file the trainer writes when
    it stops for the limit (``vade.train.verl.timelimit``); both cleared for this attempt."""
    flag, stop = out / "checkpoint-now", out / "time-stop.json"
    for p in (flag, stop):
        p.unlink(missing_ok=True)
    env[FLAG_ENV], env[STOP_ENV] = str(flag), str(stop)
    end = job_end_time(env)   # resolved here (squeue if need be): the actor gets a number
    if end is not None:
        env[END_ENV] = str(end)
    flag_on_signal(flag, env)
    return flag, stop


def mlflow_run_for(uri: str, experiment: str, run_name: str, *, fresh: bool) -> str:
    """The one MLflow run of a training run, across its attempts: the run of that name (a run
    that starts from step 0 replaces it). verl attaches to it through ``MLFLOW_RUN_ID`` instead
    of opening a new run per attempt, and the sampler's recorder finds it by name."""
    return Tracker(uri, experiment, run_name, mode="new" if fresh else "resume").run_id


def _pool_validation(spec: RunSpec, tracking_uri: str | None) -> None:
    """``val/acc`` and ``val/n`` from every attempt's verl metrics into the run's history and
    MLflow (``vade.train.verl.validation``): the score the report reads, weighted by the rows
    verl validated (``vade.train.verl.validated``)."""
    files = sorted((spec.out_dir / "verl-metrics").glob("attempt-*.jsonl"),
                   key=lambda p: int(p.stem.split("-")[1]))
    if not files:
        return
    counts, _ = read_validated_counts(spec.out_dir, spec.data_dir / "val.parquet")
    _, experiment = _tracking(spec.cfg)
    pool_run_validation(files, counts, store=spec.out_dir / "history.duckdb", run_id=spec.run_id,
                        tracking_uri=tracking_uri, experiment=experiment)


def launch(cfg: TrainConfig, *, model: str, model_path: str, data_dir: str | Path,
           difficulty: str | Path | None, out_dir: str | Path) -> list[str]:
    """Run one cell with verl; returns the command. Raises RuntimeError if verl fails."""
    spec, cmd, extra_env = plan(cfg, model=model, model_path=model_path, data_dir=data_dir,
                                difficulty=difficulty, out_dir=out_dir)
    _check_inputs(spec)
    out = spec.out_dir
    (out / "verl-metrics").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **extra_env)
    current = out / "verl-metrics" / CURRENT
    _rotate(current)  # a killed job's attempt keeps its own file
    env["VERL_FILE_LOGGER_PATH"] = str(current)
    if spec.entry.endswith("dapo_entry"):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(locate()), env.get("PYTHONPATH"))
                                            if p)
    uri = extra_env.get("MLFLOW_TRACKING_URI")
    if uri:
        fresh = not (out / "checkpoints" / "latest_checkpointed_iteration.txt").is_file()
        env["MLFLOW_RUN_ID"] = mlflow_run_for(uri, _tracking(spec.cfg)[1], spec.run_id,
                                              fresh=fresh)
    _, stop = _time_limit_files(out, env)
    cmd = [*cmd, *ray_env_overrides(env), ray_cpus_override(env)]
    rc = _stream(cmd, env, out / "train.log")
    _rotate(current)
    try:
        _pool_validation(spec, uri)
    except Exception as exc:  # noqa: BLE001  (reported: the trained model is not lost over it)
        print(f"pooled validation (val/acc) not written: {exc}", file=sys.stderr)
    if rc != 0 and stop.is_file():
        info = json.loads(stop.read_text())
        raise TimeLimitReached(f"{spec.run_id}: checkpointed step {info['step']} and stopped: "
                               f"{info['reason']}; run it again (the next submission) to "
                               "resume from there")
    if rc != 0:
        raise RuntimeError(f"verl exited with status {rc} (see {out / 'train.log'})")
    final = _copy_final(out)
    done: dict[str, Any] = {"run_id": spec.run_id, "backend": "verl", "final": str(final),
                            "command": shlex.join(cmd)}
    stop = out / "stop.json"
    if stop.is_file():
        done["stop"] = json.loads(stop.read_text())
    tmp = out / "done.json.tmp"
    tmp.write_text(json.dumps(done, indent=2))
    os.replace(tmp, out / "done.json")
    return cmd


def run(args: Any, cfg: TrainConfig, config: Mapping[str, Any]) -> int:
    """``vade train --backend verl``: the parsed config and arguments -> :func:`launch`."""
    missing = [k for k in ("algorithm", "method", "model", "data_dir", "out")
               if getattr(args, k, None) in (None, "")]
    if missing:
        raise ValueError(f"--backend verl needs --{missing[0].replace('_', '-')}")
    launch(cfg, model=str(args.model), model_path=model_path(config, str(args.model)),
           data_dir=args.data_dir, difficulty=getattr(args, "difficulty", None),
           out_dir=args.out)
    return 0
