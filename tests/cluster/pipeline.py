"""The smoke pipeline as the real-cluster tests run it: locally, and through SLURM with a profile.

Shared by the pipeline and fault tests: the config (the smoke scale of tests/test_pipeline.py on
the smallest grid that runs every rule), the ``snakemake --profile slurm --profile <site>``
command a user types, and the one completed pair of runs every test compares against.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from test_pipeline import clone_env, smoke_scale
from workflow_copy import clean_copy

from .local_slurm import LocalSlurm

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROFILE = "tests/cluster/profile"   # the test cluster's site profile, over slurm/
CONFIG = "config/cluster.yaml"
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+)")
RUNS = ("tiny-grpo-vade-s0", "tiny-grpo-vanilla-s0")


def cluster_scale(cfg: dict) -> None:
    """GRPO with vanilla and VADE (VADE adds the initial-difficulty job), one evaluation repeat,
    no sampler lab: every rule of the pipeline, each as few times as possible."""
    smoke_scale(cfg)
    cfg["experiments"]["grid"] = [{"models": ["tiny"], "algorithms": ["grpo"],
                                   "methods": ["vanilla", "vade"]}]
    cfg["simulate"]["enabled"] = False


def write_config(workdir: Path, **tracking: str) -> Path:
    cfg = yaml.safe_load((ROOT / "config" / "tiny.yaml").read_text())
    cluster_scale(cfg)
    cfg["tracking"].update(tracking)
    path = workdir / CONFIG
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def snakemake_cmd(*args: str) -> list[str]:
    return [str(BIN / "snakemake"), "--configfile", CONFIG, *args]


def slurm_cmd(*args: str) -> list[str]:
    """What a user types on the login node (the project profile, the site's on top)."""
    return snakemake_cmd("--profile", "slurm", "--profile", PROFILE, *args)


def through_slurm(workdir: Path, cluster: LocalSlurm, *args: str,
                  timeout: int = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(slurm_cmd(*args), cwd=workdir, capture_output=True, text=True,
                          timeout=timeout, env=cluster.env(clone_env()), check=False)


def failure(what: str, out: str, workdir: Path, extra: str = "") -> str:
    logs = "\n".join(f"== {p}\n{p.read_text()[-2000:]}"
                     for p in sorted((workdir / "logs").rglob("*.log")))
    return f"{what} failed:\n{out[-6000:]}\n{logs}\n{extra}"


@dataclass
class Runs:
    """One config run locally and through SLURM (``log``: Snakemake's output of the latter)."""

    local: Path
    slurm: Path
    log: str
    seconds: dict[str, float]


def run_both(tmp: Path, cluster: LocalSlurm, mlflow_uri: str) -> Runs:
    """The local run in the background while the SLURM run (logging to ``mlflow_uri``) goes:
    SLURM's jobs wait on status polls most of the time. Raises with the logs on a failure."""
    here = clean_copy(tmp / "local")
    write_config(here)
    on_slurm = clean_copy(tmp / "on-slurm")
    write_config(on_slurm, mlflow_uri=mlflow_uri, experiment="slurm-smoke")
    t0 = time.monotonic()
    bg = subprocess.Popen(snakemake_cmd("--cores", "2"), cwd=here, env=clone_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    local: dict[str, object] = {}

    def wait_local() -> None:
        local["out"] = bg.communicate(timeout=2400)[0]
        local["seconds"] = time.monotonic() - t0

    waiter = threading.Thread(target=wait_local, daemon=True)
    waiter.start()
    try:
        proc = through_slurm(on_slurm, cluster)
        t_slurm = time.monotonic() - t0
        waiter.join(timeout=1200)
    finally:
        if bg.poll() is None:
            bg.terminate()
            bg.wait()
    local_out, t_local = str(local.get("out", "")), float(local.get("seconds", -1))
    if proc.returncode != 0:
        raise RuntimeError(failure("the SLURM run", proc.stdout + proc.stderr, on_slurm,
                                   cluster.log_tail()))
    if bg.returncode != 0:
        raise RuntimeError(failure("the local run", local_out, here))
    return Runs(local=here, slurm=on_slurm, log=proc.stdout + proc.stderr,
                seconds={"slurm": t_slurm, "local (concurrently)": t_local})


def copy_outputs(src: Path, dest: Path) -> Path:
    """A completed workdir, outputs and Snakemake's records included, modification times kept
    (so the copy is as up to date as the original)."""
    shutil.copytree(src, dest, symlinks=True)
    return dest
