"""A training job stops at its time limit with a checkpoint, and the next submission resumes it
into the history an uninterrupted run writes.

Real: the local trainer's loop, checkpoint and resume (toy policy, milliseconds per step), a
real SIGUSR1 delivered to this process, the guard's clock arithmetic. Stand-in: SLURM, which
would send the signal and set ``SLURM_JOB_END_TIME``; the test does both itself.
"""

from __future__ import annotations

import os
import signal

import pytest
from test_train_local import _cfg, _paths, _tables, write_toy_data

from vade.job.timelimit import TimeGuard, TimeLimitReached
from vade.train.local import loop
from vade.train.local.toy import ToyPolicy


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_toy_data(tmp_path_factory.mktemp("data"))


def _checkpoints(out):
    return sorted(p.stem for p in (out / "checkpoints").glob("step_*.pt"))


@pytest.mark.e2e  # several seconds: real processes / a training run
def test_usr1_checkpoints_then_resume_gives_the_same_history(data, tmp_path, monkeypatch):
    cfg = _cfg(tmp_path, steps=5, checkpoint_every=0)   # no periodic checkpoint at all
    whole = tmp_path / "a" / "toy-grpo-vade-s0"
    loop.train_local(cfg, _paths(data, whole), progress=False, load_policy=ToyPolicy.load)

    real_step = loop._train_step

    def signalled_in_step_3(cfg, policy, sampler, examples, step, **kw):
        if step == 3:
            os.kill(os.getpid(), signal.SIGUSR1)   # SLURM's warning arrives mid-step
        return real_step(cfg, policy, sampler, examples, step, **kw)

    cut = tmp_path / "b" / "toy-grpo-vade-s0"
    monkeypatch.setattr(loop, "_train_step", signalled_in_step_3)
    before = signal.getsignal(signal.SIGUSR1)
    with pytest.raises(TimeLimitReached, match=r"checkpointed step 3 of 5 and stopped: SIGUSR1 received"):
        loop.train_local(cfg, _paths(data, cut), progress=False, load_policy=ToyPolicy.load)
    assert signal.getsignal(signal.SIGUSR1) == before          # handler given back
    assert not (cut / "done.json").exists()
    assert _checkpoints(cut) == ["step_00000003"]
    monkeypatch.setattr(loop, "_train_step", real_step)
    done = loop.train_local(cfg, _paths(data, cut), progress=False, load_policy=ToyPolicy.load)
    assert done["steps"] == 5
    assert _tables(cut / "history.duckdb") == _tables(whole / "history.duckdb")


@pytest.mark.e2e  # several seconds: real processes / a training run
def test_wall_time_under_the_margin_checkpoints_after_the_step(data, tmp_path, monkeypatch):
    import time

    cfg = _cfg(tmp_path, steps=4, checkpoint_every=0)
    # 1000 s left, and a margin that makes any step "too slow" for them: stop after step 1
    monkeypatch.setenv("SLURM_JOB_END_TIME", str(time.time() + 1000))
    monkeypatch.setenv("VADE_TIME_MARGIN", "1e9")
    out = tmp_path / "toy-grpo-vade-s0"
    with pytest.raises(TimeLimitReached, match=r"step 1 of 4 and stopped: \d+ s left of the "
                                               r"job, under 1e\+09 x the slowest step"):
        loop.train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)
    assert _checkpoints(out) == ["step_00000001"]


def test_guard_arithmetic():
    now = [1000.0]
    guard = TimeGuard(end_time=1400.0, margin=1.5, clock=lambda: now[0])
    assert guard.reason() is None                 # no step measured yet
    guard.step_done(200.0)
    guard.step_done(250.0)                        # slowest 250 s: stop under 375 s left
    assert guard.reason() is None                 # 400 s left
    now[0] = 1030.0                               # 370 s left < 1.5 x 250
    assert guard.reason() == "370 s left of the job, under 1.5 x the slowest step (250 s)"
    assert TimeGuard.from_env({"SLURM_JOB_END_TIME": "1700000000",
                               "VADE_CHECKPOINT_SIGNALS": "sigurg"}).signals == ("URG",)
    assert TimeGuard.from_env({}).end_time is None
    from datetime import datetime

    from vade.job.timelimit import job_end_time

    end = datetime(2026, 11, 29, 10, 5).timestamp()
    assert job_end_time({"SLURM_JOB_ID": "42"}, squeue=lambda j: "2026-11-29T10:05:00\n") == end
    assert job_end_time({"SLURM_JOB_ID": "42"}, squeue=lambda j: "UNLIMITED\n") is None
    assert TimeGuard.from_env({}).signals == ("USR1", "URG", "TERM")
    with pytest.raises(ValueError, match="VADE_CHECKPOINT_SIGNALS: unknown signal 'USR3'"):
        TimeGuard.from_env({"VADE_CHECKPOINT_SIGNALS": "USR3"})


def test_flag_file_stops_a_process_that_cannot_take_the_signal(tmp_path):
    flag = tmp_path / "checkpoint-now"
    guard = TimeGuard(flag_file=flag)
    assert guard.reason() is None
    flag.write_text("USR1")
    assert "checkpoint-now exists" in guard.reason()
