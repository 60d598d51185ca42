"""The fault scenarios of test_slurm_faults.py: three training runs through SLURM side by side,
each with its faults done to it at the right moment (the module doc of test_slurm_faults.py).

Why a module of its own: the moments are read from outside the jobs, as an operator would see
them (the trainer's process in /proc, its checkpoints, its log), while the Snakemake runs go;
the test module keeps only what is asserted.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from test_pipeline import clone_env

from .local_slurm import LocalSlurm
from .pipeline import PROFILE, ROOT, copy_outputs, failure, slurm_cmd

KILLED, WARNED, CANCELLED = "tiny-grpo-vade-s0", "tiny-grpo-vanilla-s0", "tiny-grpo-vade-s0"
DRAINED_S = 5           # how long the cancelled run's job is kept waiting on the drained node
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


def hold_once_training_handles_sigurg(s: Scenario, pid: int) -> bool:
    """Held mid-run: once the trainer handles SIGURG and its history is open. The handler is
    installed before the data and model load (a signal then stops the run before training, with
    nothing to checkpoint); the history opens once training starts."""
    history = s.work / "results" / "tiny" / "runs" / s.run / "history.duckdb"
    if not handles_sigurg(pid) or not history.exists():
        return False
    os.kill(pid, signal.SIGSTOP)
    s.notes.setdefault("held", []).append(time.time())
    return True


def checkpoints(s: Scenario) -> list[str]:
    return sorted(p.name for p in s.checkpoint_dir.glob("step_*.json"))


def hold_after_its_first_checkpoint(s: Scenario, pid: int) -> bool:
    """Held once the attempt has written a checkpoint of its own (one that was not there when it
    was first seen): a step of minutes, mid-run."""
    before = s.notes.setdefault("present", {}).setdefault(pid, checkpoints(s))
    if not set(checkpoints(s)) - set(before):
        return False
    os.kill(pid, signal.SIGSTOP)
    s.notes["checkpoints"] = checkpoints(s)
    return True


def cancel_after_its_first_checkpoint(s: Scenario, pid: int) -> bool:
    """``scancel`` the attempt mid-run, after a checkpoint of its own."""
    if not hold_after_its_first_checkpoint(s, pid):
        return False
    job = slurm_job_of(pid)
    s.notes["cancelled"] = job
    s.notes["cluster"].run("scancel", job)
    return True


def start(work: Path, cluster: LocalSlurm, run: str, profile: Path,
          act: dict[int, Callable[[Scenario, int], bool]]) -> Scenario:
    """``run``'s training through SLURM in ``work``, a copy of a workdir whose data, model and
    initial difficulty are made (its Snakemake log beside it)."""
    with (work.parent / "snakemake.log").open("w") as log:   # a file: a pipe unread for minutes fills
        proc = subprocess.Popen(slurm_cmd("--profile", str(profile),
                                          f"results/tiny/runs/{run}/done.json"), cwd=work,
                                env=cluster.env(clone_env()), stdout=log,
                                stderr=subprocess.STDOUT)
    return Scenario(work=work, run=run, proc=proc, act=act, notes={"cluster": cluster})


def job_states(cluster: LocalSlurm) -> dict[str, dict[str, str]]:
    """Working directory -> {SLURM id: state} of every job SLURM remembers (one squeue)."""
    out = cluster.run("squeue", "--states=all", "-h", "-o", "%i|%T|%Z").stdout
    by_dir: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        i, state, cwd = line.split("|", 2)
        by_dir.setdefault(cwd, {})[i] = state
    return by_dir


class Running:
    """The three scenarios (module doc of test_slurm_faults.py), watched from a thread of their
    own while the session's other cluster tests run (the scenarios spend minutes waiting on
    SLURM's time limits); ``finish`` waits for them.

    The time-limited two start at once; the node is drained only once their jobs run (a drain
    leaves running jobs alone), for the third one's first job, and resumed ``DRAINED_S`` after
    that job is queued.
    """

    def __init__(self, upstream: Path, cluster: LocalSlurm, tmp: Path,
                 timeout_s: float = 900) -> None:
        self.cluster, self.tmp = cluster, tmp
        # every copy now, while the upstream workdir is idle (its run goes on once this returns)
        work = {name: copy_outputs(upstream, tmp / name / "clone")
                for name in ("killed", "warned", "cancelled")}
        self.t0 = time.monotonic()
        self.deadline = self.t0 + timeout_s
        self.error: Exception | None = None
        self.stopping = threading.Event()
        self.seconds = 0.0
        self.scenarios = {
            "killed": start(work["killed"], cluster, KILLED,
                            limits_profile(tmp / "p-killed", KILL_MIN, None),
                            {0: hold_after_its_first_checkpoint}),
            "warned": start(work["warned"], cluster, WARNED,
                            limits_profile(tmp / "p-warned", WARN_MIN,
                                           f"'--signal=23@{WARN_S}'"),
                            {0: hold_once_training_handles_sigurg}),
        }
        self.third = work["cancelled"]
        self.thread = threading.Thread(target=self._watch, name="slurm-faults", daemon=True)
        self.thread.start()

    def _going(self) -> bool:
        return not self.stopping.is_set() and time.monotonic() < self.deadline

    def _poll_until(self, done: Callable[[], bool], every_s: float = 0.0) -> None:
        """Poll every scenario every 10 ms until ``done()`` (asked every ``every_s``)."""
        asked = 0.0
        while self._going():
            if time.monotonic() - asked >= every_s:
                asked = time.monotonic()
                if done():
                    return
            for s in self.scenarios.values():
                s.poll()
            time.sleep(0.01)

    def _running(self) -> bool:
        states = job_states(self.cluster)
        return all("RUNNING" in states.get(str(s.work), {}).values()
                   for s in self.scenarios.values()) or any(
            s.proc.poll() is not None for s in self.scenarios.values())

    def _drain_for_the_third(self) -> None:
        node = f"nodename={self.cluster.node}"
        self.cluster.run("scontrol", "update", node, "state=drain", "reason=vade-test")
        try:
            s = self.scenarios["cancelled"] = start(
                self.third, self.cluster, CANCELLED,
                limits_profile(self.tmp / "p-cancelled", 10, None),
                {0: cancel_after_its_first_checkpoint})
            # the other two keep being watched (polled) all the while
            queued: dict[str, str] = {}

            def is_queued() -> bool:
                queued.update(job_states(self.cluster).get(str(s.work), {}))
                return bool(queued) or s.proc.poll() is not None

            self._poll_until(is_queued, every_s=0.2)
            until = time.monotonic() + DRAINED_S
            self._poll_until(lambda: time.monotonic() >= until)
            history = s.work / "results" / "tiny" / "runs" / s.run / "history.duckdb"
            s.notes["drained"] = {**(self.cluster.job(min(queued)) if queued else {}),
                                  "history exists": str(history.exists())}
        finally:
            self.cluster.run("scontrol", "update", node, "state=resume", check=False)

    def _watch(self) -> None:
        try:
            self._poll_until(self._running, every_s=0.5)
            self._drain_for_the_third()
            self._poll_until(lambda: all(s.proc.poll() is not None
                                         for s in self.scenarios.values()))
            for s in self.scenarios.values():
                s.poll()
        except Exception as exc:  # noqa: BLE001 (any: finish reports it, in the test thread)
            self.error = exc
        finally:
            for s in self.scenarios.values():
                if s.proc.poll() is None:
                    s.proc.kill()   # Snakemake's own SIGTERM handling waits on its jobs
                    s.proc.wait()
                s.out = (s.work.parent / "snakemake.log").read_text(errors="replace")
            self.seconds = time.monotonic() - self.t0

    def finish(self) -> dict[str, Scenario]:
        """The scenarios once their runs ended; raises with the logs when one failed."""
        self.thread.join(max(1.0, self.deadline - time.monotonic() + 60))
        if self.thread.is_alive() or self.error is not None:
            raise RuntimeError(f"watching the fault scenarios failed: {self.error!r} "
                               f"(after {time.monotonic() - self.t0:.0f} s)")
        for s in self.scenarios.values():
            if s.proc.returncode != 0:
                raise RuntimeError(failure(f"the run of {s.run}", s.out, s.work,
                                           self.cluster.log_tail()))
        return self.scenarios

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(60)
