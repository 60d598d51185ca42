"""What a rerun of a finished run folder does when something is wrong: refuse in one line naming
the file, and lose nothing (``done.json``, history and checkpoints as they were).

Real: the local trainer, its checkpoints (manifest + checksum), DuckDB history, run-folder lock,
parquet readers and the ``vade`` CLI's error path. Stand-in: the toy policy instead of the tiny
Qwen2.5-VL; a second trainer is stood in for by a lock held from this process (``flock`` locks
conflict between open files, as between processes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_train_local import _cfg, _paths, write_toy_data

from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_toy_data(tmp_path_factory.mktemp("data"))


def _train(cfg, data: Path, out: Path, **kw) -> dict:
    kw.setdefault("load_policy", ToyPolicy.load)
    return train_local(cfg, _paths(data, out), progress=False, **kw)


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".lock"}


@pytest.fixture
def finished(data, tmp_path) -> Path:
    out = tmp_path / "run" / "toy-grpo-vade-s0"
    _train(_cfg(tmp_path, steps=4), data, out)
    return out


def test_a_refused_rerun_keeps_done_json(data, tmp_path, finished):
    """A wrong model path fails at load: before the fix done.json was already deleted."""
    before = _snapshot(finished)

    def missing(path, cfg):
        raise FileNotFoundError(f"model not found: {path}")

    with pytest.raises(FileNotFoundError, match="model not found"):
        _train(_cfg(tmp_path, steps=4, lr=0.01), data, finished, load_policy=missing)
    assert _snapshot(finished) == before


def test_history_deleted_beside_checkpoints_is_refused(data, tmp_path, finished):
    """Before: the run resumed with steps 17-20 only (here: none) and a done.json mean over
    them. Now: a refusal that says which files to restore or remove."""
    (finished / "history.duckdb").unlink()
    (finished / "done.json").unlink()
    kept = _snapshot(finished)
    with pytest.raises(ValueError, match=r"history .*history.duckdb is missing: restore it, or "
                                         r"delete .*checkpoints to train again"):
        _train(_cfg(tmp_path, steps=6), data, finished)
    assert _snapshot(finished) == kept and not (finished / "history.duckdb").exists()


def test_history_with_missing_steps_is_refused(data, tmp_path, finished):
    import duckdb

    con = duckdb.connect(str(finished / "history.duckdb"))
    con.execute("DELETE FROM steps WHERE step <= 2")
    con.close()
    with pytest.raises(ValueError, match=r"holds 2 of the steps 1..4 that checkpoint"):
        _train(_cfg(tmp_path, steps=4), data, finished)
    assert (finished / "done.json").is_file()


def test_a_garbled_checkpoint_is_refused_by_its_checksum(data, tmp_path, finished):
    """Before: garbled tensor bytes loaded and the run went on with different weights."""
    ckpt = finished / "checkpoints" / "step_00000004.pt"
    raw = bytearray(ckpt.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one byte, deep in the tensor data
    ckpt.write_bytes(bytes(raw))
    before = _snapshot(finished)
    with pytest.raises(ValueError, match=r"step_00000004.pt is corrupt \(its bytes do not "
                                         r"match the checksum in step_00000004.json\)"):
        _train(_cfg(tmp_path, steps=4), data, finished)
    assert _snapshot(finished) == before


def test_temporary_files_of_a_killed_write_are_removed(data, tmp_path, finished, capsys):
    """A kill during torch.save leaves .step_<t>.pt.tmp-<pid> (11.7 MB in the issue) forever,
    and a kill (SLURM's time limit) during the final model's save a ``.final.tmp-<pid>`` folder;
    the next start removes those whose writer is gone, and keeps a live writer's."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = [finished / "checkpoints" / f".step_00000006.pt.tmp-{dead}",
             finished / f".done.json.tmp-{dead}"]
    live = finished / "checkpoints" / f".step_00000006.pt.tmp-{os.getppid()}"
    for path in (*stale, live):
        path.write_bytes(b"x" * 1000)
    final = finished / f".final.tmp-{dead}"
    (final / "tokenizer").mkdir(parents=True)
    (final / "tokenizer" / "vocab.json").write_text("{}")
    _train(_cfg(tmp_path, steps=4), data, finished)
    assert not any(p.exists() for p in (*stale, final)) and live.exists()
    assert f"removed {stale[0]} (left by a killed write)" in capsys.readouterr().err


