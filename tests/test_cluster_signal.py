"""The profile's time-limit warning reaches sbatch, and is a signal the trainers handle.

Real: slurm/config.yaml, snakemake-executor-plugin-slurm's own submit-string builder and its
``slurm_extra`` validation. Stand-in: the job object (resources only), since no sbatch runs here.
"""

from __future__ import annotations

import ast
import signal
from types import SimpleNamespace

import yaml

from vade.job.timelimit import signal_names


class _Resources(dict):
    __getattr__ = dict.get


def test_the_training_rule_asks_sbatch_for_the_warning_signal():
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

    profile = yaml.safe_load(open("slurm/config.yaml", encoding="utf-8"))
    raw = profile["set-resources"]["train"]["slurm_extra"]
    extra = ast.literal_eval(raw)   # quoted as the plugin documents slurm_extra in a profile
    sig, seconds = extra.removeprefix("--signal=").split("@")
    assert int(sig) == signal.SIGURG and int(seconds) == 1800
    # SIGURG's default action is to be ignored: processes without a handler live on
    assert "URG" in signal_names({})
    job = SimpleNamespace(resources=_Resources(gpu=4, nodes=1, tasks_per_gpu=0,
                                               cpus_per_gpu=8, mem_mb=400000, runtime=2880,
                                               slurm_extra=extra), threads=1)
    validate_slurm_extra(job)               # not an option the plugin manages itself
    call = get_submit_command(job, {"run_uuid": "u", "slurm_logfile": "l", "comment_str": "c",
                                    "account": "-A a", "partition": "-p p", "workdir": "w"})
    assert " --signal=23@1800" in call
