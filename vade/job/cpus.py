"""The CPUs this job may use (SLURM's allocation, else this process's affinity)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["allocated_cpus"]


def allocated_cpus(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(CPUs this job may use, where that came from). Ray counts every CPU of the node unless
    told (verl's ppo_trainer.yaml says to set ``ray_init.num_cpus`` under SLURM); a 16-CPU
    allocation on a 128-CPU node would otherwise get 128 worker slots."""
    env = os.environ if environ is None else environ
    per_task = env.get("SLURM_CPUS_PER_TASK", "").strip()
    if per_task.isdigit() and int(per_task) > 0:
        return int(per_task), "SLURM_CPUS_PER_TASK"
    per_node = env.get("SLURM_JOB_CPUS_PER_NODE", "").strip()
    m = re.match(r"^(\d+)", per_node)   # "16", "16(x2)" or "8,4": this (first) node's count
    if m and int(m.group(1)) > 0:
        return int(m.group(1)), "SLURM_JOB_CPUS_PER_NODE"
    return len(os.sched_getaffinity(0)), "os.sched_getaffinity (the CPUs this process may use)"