def test_a_second_training_on_the_folder_is_refused_naming_the_first(data, tmp_path, finished):
    from vade.train.run_folder import RunLock

    before = _snapshot(finished)
    with RunLock(finished), pytest.raises(
            ValueError, match=rf"run folder .*toy-grpo-vade-s0 is being written by another "
                              rf"process \(pid {os.getpid()}, lock"):
        _train(_cfg(tmp_path, steps=6), data, finished)
    assert _snapshot(finished) == before
    _train(_cfg(tmp_path, steps=4), data, finished)  # the lock is gone with its holder


def test_a_garbled_history_is_named(data, tmp_path, finished):
    path = finished / "history.duckdb"
    path.write_bytes(os.urandom(20_000))
    with pytest.raises(ValueError, match=r"history.duckdb is not a readable DuckDB database .*"
                                         r"move it away"):
        _train(_cfg(tmp_path, steps=6), data, finished)
    assert (finished / "done.json").is_file()


def test_a_history_open_elsewhere_is_named(data, tmp_path, finished):
    """A ``vade sql`` reading the history while the run resumes: DuckDB's lock."""
    path = finished / "history.duckdb"
    reader = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}, "
         "read_only=True); print('open', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "open"
        with pytest.raises(ValueError, match=r"history.duckdb is open in another process .*"
                                             r"let it finish or close it"):
            _train(_cfg(tmp_path, steps=6), data, finished)
    finally:
        reader.kill()
        reader.wait()
    assert (finished / "done.json").is_file()


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_a_corrupt_training_parquet_is_one_line_naming_it(data, tmp_path, capsys, damage):
    """Before: truncated -> "Parquet magic bytes not found" without the file's name; garbled
    pages -> a 30-line OSError traceback."""
    from vade.cli import main

    bad = tmp_path / "bad_data"
    bad.mkdir()
    raw = (data / "train.parquet").read_bytes()
    if damage == "truncate":
        raw = raw[:len(raw) // 2]
    else:  # the pages, not the footer: the row count still reads
        raw = raw[:4] + os.urandom(len(raw) // 2 - 4) + raw[len(raw) // 2:]
    (bad / "train.parquet").write_bytes(raw)
    (bad / "val.parquet").write_bytes((data / "val.parquet").read_bytes())
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: toy\ntrain: {backend: local, batch_size: 6, steps: 2}\n")
    code = main(["train", "--config", str(cfg), "--data-dir", str(bad), "--model", "m",
                 "--method", "vanilla", "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{bad / 'train.parquet'} cannot be read as parquet" in err


def test_a_history_deleted_mid_run_ends_the_run_with_an_error(data, tmp_path, monkeypatch):
    """Before: DuckDB went on writing the deleted file, the run ended rc 0 and wrote done.json
    beside no history."""
    from vade.train.local import loop

    out = tmp_path / "run" / "toy-grpo-vade-s0"
    real = loop._train_step

    def step(cfg, policy, sampler, examples, t, **kw):
        if t == 3:
            (out / "history.duckdb").unlink()
        return real(cfg, policy, sampler, examples, t, **kw)

    monkeypatch.setattr(loop, "_train_step", step)
    with pytest.raises(ValueError) as info:
        _train(_cfg(tmp_path, steps=6), data, out)
    assert str(info.value).startswith(f"the history {out / 'history.duckdb'} was deleted or "
                                      "replaced while this run was writing it")
    assert not (out / "done.json").exists()


def test_a_refused_second_trainer_leaves_the_running_ones_log_alone(data, tmp_path, finished,
                                                                    capsys):
    """``snakemake --nolock`` beside a running job. Before: the rule's ``> {log}`` emptied the
    running job's log, which then held only the second trainer's 233-byte refusal. Real: the
    ``vade train`` command with ``--log`` as the rule runs it, and a lock held by another
    process (the running job)."""
    from vade.cli import main

    log = tmp_path / "train.log"
    log.write_text("step 1/4 ...\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; h = open(sys.argv[1], 'a+'); "
         "fcntl.flock(h, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)",
         str(finished / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        rc = main(["train", "--config-json", '{"name": "toy", "train": {"backend": "local"}}',
                   "--data-dir", str(data), "--model", "toy", "--out", str(finished),
                   "--log", str(log)])
    finally:
        holder.kill()
        holder.wait()
    assert rc == 2
    assert "is being written by another process" in capsys.readouterr().err
    assert log.read_text() == "step 1/4 ...\n"


def test_the_train_rule_lets_the_trainer_open_its_log():
    rule = (Path(__file__).resolve().parent.parent / "workflow" / "rules" / "train.smk").read_text()
    shell = rule.split("shell:")[1]
    assert "--log {log}" in shell and "> {log}" not in shell.replace(">> {log}", "")
