"""Faults a cluster inflicts, through the real SLURM controller, each ending with the history of
the uninterrupted run.

Real: the SLURM cluster (tests/cluster/local_slurm.py) and slurmctld's own time-limit enforcement
and warning signal, ``snakemake --profile slurm --profile tests/cluster/profile`` with a third
profile on top that sets the training rule's ``runtime``, ``slurm_extra`` and ``retries`` (as a
site would), the local trainer with its time guard (vade/job/timelimit.py), checkpoints and
resume, ``scancel`` and ``scontrol`` as an operator uses them. Stand-ins: the GPUs are placeholder
GRES (see test_slurm_pipeline.py), and a long step: the tiny model trains a step in under a
second, so the test holds the trainer with SIGSTOP where a paper run would be inside a step of
minutes. SLURM does to a held trainer what it does to any process: SIGCONT before its warning
signal, and SIGCONT, SIGTERM and (KillWait later) SIGKILL at the limit.

Three training runs of the smoke config are trained through SLURM in copies of the local smoke
run's workdir, taken once its data, model and initial difficulty are made, side by side (one
GPU, one CPU each) and beside the rest of the smoke runs (tests/cluster/conftest.py); each must
end with the history of the SLURM smoke run's own, uninterrupted, training:

* ``tiny-grpo-vade-s0``, ``--time=2``: held mid-run after its first checkpoint (step 2) until
  SLURM kills it at its limit (TIMEOUT); the retry resumes from there and finishes;
* ``tiny-grpo-vanilla-s0``, ``--time=3 --signal=23@60``: held from the moment it handles SIGURG;
  SLURM's warning continues it, it checkpoints the step it is in and exits; the retry resumes
  from that checkpoint and finishes;
* ``tiny-grpo-vade-s0`` again, once the other two run: the node is drained before it is
  submitted, so the job waits (PENDING, no output) and runs once the node is resumed; it is
  cancelled with ``scancel`` mid-run after its first checkpoint; the retry resumes from there
  and finishes.

Three runs, not one with every fault: the executor plugin lengthens its wait between status
checks by 10 s after each check that finds no job finished, and a failed job does not count as
finished, so each fault a run goes through costs it more than the one before.

SLURM 22.05 checks time limits and warning times every 30 s (``PERIODIC_TIMEOUT``, compiled in:
no slurm.conf setting shortens it) and limits are whole minutes: the kill comes 120 to 150 s
after the start (OverTimeLimit 0, KillWait 5 s), the warning when the end is under 60 + 30 s away
at a check, 90 to 120 s after the start (sbatch's manual allows 60 s of slop). One minute less
each was measured too short on this machine under load: a job's start (Snakemake in the job,
torch's import) took over 60 s, and the first attempt was killed before its first checkpoint or
warned before its trainer handled the signal.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from vade.store.compare import compare_histories

from .faults import KILL_MIN, WARNING_LINE, Scenario
from .local_slurm import LocalSlurm
from .pipeline import BIN, SUBMITTED, Runs

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not (BIN / "snakemake").exists(), reason="snakemake is not installed"),
]


def states(s: Scenario, cluster: LocalSlurm) -> list[dict[str, str]]:
    return [cluster.job(slurm_id) for _, slurm_id in SUBMITTED.findall(s.out)]


def assert_uninterrupted_history(s: Scenario, smoke_runs: Runs) -> None:
    diff = compare_histories(smoke_runs.slurm / "results/tiny/runs", s.work / "results/tiny/runs")
    assert diff[s.run] and all(v.startswith("same") for v in diff[s.run].values()), diff[s.run]


def assert_resumed_and_uninterrupted(s: Scenario, stopped: int, smoke_runs: Runs) -> None:
    """The ``stopped``-th attempt, held after its first checkpoint and then ended by SLURM's
    SIGTERM (the time limit, ``scancel``), checkpointed the step it was in before KillWait's
    SIGKILL; the next attempt resumed from that checkpoint, newer than any there was when it was
    held, and the run ends with the uninterrupted run's history."""
    newest = int(s.notes["checkpoints"][-1].removesuffix(".json").removeprefix("step_"))
    signalled = re.search(r"checkpointed step (\d+) of 4 and stopped: SIGTERM", s.logs[stopped])
    assert signalled, s.logs[stopped][-2000:]
    step = int(signalled.group(1))
    assert step > newest, (step, s.notes["checkpoints"])
    log = s.logs[stopped + 1]
    assert f"resuming from step_{step:08d}.pt" in log, log[-2000:]
    assert_uninterrupted_history(s, smoke_runs)


