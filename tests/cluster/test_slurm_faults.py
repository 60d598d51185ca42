"""Faults a cluster inflicts, through the real SLURM controller, each ending with the history of
the uninterrupted run.

Real: the SLURM cluster (tests/cluster/local_slurm.py), ``snakemake --profile slurm --profile
tests/cluster/profile`` with the project profile's ``retries``, the local trainer with its
checkpoints and resume, ``scancel`` and ``scontrol`` as an operator uses them. Stand-ins: the
GPUs are placeholder GRES (see test_slurm_pipeline.py).

One training run of the completed smoke run (``smoke_runs``) is deleted in a copy of that
workdir and trained again through SLURM while the faults happen:

* the node is drained before the job is submitted: the job waits (PENDING, no output) and runs
  once the node is resumed;
* the running job is cancelled with ``scancel`` after its first checkpoint: the profile's retry
  resubmits it and it resumes from that checkpoint;
* the history then equals the uninterrupted run's, table by table (``vade.store.compare``).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from test_pipeline import clone_env

from vade.store.compare import compare_histories

from .local_slurm import LocalSlurm
from .pipeline import BIN, SUBMITTED, Runs, copy_outputs, failure, slurm_cmd

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not (BIN / "snakemake").exists(), reason="snakemake is not installed"),
]
RUN = "tiny-grpo-vade-s0"
DRAINED_S = 15          # how long the job is kept waiting on the drained node
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 600,
             proc: subprocess.Popen | None = None) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"Snakemake ended while waiting for {what}: "
                                 f"{proc.stdout.read()[-4000:]}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def new_jobs(cluster: LocalSlurm, after: int) -> dict[str, tuple[str, str]]:
    """Jobs with an id above ``after``: id -> (state, comment)."""
    out = cluster.run("squeue", "--states=all", "-h", "-o", "%i|%T|%k").stdout
    rows = (line.split("|") for line in out.split())
    return {i: (state, comment) for i, state, comment in rows if int(i) > after}


@dataclass
class Faulted:
    work: Path
    log: str
    drained: dict[str, str]      # scontrol's view of the train job while the node was drained
    cancelled: str               # the SLURM id of the cancelled attempt
    checkpoint_seen: list[str]   # the checkpoints it had written when it was cancelled
    seconds: float


@pytest.fixture(scope="module")
def faulted(smoke_runs: Runs, slurm_cluster: LocalSlurm,
            tmp_path_factory: pytest.TempPathFactory) -> Faulted:
    cluster = slurm_cluster
    work = copy_outputs(smoke_runs.slurm, tmp_path_factory.mktemp("faults") / "clone")
    run_dir = work / "results" / "tiny" / "runs" / RUN
    shutil.rmtree(run_dir)
    last = max([0, *map(int, cluster.run("squeue", "--states=all", "-h", "-o", "%i").stdout
                        .split())])
    t0 = time.monotonic()
    cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=drain",
                "reason=vade-test")
    proc = subprocess.Popen(slurm_cmd(f"results/tiny/runs/{RUN}/done.json"), cwd=work,
                            env=cluster.env(clone_env()), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        job = wait_for("the train job's submission",
                       lambda: next(iter(new_jobs(cluster, last)), None), proc=proc)
        time.sleep(DRAINED_S)
        drained = cluster.job(job)
        drained["history exists"] = str((run_dir / "history.duckdb").exists())
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume")
        wait_for("the first checkpoint",
                 lambda: list((run_dir / "checkpoints").glob("step_*.json")), proc=proc)
        cluster.run("scancel", job)
        wait_for("the cancelled job's end", lambda: cluster.job(job)["JobState"] == "CANCELLED")
        checkpoint = sorted(p.name for p in (run_dir / "checkpoints").glob("step_*.json"))
        finished_before_cancel = (run_dir / "done.json").exists()
        out, _ = proc.communicate(timeout=900)
    finally:
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume",
                    check=False)
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    if proc.returncode != 0:
        pytest.fail(failure("the faulted run", out, work, cluster.log_tail()))
    assert not finished_before_cancel, "the training ended before scancel reached it"
    return Faulted(work=work, log=out, drained=drained, cancelled=job,
                   checkpoint_seen=checkpoint, seconds=time.monotonic() - t0)


def test_a_job_waits_on_a_drained_node_and_runs_once_it_is_resumed(faulted: Faulted) -> None:
    assert faulted.drained["JobState"] == "PENDING", faulted.drained
    # SLURM 22.05's reason for a job whose only node is drained (ReqNodeNotAvail in others)
    assert faulted.drained["Reason"].split(",")[0] in {
        "Nodes_required_for_job_are_DOWN", "ReqNodeNotAvail"}, faulted.drained["Reason"]
    assert faulted.drained["history exists"] == "False"


def test_a_cancelled_training_job_is_resubmitted_and_resumes(faulted: Faulted,
                                                              slurm_cluster: LocalSlurm) -> None:
    submitted = [slurm for _, slurm in SUBMITTED.findall(faulted.log)]
    assert len(submitted) == 2 and submitted[0] == faulted.cancelled, faulted.log[-3000:]
    assert slurm_cluster.job(faulted.cancelled)["JobState"] == "CANCELLED"
    assert slurm_cluster.job(submitted[1])["JobState"] == "COMPLETED"
    newest = faulted.checkpoint_seen[-1].removesuffix(".json")
    train_log = (faulted.work / "logs" / "tiny" / "train" / f"{RUN}.log").read_text()
    assert f"resuming from {newest}.pt" in train_log, train_log[-2000:]


def test_the_faulted_run_has_the_uninterrupted_history(faulted: Faulted,
                                                       smoke_runs: Runs) -> None:
    diff = compare_histories(smoke_runs.slurm / "results" / "tiny" / "runs",
                             faulted.work / "results" / "tiny" / "runs")
    assert set(diff[RUN].values()) and all(v.startswith("same") for v in diff[RUN].values()), \
        diff[RUN]
