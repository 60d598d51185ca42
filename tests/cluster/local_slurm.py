"""A real one-node SLURM cluster in a folder: munged, slurmctld and slurmd, started and stopped here.

Why: ``snakemake --profile slurm`` is the user's command, and only a real controller shows what
sbatch, the executor plugin's status polling, retries and SLURM's own kills do to the pipeline.
Debian's ``slurmctld``, ``slurmd`` and ``munge`` packages run unmodified on one machine; what is
made up is only the hardware description: four GPUs declared as GRES and backed by empty
placeholder files (SLURM counts them, nothing binds them; ``CUDA_VISIBLE_DEVICES`` stays empty).

Everything lives under one folder (keys, sockets, spool, state, logs, pid files) and on free
ports, so two clusters (two pytest workers, two users) never meet; clients find theirs through
``SLURM_CONF``. No accounting database: the executor plugin reads job states from ``squeue``
(``status_command: squeue``), reliable because ``MinJobAge`` keeps finished jobs visible for
longer than three of its status intervals. The daemons are stopped by their pid files.

Outside the tests: ``python tests/cluster/local_slurm.py up DIR`` starts one and prints the
``export SLURM_CONF=... PATH=...`` line; ``python tests/cluster/local_slurm.py down DIR`` stops it.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

INSTALL = "apt-get install -y slurmctld slurmd slurm-client munge"
BINARIES = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol",
            "scancel")
GPUS = 4
# Finished jobs stay in squeue and scontrol this long: the tests read a whole run's jobs after it
# ends, and the plugin trusts squeue only above 3 x its first status interval.
MIN_JOB_AGE_S = 3600
# SLURM slots per real CPU. The tests run a smoke pipeline, two fault scenarios and an
# eight-task array side by side, as a cluster's many nodes would (their jobs mostly wait: on
# status polls, on a time limit), and slurmctld never lets a core allocated in one partition serve
# a job of another. So the node declares this many CPUs per real one
# (``SlurmdParameters=config_overrides``); the processes share the real cores (memory stays
# consumable, so big jobs still queue), the GPUs (GRES) are never shared.
SLOTS_PER_CPU = 8


def missing_binaries() -> list[str]:
    """The SLURM and munge programs not on PATH (empty when a cluster can start)."""
    return [b for b in BINARIES if shutil.which(b) is None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_line() -> dict[str, str]:
    """This machine as ``slurmd -C`` describes it: NodeName, CPUs, RealMemory, ..."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    return dict(re.findall(r"(\w+)=(\S+)", out.splitlines()[0]))


