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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
JOB_MEM_MB = 1500
# what every training job starts from, with the data they read (the fault scenarios copy them
# from the local run)
UPSTREAM = ("results/tiny/models/tiny/done.json", "results/tiny/difficulty/tiny/initial.parquet")


def cluster_scale(cfg: dict) -> None:
    """GRPO with vanilla and VADE (VADE adds the initial-difficulty job), one evaluation repeat,
    no sampler lab: every rule of the pipeline, each as few times as possible; small jobs."""
    smoke_scale(cfg)
    # the memory a tiny job asks SLURM for (the default is 8 GB a job): the smoke runs and the
    # fault scenarios share the node's memory (SLURM counts it: CR_Core_Memory)
    cfg["resources"] = {kind: {"mem_mb": JOB_MEM_MB} for kind in (
        "data", "model", "difficulty", "train", "evaluate", "report")}
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


@dataclass
class Started:
    """Both smoke runs under way: ``local`` has finished its upstream stages (data, model,
    initial difficulty; ``upstream_s`` after the start) and goes on in the background, as does the
    SLURM run; ``finish`` waits for both."""

    local: Path
    slurm: Path
    cluster: LocalSlurm
    procs: dict[str, subprocess.Popen]
    t0: float
    upstream_s: float
    seconds: dict[str, float] = field(default_factory=dict)

    def _wait(self, name: str, timeout: float) -> str:
        proc = self.procs[name]
        proc.wait(timeout=max(1.0, timeout))
        self.seconds.setdefault(name, time.monotonic() - self.t0)
        return (self.local.parent / f"{name}.log").read_text(errors="replace")

    def finish(self, timeout: float = 1200) -> Runs:
        """Both runs' outcome; raises with the logs when either failed (or overran)."""
        deadline = time.monotonic() + timeout
        try:
            local_out = self._wait("local", deadline - time.monotonic())   # the first to end
            out = self._wait("slurm", deadline - time.monotonic())
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"the smoke runs overran {timeout:.0f} s ({exc})") from exc
        if self.procs["slurm"].returncode != 0:
            raise RuntimeError(failure("the SLURM run", out, self.slurm, self.cluster.log_tail()))
        if self.procs["local"].returncode != 0:
            raise RuntimeError(failure("the local run", local_out, self.local))
        return Runs(local=self.local, slurm=self.slurm, log=out,
                    seconds={"slurm": self.seconds["slurm"],
                             "local (concurrently)": self.seconds["local"]})

    def stop(self) -> None:
        for proc in self.procs.values():
            stop(proc)


def start_both(tmp: Path, cluster: LocalSlurm, mlflow_uri: str,
               upstream_done: Callable[[Path], object]) -> Started:
    """The SLURM run (logging to ``mlflow_uri``) in the background, then the local run's
    upstream stages in the foreground, ``upstream_done(local workdir)`` (the fault scenarios copy
    it and start), then the rest of the local run in the background: SLURM's jobs wait on status
    polls most of the time, so the machine's CPUs go to the local run meanwhile."""
    here = clean_copy(tmp / "local")
    write_config(here)
    on_slurm = clean_copy(tmp / "on-slurm")
    write_config(on_slurm, mlflow_uri=mlflow_uri, experiment="slurm-smoke")
    t0 = time.monotonic()
    procs = {"slurm": background(slurm_cmd(), on_slurm, tmp / "slurm.log",
                                 cluster.env(clone_env()))}
    try:
        upstream = subprocess.run(snakemake_cmd("--cores", "2", *UPSTREAM), cwd=here,
                                  env=clone_env(), capture_output=True, text=True, check=False,
                                  timeout=600)
        if upstream.returncode != 0:
            raise RuntimeError(failure("the local run's upstream stages",
                                       upstream.stdout + upstream.stderr, here))
        upstream_s = time.monotonic() - t0
        upstream_done(here)
        procs["local"] = background(snakemake_cmd("--cores", "2"), here, tmp / "local.log",
                                    clone_env())
    except BaseException:
        Started(here, on_slurm, cluster, procs, t0, 0.0).stop()
        raise
    return Started(here, on_slurm, cluster, procs, t0, upstream_s)


def background(cmd: list[str], cwd: Path, log: Path, env: dict[str, str]) -> subprocess.Popen:
    """``cmd`` with its output in ``log`` (a file: a pipe unread for minutes fills)."""
    with log.open("w") as out:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen, grace_s: float = 30) -> None:
    """SIGTERM (Snakemake cancels its SLURM jobs), then SIGKILL if it has not ended in
    ``grace_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def copy_outputs(src: Path, dest: Path) -> Path:
    """A completed workdir, outputs and Snakemake's records included, modification times kept
    (so the copy is as up to date as the original)."""
    shutil.copytree(src, dest, symlinks=True)
    return dest
