"""The tiny pipeline at smoke scale, run once per test run and shared by the tests that read it.

Why: a run of ``config/tiny.yaml`` through Snakemake (data -> tiny model -> initial difficulty ->
6 training runs -> 7 evaluations -> report, plus the sampler lab) is the suite's most expensive
setup. ``build_once`` runs it in a clean copy of the repository (``workflow_copy.clean_copy``)
under a folder every pytest-xdist worker of one run shares, behind a file lock: the first worker
to ask builds it, the others wait and reuse it. Tests read it; a test that changes outputs works
in its own copy (``copy_of``). Dry runs (``-n``) with new config files are reads.

Smoke scale: the same stages, models, methods and algorithms; fewer rows, warm-start and
training steps.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from filelock import FileLock
from workflow_copy import clean_copy

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CONFIG = "config/smoke.yaml"


def clone_env() -> dict[str, str]:
    """A user's shell in the clone: the venv on PATH, offline, no MLflow URI of the tests' own."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "WANDB_MODE": "disabled"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def snakemake(workdir: Path, *args: str, timeout: int = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "snakemake"), *args], cwd=workdir, capture_output=True,
                          text=True, timeout=timeout, env=clone_env(), check=False)


def smoke_scale(cfg: dict) -> None:
    cfg["data"]["synthetic"].update(train=96, val=16, warmstart=256, eval=8)
    cfg["models"]["tiny"]["warm_start"].update(steps=20)
    cfg["train"].update(steps=4, batch_size=8, val_every=2, checkpoint_every=2)
    cfg["evaluate"].update(repeats=1)
    cfg["simulate"]["quick"] = True


def write_config(workdir: Path, name: str, edit: Callable[[dict], None] | None = None) -> Path:
    """``config/<name>`` in ``workdir``: tiny.yaml at smoke scale, then ``edit`` applied."""
    cfg = yaml.safe_load((ROOT / "config" / "tiny.yaml").read_text())
    smoke_scale(cfg)
    if edit is not None:
        edit(cfg)
    path = workdir / "config" / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def build(workdir: Path) -> str | None:
    """Run the smoke pipeline in a clean copy at ``workdir``; None, or why it failed."""
    clean_copy(workdir)
    write_config(workdir, Path(CONFIG).name)
    proc = snakemake(workdir, "--cores", "2", "--configfile", CONFIG)
    if proc.returncode == 0:
        return None
    logs = "\n".join(f"== {p}\n{p.read_text()[-3000:]}"
                     for p in sorted((workdir / "logs").rglob("*.log")))
    return f"tiny pipeline failed:\n{proc.stderr[-6000:]}\n{logs}"


def copy_of(completed: Path, dest: Path) -> Path:
    """``completed`` copied to ``dest`` (modification times kept: nothing is stale that was not).

    Left out: Snakemake's locks (a dry run on another worker may hold the shared clone's while
    this copies: they belong to that process, not the copy) and bytecode (which a test importing
    the clone's package may be writing)."""
    def left_out(folder: str, names: list[str]) -> set[str]:
        skip = {"__pycache__", "locks"} if Path(folder).name == ".snakemake" else {"__pycache__"}
        return skip.intersection(names)

    shutil.copytree(completed, dest, symlinks=True, ignore=left_out)
    return dest


def build_once(shared: Path) -> tuple[Path, str | None]:
    """The smoke pipeline under ``shared`` (a folder all workers of one run see), built once."""
    workdir, status = shared / "clone", shared / "status.json"
    with FileLock(str(shared / "build.lock")):
        if not status.exists():
            status.write_text(json.dumps({"error": build(workdir)}))
    return workdir, json.loads(status.read_text())["error"]
