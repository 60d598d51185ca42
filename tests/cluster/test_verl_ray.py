"""verl 0.7.1 inside a real Ray: ``run_ppo`` -> the task runner actor -> ``RayPPOTrainer.
init_workers`` -> ``RayWorkerGroup`` actors, GRPO with the VADE sampler, a driver killed mid-run.

What is real and what is a stand-in is listed in ``tests/fixtures/verl/ray_workers.py``: verl's
entry, Ray (a local cluster the driver starts, one GPU declared and nothing bound to it), the
placement groups, worker group, reward-loop workers, checkpoint engine, ``fit`` and resume are
real; only the FSDP actor/reference worker and the vLLM rollout are CPU stand-ins (a tabular
policy), the worker a Ray actor like the one it replaces. The driver is
``tests/fixtures/verl/ray_driver.py``.

The numbers: 10 training prompts, batch 4, n = 3, 6 steps, checkpoints every 2 steps. The first
driver's run is held in step 3's generation (after the checkpoint of step 2) and killed there
(SIGKILL to its process group: the driver, its Ray and every actor); a second driver resumes
from the checkpoint of step 2 and finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from .pipeline import ROOT

pytestmark = pytest.mark.cluster
pytest.importorskip("verl")
pytest.importorskip("ray")
FIXTURES = ROOT / "tests" / "fixtures" / "verl"
sys.path.insert(0, str(FIXTURES))
N_TRAIN, G, STEPS = 10, 3, 6
HOLD_AT = 3   # the first driver's run stops in step 3's generation and is killed there


def driver(root: Path, temp_dir: str, log: Path, hold_at: int) -> subprocess.Popen:
    """A driver in its own session (so that killing it takes its whole local Ray along); with
    ``hold_at`` its run stops in that step's generation (ray_workers.CpuAgentLoopManager)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VADE_RAY_PROBE",
                                                            "VERL_FILE_LOGGER_PATH")}
    env.update(HF_HUB_OFFLINE="1", WANDB_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    return subprocess.Popen([sys.executable, str(FIXTURES / "ray_driver.py"), str(root), "run",
                             temp_dir, str(hold_at)], stdout=log.open("a"), stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)


RAY_START_FAILED = "The current node timed out during startup"


class Driver:
    """A driver process, started again when Ray's own start fails: Ray waits a fixed 30 s for
    its raylet to register, which a loaded machine can miss (nothing of the run has begun)."""

    def __init__(self, root: Path, temp_dir: str, log: Path, hold_at: int = 0,
                 starts: int = 5) -> None:
        self.args, self.log, self.starts = (root, temp_dir, log, hold_at), log, starts
        self.proc = self._start()

    def _start(self) -> subprocess.Popen:
        self.starts -= 1
        self.mark = self.log.stat().st_size if self.log.exists() else 0
        return driver(*self.args)

    def poll(self) -> int | None:
        """None while running; a failed Ray start is retried (and reads as running)."""
        rc = self.proc.poll()
        if rc not in (None, 0) and self.starts > 0 and RAY_START_FAILED in \
                self.log.read_text(errors="replace")[self.mark:]:
            for pid in ray_processes(str(self.args[1])):
                os.kill(pid, signal.SIGKILL)
            self.proc = self._start()
            return None
        return rc


def ray_processes(temp_dir: str) -> list[int]:
    """Processes of the Ray whose temporary folder is ``temp_dir`` (their command lines name it)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and temp_dir in (proc / "cmdline").read_bytes().decode(
                    errors="replace"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def latest_checkpoint(out: Path) -> int:
    marker = out / "checkpoints" / "latest_checkpointed_iteration.txt"
    return int(marker.read_text()) if marker.is_file() else 0


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from cpu_fit import WORDS
    from tiny_vlm import tiny_processor, write_train_parquet
    from transformers import Qwen2_5_VLConfig

    root = tmp_path_factory.mktemp("verl-ray")
    # the task runner loads tokenizer and processor from the model folder, as in production (the
    # in-process CPU fit tests hand the processor over instead): the processor's files and a
    # config.json that names the architecture; no weights (the worker is the stand-in)
    tiny_processor(extra_words=WORDS).save_pretrained(str(root / "model"))
    Qwen2_5_VLConfig().save_pretrained(str(root / "model"))
    (root / "data").mkdir()
    write_train_parquet(root / "data" / "train.parquet", N_TRAIN)
    write_train_parquet(root / "data" / "val.parquet", 4, first_index=100)
    ids = np.arange(N_TRAIN, dtype=np.int64)
    pq.write_table(pa.table({"sample_id": ids, "correct": (ids * 5) % 9,
                             "rollouts": np.full(N_TRAIN, 8)}), root / "initial.parquet")
    out, log = root / "run", root / "driver.log"
    temp_dir = tempfile.mkdtemp(prefix="vray", dir="/tmp")  # Ray's socket paths must stay short
    t0 = time.monotonic()
    first = second = None
    try:
        first = Driver(root, temp_dir, log, hold_at=HOLD_AT)
        held = out / f"held-at-step-{HOLD_AT}"
        deadline = time.monotonic() + 600
        while not held.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if not held.exists():
            pytest.fail(f"the first driver ended or stalled before step {HOLD_AT}:\n"
                        + log.read_text()[-6000:])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait()
        killed_at = latest_checkpoint(out)
        for pid in ray_processes(temp_dir):   # a Ray process that left the driver's session
            os.kill(pid, signal.SIGKILL)
        t_first = time.monotonic() - t0
        log.write_text(log.read_text() + "\n=== the driver was killed here ===\n")
        second = Driver(root, temp_dir, log)
        while (rc := second.poll()) is None and time.monotonic() < deadline + 600:
            time.sleep(0.5)
    finally:
        for d in (first, second):
            if d is not None and d.proc.poll() is None:
                os.killpg(d.proc.pid, signal.SIGKILL)
        for pid in ray_processes(temp_dir):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
    text = log.read_text()
    assert rc == 0, text[-6000:]
    return {"root": root, "out": out, "log": text, "killed_at": killed_at,
            "seconds": (t_first, time.monotonic() - t0)}


def test_the_first_driver_was_killed_mid_run(attempts: dict) -> None:
    assert attempts["killed_at"] == 2, attempts["log"][-3000:]


def test_runtime_env_reaches_the_worker_actor(attempts: dict) -> None:
    seen = json.loads((attempts["out"] / "checkpoints" / "global_step_6" / "actor" /
                       "environ.json").read_text())
    assert seen["VADE_RAY_PROBE"] == str(attempts["out"])   # given to Ray only, not the driver
    assert seen["VERL_FILE_LOGGER_PATH"] == str(attempts["root"] / "run" / "verl-metrics.jsonl")
    assert (attempts["root"] / "run" / "verl-metrics.jsonl").is_file()


def test_history_is_complete_and_the_resume_kept_the_sampler_state(attempts: dict) -> None:
    """Every step once (1-6) in the sampler's history; replaying VADE offline on the recorded
    evidence reproduces every batch drawn, on both sides of the kill: a resume that lost the
    posterior (or replayed a step) would choose differently from step 3 on."""
    from vade.sampling import make_sampler
    from vade.train.difficulty import initial_alpha_beta

    con = duckdb.connect(str(attempts["out"] / "history.duckdb"), read_only=True)
    steps = con.execute("SELECT step, rollouts FROM steps ORDER BY step").fetchall()
    events = con.execute("SELECT step, sample_id, correct FROM events ORDER BY step, sample_id"
                         ).fetchall()
    con.close()
    assert steps == [(s, 4 * G) for s in range(1, STEPS + 1)]
    ids = np.arange(N_TRAIN)
    alpha, beta = initial_alpha_beta(str(attempts["root"] / "initial.parquet"), ids)
    sampler = make_sampler("vade", N_TRAIN, 4, seed=0, lambda1=0.2, lambda2=0.999,
                           alpha=alpha, beta=beta)
    for step in range(1, STEPS + 1):
        rows = [e for e in events if e[0] == step]
        assert sorted(int(i) for i in sampler.select()) == [e[1] for e in rows], step
        sampler.observe(np.array([e[1] for e in rows]), np.array([e[2] for e in rows]),
                        np.full(len(rows), G))
    resumed = attempts["log"].split("=== the driver was killed here ===", 1)[1]
    assert "global_step_2" in resumed, resumed[-3000:]
