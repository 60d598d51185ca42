"""The CPUs this job may use: SLURM's own record of the job, else this process's affinity."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

__all__ = ["allocated_cpus"]


def allocated_cpus(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(CPUs this job may use, where that came from). Ray counts every CPU of the node unless
    told (verl's ppo_trainer.yaml says to set ``ray_init.num_cpus`` under SLURM); a 16-CPU
    allocation on a 128-CPU node would otherwise get 128 worker slots. From SLURM's own record
    of the job: its variables, and where a job step sets none of the per-task/per-node ones
    (SLURM 22.05 sets neither SLURM_CPUS_PER_TASK nor SLURM_JOB_CPUS_PER_NODE in a step),
    ``scontrol show job``; the process's CPU affinity only outside SLURM (it is the allocation
    only where cgroups confine cores)."""
    env = os.environ if environ is None else environ
    for key in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE"):
        m = re.match(r"^(\d+)", env.get(key, "").strip())  # "16", "16(x2)", "8,4": this node's
        if m and int(m.group(1)) > 0:
            return int(m.group(1)), key
    job = env.get("SLURM_JOB_ID", "").strip()
    if job.isdigit():
        cpus = _scontrol_cpus(job, env)
        if cpus:
            return cpus, f"scontrol show job {job} (NumCPUs / NumNodes)"
    return len(os.sched_getaffinity(0)), "os.sched_getaffinity (the CPUs this process may use)"


def _scontrol_cpus(job: str, env: Mapping[str, str]) -> int | None:
    """CPUs per node of a job from ``scontrol show job -o``; None when it cannot say."""
    exe = shutil.which("scontrol", path=env.get("PATH"))
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "show", "job", "-o", job], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    cpus, nodes = re.search(r"\bNumCPUs=(\d+)", out), re.search(r"\bNumNodes=(\d+)", out)
    if not cpus or int(cpus.group(1)) < 1:
        return None
    return int(cpus.group(1)) // max(1, int(nodes.group(1)) if nodes else 1)
