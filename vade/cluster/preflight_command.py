"""``vade preflight --config C --stage S``: a GPU job's environment, GPUs, assets, disk and SLURM
profile checked in seconds, each failure naming its knob; exit status 1 before any model loads
(``vade.cluster.preflight``). Workflow rules run it first in every GPU job, with the whole
config from ``$VADE_WORKFLOW_CONFIG`` (set by ``workflow/rules/common.smk``, never a rule
param: changing a cluster setting reruns nothing)."""

from __future__ import annotations

import argparse
import json
import os

from vade.cluster.preflight import STAGES, run_checks
from vade.config_io import add_config_arguments, load_config
from vade.job.config import job_env, near_miss_env

__all__ = ["CONFIG_ENV", "add_arguments", "run"]

CONFIG_ENV = "VADE_WORKFLOW_CONFIG"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, required=False)
    parser.add_argument("--stage", required=True, choices=STAGES)
    parser.add_argument("--gpus", type=int, metavar="N",
                        help="GPUs the job must see (default: resources.<stage>.gpu)")
    parser.add_argument("--out", default="results", metavar="DIR",
                        help="where the stage writes (disk check)")
    parser.add_argument("--model", help="the training run's model (disk for its checkpoints)")
    parser.add_argument("--profile", default="slurm", metavar="DIR",
                        help="SLURM profile folder whose placeholders must be replaced")
    parser.add_argument("--no-profile", action="store_true",
                        help="skip the profile check (inside a job: sbatch accepted it)")


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    if not config:
        raw = os.environ.get(CONFIG_ENV)
        if not raw:
            raise ValueError(f"vade preflight needs --config, --config-json or ${CONFIG_ENV}")
        config = json.loads(raw)
    environ = dict(os.environ)
    if CONFIG_ENV not in os.environ and job_env(config):
        # by hand, outside the workflow: this shell lacks what the workflow gives every GPU job
        # (HF_HOME at the cache, offline); check the job's environment, and say so
        environ.update(job_env(config))
        print("by hand: checking the environment the workflow gives the job "
              f"({', '.join(sorted(job_env(config)))} from the config), not this shell's",
              flush=True)
    for line in near_miss_env(os.environ):
        print(f"warn {line}", flush=True)
    checks = run_checks(config, args.stage, gpus=args.gpus, out_dir=args.out, model=args.model,
                        profile=None if args.no_profile else args.profile, environ=environ)
    for c in checks:
        print(c.line(), flush=True)
    failed = [c for c in checks if not c.ok]
    if failed:
        print(f"preflight of stage {args.stage}: {len(failed)} problem(s); nothing was loaded")
        return 1
    print(f"preflight of stage {args.stage}: all {len(checks)} checks passed")
    return 0