@dataclass
class LocalSlurm:
    """One started cluster; ``env`` is what a client (sbatch, snakemake) needs to reach it."""

    root: Path
    node: str
    cpus: int
    memory_mb: int

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) pointed at this cluster: SLURM_CONF,
        and the folder's ``bin`` (the srun shim, see ``write_config``) first on PATH."""
        base = dict(os.environ if base is None else base)
        path = base.get("PATH", os.defpath)
        return {**base, "SLURM_CONF": str(self.conf),
                "PATH": f"{self.root / 'bin'}{os.pathsep}{path}"}

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """A SLURM client command against this cluster (``scontrol``, ``squeue``, ...)."""
        return subprocess.run(list(args), capture_output=True, text=True, check=check,
                              env=self.env(), timeout=60)

    def node_state(self) -> str:
        out = self.run("scontrol", "show", "node", self.node).stdout
        return re.search(r"State=(\S+)", out).group(1)

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job`` as ``{key: value}`` (while SLURM remembers it: MinJobAge)."""
        out = self.run("scontrol", "show", "job", "--oneliner", job_id).stdout
        return dict(re.findall(r"(\S+?)=(\S*)", out))

    def log_tail(self) -> str:
        """The daemons' last log lines, for a failure message."""
        return "\n".join(tail(self.root / "log" / f"{d}.log") for d in ("slurmctld", "slurmd"))

    def close(self) -> None:
        """``stop``, under the name ``contextlib.closing`` calls."""
        self.stop()

    def stop(self) -> None:
        """Cancel the jobs left (their processes outlive slurmd), then SIGTERM each daemon by its
        pid file, slurmd first, and wait for them to leave."""
        if self.node:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self.run("scancel", f"--user={getpass.getuser()}", check=False)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and self.run(
                        "squeue", "-h", "-t", "RUNNING,COMPLETING", check=False).stdout.strip():
                    time.sleep(0.5)
        pids = []
        for name in ("slurmd", "slurmctld", "munged"):
            pid_file = self.root / "run" / f"{name}.pid"
            try:
                pid = int(pid_file.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
                pids.append(pid)
            except (OSError, ValueError, IndexError):
                continue
        deadline = time.monotonic() + 20
        for pid in pids:
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # a zombie child of this process has exited too
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def write_config(root: Path) -> LocalSlurm:
    """The folder's layout, munge key, ``slurm.conf`` and ``gres.conf``; starts nothing."""
    hw = node_line()
    cpus = int(hw["CPUs"]) * SLOTS_PER_CPU
    # a little under the real memory, or slurmd reports less than configured and drains the node
    memory_mb = int(int(hw["RealMemory"]) * 0.9)
    for sub in ("bin", "etc", "run", "log", "state", "spool", "gpus"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "run").chmod(0o711)  # munged wants its socket's folder searchable by all
    key = root / "etc" / "munge.key"
    key.write_bytes(secrets.token_bytes(128))
    key.chmod(0o400)
    for i in range(GPUS):
        (root / "gpus" / f"gpu{i}").touch()
    # Inside a job, the executor plugin's jobstep drops every SLURM_* variable (SLURM_CONF too)
    # before its `srun`; a real cluster's srun then reads /etc/slurm/slurm.conf. This cluster's
    # config is not there (one machine-wide file would make every test cluster the same one), so
    # an `srun` first on the jobs' PATH restores SLURM_CONF and runs the real srun.
    srun = root / "bin" / "srun"
    srun.write_text(f"#!/bin/sh\nSLURM_CONF={root}/etc/slurm.conf exec {shutil.which('srun')} "
                    '"$@"\n')
    srun.chmod(0o755)
    node = hw["NodeName"]
    lines = [
        "ClusterName=vadetest",
        f"SlurmctldHost={node}",
        f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root}/run/munge.sock",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/run/slurmctld.pid",
        f"SlurmdPidFile={root}/run/slurmd.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd.log",
        # debug: slurmctld logs when it sends a job its time-limit warning (--signal)
        "SlurmctldDebug=debug",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SlurmdParameters=config_overrides",   # the declared CPUs (SLOTS_PER_CPU), not the real
        f"MinJobAge={MIN_JOB_AGE_S}",
        "ReturnToService=2",
        "KillWait=5",
        "GresTypes=gpu",
        (f"NodeName={node} CPUs={cpus} Boards={hw.get('Boards', 1)} "
         f"SocketsPerBoard={hw.get('SocketsPerBoard', 1)} "
         f"CoresPerSocket={int(hw.get('CoresPerSocket', 1)) * SLOTS_PER_CPU} "
         f"ThreadsPerCore={hw.get('ThreadsPerCore', 1)} RealMemory={memory_mb} "
         f"Gres=gpu:{GPUS} State=UNKNOWN"),
        # no OverSubscribe: a node running a job of a partition without it is closed to the
        # jobs of a partition with it (and the reverse); the slots come from SLOTS_PER_CPU
        f"PartitionName=cpu Nodes={node} Default=YES MaxTime=INFINITE",
        f"PartitionName=gpu Nodes={node} MaxTime=INFINITE State=UP",
    ]
    (root / "etc" / "slurm.conf").write_text("\n".join(lines) + "\n")
    (root / "etc" / "gres.conf").write_text(
        f"AutoDetect=off\nName=gpu File={root}/gpus/gpu[0-{GPUS - 1}]\n")
    return LocalSlurm(root=root, node=node, cpus=cpus, memory_mb=memory_mb)


def start(root: Path, timeout_s: float = 60) -> LocalSlurm:
    """A running cluster under ``root`` whose node is idle; stops what it started on failure."""
    cluster = write_config(root)
    run, conf = root / "run", str(cluster.conf)
    env = cluster.env()
    daemons = [
        ["munged", "--force", f"--socket={run}/munge.sock", f"--key-file={root}/etc/munge.key",
         f"--pid-file={run}/munged.pid", f"--seed-file={run}/munged.seed",
         f"--log-file={root}/log/munged.log"],
        ["slurmctld", "-f", conf],
        ["slurmd", "-f", conf],
    ]
    try:
        for argv in daemons:
            subprocess.run(argv, check=True, env=env, capture_output=True, timeout=30)
        deadline = time.monotonic() + timeout_s
        state = ""
        while time.monotonic() < deadline:
            state = cluster.run("scontrol", "show", "node", cluster.node, check=False).stdout
            if re.search(r"State=IDLE\b", state):
                return cluster
            time.sleep(0.5)
        raise RuntimeError(f"the SLURM node never became idle: {state.strip()[:400]}\n"
                           + tail(root / "log" / "slurmctld.log"))
    except BaseException:
        cluster.stop()
        raise


def tail(path: Path, n: int = 2000) -> str:
    try:
        return f"== {path}\n{path.read_text()[-n:]}"
    except OSError:
        return f"== {path}: absent"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        print("usage: python tests/cluster/local_slurm.py up|down DIR", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    if argv[0] == "up":
        if missing := missing_binaries():
            print(f"missing {', '.join(missing)}: {INSTALL}", file=sys.stderr)
            return 1
        cluster = start(root)
        print(f"export SLURM_CONF={cluster.conf} PATH={root / 'bin'}:$PATH")
        return 0
    LocalSlurm(root=root, node="", cpus=0, memory_mb=0).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
