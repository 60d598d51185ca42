"""Initial rollouts use every GPU of their job and resume after a kill.

Real: the process-per-engine split (``DataParallelEngine``, spawned processes, pipes), the GPU
grouping and its refusals, the chunk files and their key. Stand-in: the engine itself
(``CountingEngine`` below), because vLLM needs a GPU; it answers with the GPUs its process was
given (``CUDA_VISIBLE_DEVICES``) and its pid, so the test sees which engine drew what.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest

from vade.rollout.difficulty import DifficultyConfig, initial_difficulty
from vade.rollout.engine import Rollouts
from vade.rollout.parallel import DataParallelEngine, gpu_groups, visible_gpus


@dataclass(frozen=True)
class Row:
    """The one field of ``vade.data.records.Example`` the rollout code reads here."""

    index: int


class CountingEngine:
    """Stand-in for ``VLLMEngine``: each text names the GPUs and pid of the engine's process."""

    def __init__(self, tag: str = "") -> None:
        self.gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        self.tag = tag
        self.calls = 0

    def generate(self, examples, n, *, temperature=1.0, max_new_tokens=16, seed=0,
                 progress=None):
        self.calls += 1
        texts = [f"{self.gpus}|{os.getpid()}|{ex.index}|{(seed + ex.index + j) % 3}"
                 for ex in examples for j in range(n)]
        return Rollouts(np.repeat(np.arange(len(examples), dtype=np.int64), n), texts, n)


@pytest.mark.e2e  # several seconds: real processes / a training run
def test_one_engine_per_gpu_group_each_sees_only_its_gpus():
    rows = [Row(i) for i in range(10)]
    with DataParallelEngine(partial(CountingEngine), [["0"], ["1"], ["2"], ["3"]]) as engine:
        ro = engine.generate(rows, 2, seed=5)
    parts = [t.split("|") for t in ro.texts]
    assert ro.example_pos.tolist() == np.repeat(np.arange(10), 2).tolist()
    assert [int(p[2]) for p in parts] == np.repeat(np.arange(10), 2).tolist()  # order kept
    assert {p[0] for p in parts} == {"0", "1", "2", "3"}   # all four GPUs drew responses
    assert len({p[1] for p in parts}) == 4                 # in four processes
    # contiguous shards of 10 over 4 engines: bounds i * 10 // 4 = 0, 2, 5, 7, 10
    per_gpu = [sum(p[0] == g for p in parts) // 2 for g in "0123"]
    assert per_gpu == [2, 3, 2, 3]


class ChildStartingEngine(CountingEngine):
    """Stand-in for ``vllm.LLM`` 0.12, which starts its engine core as a child process when it
    is built (``vllm/v1/engine/utils.py``, ``launch_core_engines``); here the child does nothing
    but exit. Real: the engine's own process and the child's start."""

    def __init__(self) -> None:
        super().__init__()
        core = mp.get_context("spawn").Process(target=os.getpid)
        core.start()
        core.join()
        self.core_exitcode = core.exitcode

    def generate(self, examples, n, **kw):
        ro = super().generate(examples, n, **kw)
        return Rollouts(ro.example_pos, [f"{t}|core {self.core_exitcode}" for t in ro.texts], n)


def test_an_engine_that_starts_a_child_process_runs():
    """An engine process may start its own child, as vLLM 0.12 does; on a daemon engine process
    the start failed: "daemonic processes are not allowed to have children"."""
    with DataParallelEngine(ChildStartingEngine, [["0"]]) as engine:
        ro = engine.generate([Row(0), Row(1)], 1, seed=0)
    assert [t.split("|")[-1] for t in ro.texts] == ["core 0", "core 0"]


class ClosingEngine(CountingEngine):
    """Stand-in for ``VLLMEngine``, whose ``close`` stops vLLM's engine core: here it writes
    ``<folder>/closed-<pid>``."""

    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = folder

    def close(self) -> None:
        with open(os.path.join(self.folder, f"closed-{os.getpid()}"), "w"):
            pass


def test_an_engine_process_closes_its_engine_when_told_or_when_the_job_is_gone(tmp_path):
    """Python runs no finalizer in a multiprocessing child, so an engine process must close its
    engine itself: a vLLM engine process whose job was killed waited forever on its engine
    core. Here the second pipe is closed without a word, as a ``kill -9`` of the job does."""
    engine = DataParallelEngine(partial(ClosingEngine, str(tmp_path)), [["0"], ["1"]])
    pids = [p.pid for p in engine._procs]
    engine._conns[1].close()              # the job "vanished" for engine 1
    engine._procs[1].join(timeout=30)
    engine._conns, engine._procs = engine._conns[:1], engine._procs[:1]
    engine.close()                        # engine 0: told to stop
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"closed-{p}" for p in pids)


def test_tensor_parallel_groups_and_refusals():
    assert gpu_groups(["0", "1", "2", "3"], 2) == [["0", "1"], ["2", "3"]]
    assert gpu_groups(["5"], 1) == [["5"]]
    with pytest.raises(ValueError, match=r"difficulty.tensor_parallel_size = 2 does not divide "
                                         r"the job's 3 GPUs: 1 would sit idle"):
        gpu_groups(["0", "1", "2"], 2)
    with pytest.raises(ValueError, match=r"sees 0 GPU\(s\)"):
        gpu_groups([], 1)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert visible_gpus({}, smi=lambda: ["0"]) == ["0"]


def test_a_failing_engine_names_its_gpus():
    with pytest.raises(RuntimeError, match=r"engine on GPU\(s\) 7 failed during start: "
                                           r"TypeError"):
        DataParallelEngine(partial(CountingEngine, tag=None, bogus=1), [["7"]])


def _score(texts, rows):
    return np.array([float(t.split("|")[-1] == "0") for t in texts])


class KilledAfter(CountingEngine):
    """Stand-in: the job's time limit arrives during the call after ``calls`` calls."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.limit = calls

    def generate(self, examples, n, **kw):
        if self.calls == self.limit:
            raise KeyboardInterrupt("time limit")
        return super().generate(examples, n, **kw)


def test_a_killed_job_resumes_after_its_last_written_chunk(tmp_path):
    rows = [Row(i) for i in range(23)]
    cfg = DifficultyConfig(rollouts=4, batch_size=20)   # 5 prompts per chunk: 5 chunks
    whole = initial_difficulty(CountingEngine(), rows, cfg, seed=3, score=_score,
                               progress=False)
    folder = tmp_path / "chunks"
    with pytest.raises(KeyboardInterrupt):
        initial_difficulty(KilledAfter(3), rows, cfg, seed=3, score=_score, progress=False,
                           resume_dir=folder, resume_key={"model": "m"})
    assert sorted(p.name for p in folder.glob("chunk-*.npy")) == [
        "chunk-000000.npy", "chunk-000001.npy", "chunk-000002.npy"]
    again = CountingEngine()
    resumed = initial_difficulty(again, rows, cfg, seed=3, score=_score, progress=False,
                                 resume_dir=folder, resume_key={"model": "m"})
    assert again.calls == 2 and resumed["chunks_resumed"] == 3   # chunks 3 and 4 only
    assert resumed["correct"].tolist() == whole["correct"].tolist()
    # another model: the written chunks are not this run's, so all five are generated
    other = CountingEngine()
    initial_difficulty(other, rows, cfg, seed=3, score=_score, progress=False,
                       resume_dir=folder, resume_key={"model": "other"})
    assert other.calls == 5
