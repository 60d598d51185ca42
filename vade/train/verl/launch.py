"""Launch one verl run (a Table-1/Table-2 cell) from the project config.

``launch(config, algorithm=, method=, seed=, model=, data_dir=, difficulty=, out_dir=)`` builds
``python -m vade.train.verl.ppo_entry <overrides>`` (verl's ``main_ppo`` with the sampler observing
each batch before the checkpoint; ``vade.train.verl.dapo_entry`` for DAPO), runs
it with its output streamed to the terminal and to ``<out_dir>/train.log``, pools verl's
per-source validation scores into ``val/acc`` / ``val/n`` in the run's history and MLflow
(``vade.train.verl.validation``; also after a failed attempt), and on success copies
the last checkpoint's Hugging Face model to ``<out_dir>/final/`` and writes ``done.json`` last,
atomically (the Snakemake output). ``dry_run=True`` only prints and returns the command.

Reads ``train.verl`` (``VerlConfig``), ``sampler`` (lambda1, lambda2, snapshot_every), ``dapo``,
``tracking`` and ``models.<model>.name_or_path``. The environment it sets for verl:
``MLFLOW_TRACKING_URI`` (verl's MLflow logger reads only that), ``VERL_FILE_LOGGER_PATH`` (one
metrics file per attempt, see ``vade.train.verl.rollouts``) and, for DAPO, ``PYTHONPATH`` with
the verl-recipe checkout.
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

from vade.config_io import section
from vade.train.config import algo_config
from vade.train.verl.config import DapoSettings, VerlConfig
from vade.train.verl.diva_overrides import diva_config
from vade.train.verl.overrides import RunSpec, build_overrides

__all__ = ["launch", "plan", "run"]

_SQLITE = "sqlite:///"


def _sampler_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    from vade.sampling.checks import check_number

    s = section(config, "sampler", required=False)
    out = {"lambda1": s.get("lambda1", 0.2), "lambda2": s.get("lambda2", 0.999),
           "snapshot_every": s.get("snapshot_every", 0)}
    check_number("sampler.lambda1", out["lambda1"], 0.0, 1.0)
    check_number("sampler.lambda2", out["lambda2"], 0.0, 1.0)
    check_number("sampler.snapshot_every", out["snapshot_every"], 0, 1 << 30, integer=True)
    return out


def _tracking(config: Mapping[str, Any], name: str) -> tuple[str | None, str]:
    from vade.tracking import TrackingConfig

    tc = TrackingConfig.from_dict(section(config, "tracking", required=False))
    experiment = tc.experiment or name
    if not tc.enabled:
        return None, experiment
    uri = tc.uri_for(name)
    if uri.startswith(_SQLITE) and not uri.startswith(_SQLITE + "/"):
        uri = _SQLITE + str(Path(uri[len(_SQLITE):]).resolve())  # Ray workers: other cwd
    return uri, experiment


def _model_path(config: Mapping[str, Any], model: str) -> str:
    models = config.get("models") or {}
    entry = models.get(model)
    if entry is None:
        return model  # an HF id or a local directory given directly
    path = entry.get("name_or_path") if isinstance(entry, Mapping) else None
    if not path:
        raise ValueError(f"models.{model} has no name_or_path (verl needs a pretrained model)")
    return str(path)


def plan(config: Mapping[str, Any], *, algorithm: str, method: str, seed: int, model: str,
         data_dir: str | Path, difficulty: str | Path | None, out_dir: str | Path,
         ) -> tuple[RunSpec, list[str], dict[str, str]]:
    """(run spec, command, extra environment) without running anything."""
    name = config.get("name")
    if not name or not isinstance(name, str):
        raise ValueError("config has no 'name' (the experiment name)")
    train = section(config, "train")
    verl_cfg = VerlConfig.from_dict(train.get("verl"))
    dapo = DapoSettings.from_dict(section(config, "dapo", required=False))
    uri, experiment = _tracking(config, name)
    spec = RunSpec(name=name, model=model, model_path=_model_path(config, model),
                   algorithm=algorithm, method=method, seed=seed, data_dir=Path(data_dir),
                   out_dir=Path(out_dir).resolve(),
                   difficulty=Path(difficulty) if difficulty else None)
    overrides = build_overrides(spec, verl_cfg, algo_config(train, algorithm),
                                sampler=_sampler_settings(config), dapo=dapo,
                                tracking_uri=uri, experiment=experiment,
                                diva=diva_config(config))
    env = {}
    if uri:
        env["MLFLOW_TRACKING_URI"] = uri
    return spec, [sys.executable, "-m", spec.entry, *overrides], env


def _check_inputs(spec: RunSpec) -> None:
    for f in ("train.parquet", "val.parquet"):
        if not (spec.data_dir / f).is_file():
            raise FileNotFoundError(f"verl input not found: {spec.data_dir / f}")
    needs_difficulty = spec.method not in ("vanilla", "dapo")
    if needs_difficulty and (spec.difficulty is None or not spec.difficulty.is_file()):
        raise FileNotFoundError(f"initial difficulty not found: {spec.difficulty} "
                                f"(method {spec.method} starts from it)")


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


def _pool_validation(spec: RunSpec, tracking_uri: str | None, config: Mapping[str, Any]) -> None:
    """``val/acc`` and ``val/n`` from every attempt's verl metrics into the run's history and
    MLflow (``vade.train.verl.validation``): the score the report reads."""
    from vade.train.verl.validation import pool_run_validation, val_item_counts

    files = sorted((spec.out_dir / "verl-metrics").glob("attempt-*.jsonl"),
                   key=lambda p: int(p.stem.split("-")[1]))
    if not files:
        return
    counts = val_item_counts(spec.data_dir / "val.parquet")
    _, experiment = _tracking(config, spec.name)
    pool_run_validation(files, counts, store=spec.out_dir / "history.duckdb", run_id=spec.run_id,
                        tracking_uri=tracking_uri, experiment=experiment)


def launch(config: Mapping[str, Any], *, algorithm: str, method: str, seed: int, model: str,
           data_dir: str | Path, difficulty: str | Path | None, out_dir: str | Path,
           dry_run: bool = False) -> list[str]:
    """Run one cell with verl; returns the command. Raises RuntimeError if verl fails."""
    spec, cmd, extra_env = plan(config, algorithm=algorithm, method=method, seed=seed,
                                model=model, data_dir=data_dir, difficulty=difficulty,
                                out_dir=out_dir)
    if dry_run:
        print(shlex.join(cmd))
        return cmd
    _check_inputs(spec)
    out = spec.out_dir
    (out / "verl-metrics").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **extra_env)
    env["VERL_FILE_LOGGER_PATH"] = str(out / "verl-metrics" / f"attempt-{time.time_ns()}.jsonl")
    if spec.method == "dapo":
        from vade.train.verl.recipe import locate

        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(locate()), env.get("PYTHONPATH"))
                                            if p)
    rc = _stream(cmd, env, out / "train.log")
    try:
        _pool_validation(spec, extra_env.get("MLFLOW_TRACKING_URI"), config)
    except Exception as exc:
        if rc == 0:
            raise
        print(f"pooled validation not written: {exc}", file=sys.stderr)
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


def run(args: Any, config: Mapping[str, Any]) -> int:
    """``vade train --backend verl``: the command's parsed arguments -> :func:`launch`."""
    missing = [k for k in ("algorithm", "method", "model", "data_dir", "out")
               if getattr(args, k, None) in (None, "")]
    if missing:
        raise ValueError(f"--backend verl needs --{missing[0].replace('_', '-')}")
    seed = args.seed if getattr(args, "seed", None) is not None else int(config.get("seed", 0))
    launch(config, algorithm=args.algorithm, method=args.method, seed=int(seed),
           model=str(args.model), data_dir=args.data_dir,
           difficulty=getattr(args, "difficulty", None), out_dir=args.out,
           dry_run=bool(getattr(args, "dry_run", False)))
    return 0
