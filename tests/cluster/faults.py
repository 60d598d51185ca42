"""The fault scenarios of test_slurm_faults.py: two training runs through SLURM side by side,
each with its faults done to it at the right moment (the module doc of test_slurm_faults.py).

Why a module of its own: the moments are read from outside the jobs, as an operator would see
them (the trainer's process in /proc, its checkpoints, its log), while both Snakemake runs go;
the test module keeps only what is asserted.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from test_pipeline import clone_env

from .local_slurm import LocalSlurm
from .pipeline import PROFILE, ROOT, Runs, copy_outputs, failure, slurm_cmd

KILLED, WARNED = "tiny-grpo-vade-s0", "tiny-grpo-vanilla-s0"
DRAINED_S = 5           # how long the first job is kept waiting on the drained node
KILL_MIN = 2            # --time=2 for the killed run: its first attempt reaches a checkpoint
WARN_MIN, WARN_S = 3, 60   # --time=3 --signal=23@60: the warning 90 to 120 s after the start
SIGURG_BIT = 1 << (signal.SIGURG - 1)
WARNING_LINE = re.compile(r"\[(\S+)\] debug:\s+send_job_warn_signal: warning signal 23 to "
                          r"JobId=(\d+)")


def limits_profile(dest: Path, runtime: int, slurm_extra: str | None) -> Path:
    """A profile over the site's: the training rule gets ``runtime`` minutes (and
    ``slurm_extra``, else no warning) on one GPU, and three retries."""
    site = yaml.safe_load((ROOT / PROFILE / "config.yaml").read_text())
    train = {k: v for k, v in site["set-resources"]["train"].items() if k != "slurm_extra"}
    train.update(runtime=runtime, gpu=1, **({"slurm_extra": slurm_extra} if slurm_extra else {}))
    dest.mkdir(parents=True)
    (dest / "config.yaml").write_text(yaml.safe_dump(
        {"retries": 3, "set-resources": {**site["set-resources"], "train": train}}))
    return dest


def trainer_pid(work: Path, run: str) -> int | None:
    """The ``python -m vade train`` process of ``run`` in ``work`` (not its shell)."""
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or os.readlink(proc / "cwd") != str(work):
                continue
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv[1:4] == ["-m", "vade", "train"] and any(a.endswith(run) for a in argv):
            return int(proc.name)
    return None


def handles_sigurg(pid: int) -> bool:
    """The trainer has installed its checkpoint-signal handler (``SigCgt`` in /proc)."""
    with contextlib.suppress(OSError):
        caught = re.search(r"^SigCgt:\s*([0-9a-f]+)", Path(f"/proc/{pid}/status").read_text(),
                           re.MULTILINE)
        return bool(caught) and bool(int(caught.group(1), 16) & SIGURG_BIT)
    return False


def slurm_job_of(pid: int) -> str:
    environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
    return dict(v.split("=", 1) for v in environ if "=" in v)["SLURM_JOB_ID"]


@dataclass
class Scenario:
    """One Snakemake run of one training job; ``act[i]`` is done to the i-th trainer (attempt)
    once it returns true, and each attempt's train log is kept (the next one truncates it)."""

    work: Path
    run: str
    proc: subprocess.Popen
    act: dict[int, Callable[[Scenario, int], bool]]
    pids: list[int] = field(default_factory=list)
    done: set[int] = field(default_factory=set)
    logs: list[str] = field(default_factory=list)
    written: dict[str, float] = field(default_factory=dict)  # checkpoint -> first mtime seen
    notes: dict[str, object] = field(default_factory=dict)
    scanned: float = 0.0
    out: str = ""

    @property
    def checkpoint_dir(self) -> Path:
        return self.work / "results" / "tiny" / "runs" / self.run / "checkpoints"

    def poll(self) -> None:
        current = self.pids[-1] if self.pids else None
        if (current is None or not Path(f"/proc/{current}").exists()) \
                and time.monotonic() - self.scanned > 0.2:
            self.scanned = time.monotonic()
            pid = trainer_pid(self.work, self.run)
            if pid is not None and pid not in self.pids:
                self.pids.append(pid)
        i = len(self.pids) - 1
        if i in self.act and i not in self.done:
            with contextlib.suppress(OSError, KeyError):
                if self.act[i](self, self.pids[i]):
                    self.done.add(i)
        for p in self.checkpoint_dir.glob("step_*.json"):
            with contextlib.suppress(OSError):
                self.written.setdefault(p.name, p.stat().st_mtime)
        try:
            text = (self.work / "logs" / "tiny" / "train" / f"{self.run}.log").read_text(
                errors="replace")
        except OSError:
            return
        if self.logs and text.startswith(self.logs[-1]):
            self.logs[-1] = text
        elif text and not (self.logs and self.logs[-1].startswith(text)):
            self.logs.append(text)