def test_a_job_waits_on_a_drained_node_and_runs_once_it_is_resumed(fault_scenarios,
                                                                   slurm_cluster) -> None:
    drained = fault_scenarios["cancelled"].notes["drained"]
    assert drained["JobState"] == "PENDING", drained
    # SLURM 22.05's reason for a job whose only node is drained (ReqNodeNotAvail in others)
    assert drained["Reason"].split(",")[0] in {
        "Nodes_required_for_job_are_DOWN", "ReqNodeNotAvail"}, drained["Reason"]
    assert drained["history exists"] == "False"
    # and it ran once the node was resumed (until it was cancelled: the next test)
    assert slurm_cluster.job(drained["JobId"])["JobState"] == "CANCELLED"


def test_a_cancelled_training_job_is_resubmitted_and_resumes(fault_scenarios, slurm_cluster,
                                                              smoke_runs) -> None:
    s = fault_scenarios["cancelled"]
    jobs = states(s, slurm_cluster)
    ids = [j["JobId"] for j in jobs]
    assert s.notes.get("cancelled") in ids, (s.notes, ids)
    at = ids.index(s.notes["cancelled"])
    assert jobs[at]["JobState"] == "CANCELLED", s.out[-3000:]
    assert jobs[-1]["JobState"] == "COMPLETED" and at < len(jobs) - 1, [j["JobState"] for j in jobs]
    assert_resumed_and_uninterrupted(s, at, smoke_runs)


def test_a_job_past_its_time_limit_is_killed_by_slurm_and_the_retry_resumes(
        fault_scenarios, slurm_cluster, smoke_runs) -> None:
    s = fault_scenarios["killed"]
    jobs = states(s, slurm_cluster)
    seen = [j["JobState"] for j in jobs]
    # before it, an attempt that its time guard stopped before the limit (a slow start on a
    # loaded machine) would read FAILED
    assert seen[-1] == "COMPLETED" and "TIMEOUT" in seen and \
        set(seen[:-1]) <= {"TIMEOUT", "FAILED"}, (seen, s.out[-3000:])
    at = seen.index("TIMEOUT")
    timeout = jobs[at]
    assert timeout["TimeLimit"] == f"00:0{KILL_MIN}:00" and timeout["Reason"] == "TimeLimit", \
        timeout
    assert f"SLURM-job '{timeout['JobId']}' failed, SLURM status is: 'TIMEOUT'" in s.out
    ran = (datetime.fromisoformat(timeout["EndTime"])
           - datetime.fromisoformat(timeout["StartTime"])).total_seconds()
    # the limit, one check interval, KillWait, slack
    assert KILL_MIN * 60 <= ran <= KILL_MIN * 60 + 30 + 15, ran
    assert_resumed_and_uninterrupted(s, at, smoke_runs)


def test_the_warning_signal_checkpoints_and_the_retry_resumes_from_there(
        fault_scenarios, slurm_cluster, smoke_runs) -> None:
    s = fault_scenarios["warned"]
    jobs = states(s, slurm_cluster)
    seen = [j["JobState"] for j in jobs]
    # a resumed attempt that is warned in turn (a slow start on a loaded machine) stops again
    assert seen[0] == "FAILED" and seen[-1] == "COMPLETED" and set(seen[1:-1]) <= {"FAILED"}, \
        seen
    ctld = (slurm_cluster.root / "log" / "slurmctld.log").read_text()
    sent = {job: datetime.fromisoformat(at).timestamp() for at, job in WARNING_LINE.findall(ctld)}
    assert jobs[0]["JobId"] in sent, "slurmctld logged no warning signal to the first attempt"
    stopped = re.search(r"checkpointed step (\d+) of 4 and stopped: SIGURG received", s.logs[0])
    assert stopped, s.logs[0][-2000:]
    step = int(stopped.group(1))
    # held before SLURM's warning, continued by it: the checkpoint is written after the signal,
    # not by the periodic schedule (whose checkpoints were there before it)
    held = s.notes["held"][0]
    assert held < sent[jobs[0]["JobId"]], "the warning came before the trainer handled SIGURG"
    assert held < sent[jobs[0]["JobId"]] <= s.written[f"step_{step:08d}.json"], (held, sent)
    assert f"resuming from step_{step:08d}.pt" in s.logs[1], s.logs[1][-2000:]
    assert_uninterrupted_history(s, smoke_runs)
