"""Ray's CPU count inside a real SLURM job step is the job's allocation, from SLURM's own record.

Nothing stands in: the session's one-node SLURM cluster (``local_slurm``) runs ``srun -c 2``,
and ``vade.job.cpus.allocated_cpus`` runs inside that job step, as in a training job.
The node declares 16 or more CPUs, so the process's affinity (main's fallback when the step sets
neither SLURM_CPUS_PER_TASK nor SLURM_JOB_CPUS_PER_NODE) would not be 2 unless SLURM said so.
"""

from __future__ import annotations

import ast
import sys

import pytest

pytestmark = pytest.mark.cluster

PROBE = ("import os; from vade.job.cpus import allocated_cpus; "
         "print(repr((allocated_cpus(), sorted(k for k in os.environ if 'CPU' in k))))")


def test_ray_cpus_in_a_job_step_are_the_allocation(slurm_cluster):
    for env_without in ((), ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE",
                             "SLURM_JOB_CPUS_PER_NODE")):
        # the second pass removes every CPU variable inside the step: scontrol answers
        code = ("import os\n" + "".join(f"os.environ.pop({k!r}, None)\n" for k in env_without)
                + PROBE.replace("; ", "\n"))
        # as a training job asks (slurm/config.yaml via resources.train: --gpus, --cpus-per-gpu)
        proc = slurm_cluster.run("srun", "--partition=gpu", "-n", "1", "--gpus=1",
                                 "--cpus-per-gpu=2", "--mem=500", sys.executable, "-c", code,
                                 check=False)
        assert proc.returncode == 0, proc.stderr[-2000:] + slurm_cluster.log_tail()
        (cpus, source), names = ast.literal_eval(proc.stdout.strip().splitlines()[-1])
        print(f"in the job step: {cpus} CPUs from {source}; CPU variables set: {names}")
        assert slurm_cluster.cpus > 2
        assert cpus == 2, (source, names)
        assert not source.startswith("os.sched_getaffinity"), (source, names)
        if env_without:
            assert source.startswith("scontrol show job"), source