def hold_once_it_handles_sigurg(s: Scenario, pid: int) -> bool:
    if not handles_sigurg(pid):
        return False
    os.kill(pid, signal.SIGSTOP)
    s.notes.setdefault("held", []).append(time.time())
    return True


def cancel_after_first_checkpoint(s: Scenario, pid: int) -> bool:
    if not list(s.checkpoint_dir.glob("step_*.json")):
        return False
    os.kill(pid, signal.SIGSTOP)   # a step of minutes: scancel finds it mid-run
    job = slurm_job_of(pid)
    s.notes.update(cancelled=job, checkpoints=sorted(p.name for p in
                                                     s.checkpoint_dir.glob("step_*.json")))
    s.notes["cluster"].run("scancel", job)
    return True


def start(smoke: Runs, cluster: LocalSlurm, tmp: Path, run: str, profile: Path,
          act: dict[int, Callable[[Scenario, int], bool]]) -> Scenario:
    work = copy_outputs(smoke.slurm, tmp / "clone")
    shutil.rmtree(work / "results" / "tiny" / "runs" / run)
    (work / "logs" / "tiny" / "train" / f"{run}.log").unlink()   # the copied run's log
    with (tmp / "snakemake.log").open("w") as log:   # a file: a pipe unread for minutes fills
        proc = subprocess.Popen(slurm_cmd("--profile", str(profile),
                                          f"results/tiny/runs/{run}/done.json"), cwd=work,
                                env=cluster.env(clone_env()), stdout=log,
                                stderr=subprocess.STDOUT)
    return Scenario(work=work, run=run, proc=proc, act=act, notes={"cluster": cluster})


def jobs_of(cluster: LocalSlurm, run: str, after: int) -> list[str]:
    """SLURM ids above ``after`` of ``run``'s training jobs (by the plugin's job comment)."""
    method = run.split("-")[-2]
    out = cluster.run("squeue", "--states=all", "-h", "-o", "%i|%k").stdout
    return [i for i, comment in (line.split("|") for line in out.split())
            if int(i.split("_")[0]) > after and comment.endswith(f"_grpo_{method}_0")]


def run(smoke_runs: Runs, cluster: LocalSlurm, tmp: Path) -> dict[str, Scenario]:
    """Both scenarios side by side (module doc); raises with the logs when a run fails."""
    last = max([0, *(int(i.split("_")[0]) for i in cluster.run(
        "squeue", "--states=all", "-h", "-o", "%i").stdout.split())])
    t0 = time.monotonic()
    cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=drain",
                "reason=vade-test")
    both = (
        start(smoke_runs, cluster, tmp / "killed", KILLED, limits_profile(tmp / "p1", KILL_MIN, None),
              {0: cancel_after_first_checkpoint, 1: hold_once_it_handles_sigurg}),
        start(smoke_runs, cluster, tmp / "warned", WARNED,
              limits_profile(tmp / "p2", WARN_MIN, f"'--signal=23@{WARN_S}'"),
              {0: hold_once_it_handles_sigurg}),
    )
    killed = both[0]
    try:
        deadline = time.monotonic() + 900
        while not jobs_of(cluster, KILLED, last) and time.monotonic() < deadline:
            if killed.proc.poll() is not None:
                break
            time.sleep(0.2)
        time.sleep(DRAINED_S)
        job = (jobs_of(cluster, KILLED, last) or ["none"])[0]
        killed.notes["drained"] = {**(cluster.job(job) if job != "none" else {}), "history exists": str(
            (killed.work / "results" / "tiny" / "runs" / KILLED / "history.duckdb").exists())}
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume")
        while any(s.proc.poll() is None for s in both) and time.monotonic() < deadline:
            for s in both:
                s.poll()
            time.sleep(0.01)
        for s in both:
            s.poll()
    finally:
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume",
                    check=False)
        for s in both:
            if s.proc.poll() is None:
                s.proc.kill()   # Snakemake's own SIGTERM handling waits on its jobs
                s.proc.wait()
            s.out = (s.work.parent / "snakemake.log").read_text(errors="replace")
    for s in both:
        if s.proc.returncode != 0:
            raise RuntimeError(failure(f"the run of {s.run}", s.out, s.work, cluster.log_tail()))
    both[0].notes["seconds"] = time.monotonic() - t0
    return {"killed": both[0], "warned": both[1]}


