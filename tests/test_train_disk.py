"""A full disk or a read-only run folder is one line naming the path, and loses nothing already
written (issue 49, items 7 and 8).

Real: the ``vade train`` command (its error path), the local trainer, checkpoints, DuckDB
history, the run-folder lock. Stand-ins: the toy policy for the model; a full disk, which cannot
be made here without root and a mount (torch's writer and DuckDB are made to fail as they do on
ENOSPC, with their own messages); a read-only folder when the tests run as root (root writes
through mode bits, so the lock file's open is made to fail with EACCES as it would for a user).
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import duckdb
import pytest
from test_train_local import write_toy_data

from vade.cli import main
from vade.store import run_store
from vade.train import run_folder
from vade.train.local import policy
from vade.train.local.toy import ToyPolicy

CFG = {"name": "toy", "train": {"backend": "local", "batch_size": 6, "steps": 6, "lr": 0.05,
                                "val_every": 0, "checkpoint_every": 2},
       "tracking": {"enabled": False}}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_toy_data(tmp_path_factory.mktemp("data"))


def _train(data: Path, out: Path, monkeypatch) -> int:
    monkeypatch.setattr(policy.LocalPolicy, "load", staticmethod(ToyPolicy.load))
    return main(["train", "--config-json", json.dumps(CFG), "--algorithm", "grpo", "--method",
                 "vade", "--seed", "0", "--data-dir", str(data), "--model", "toy",
                 "--difficulty", str(data / "initial.parquet"), "--out", str(out),
                 "--no-progress"])


def _steps(history: Path) -> list[int]:
    con = duckdb.connect(str(history), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT step FROM steps ORDER BY step").fetchall()]
    finally:
        con.close()


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


def test_a_full_disk_during_a_checkpoint_write_is_one_line(data, tmp_path, monkeypatch, capsys):
    """Before: 42 lines of traceback ending in torch's "unexpected pos ..."."""
    import torch

    real = torch.save

    def save(obj, f, *a, **kw):
        if obj.get("step") == 4:
            Path(f).write_bytes(b"PK\x03\x04partial")
            raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos "
                               "64 vs 0")
        return real(obj, f, *a, **kw)

    monkeypatch.setattr(torch, "save", save)
    out = tmp_path / "run"
    assert _train(data, out, monkeypatch) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"vade train: error: cannot write {out / 'checkpoints'}"
                           "/step_00000004.pt: the write failed ([enforce fail at")
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "step_00000002.json", "step_00000002.pt"]   # no temporary left, step 2 kept
    assert _steps(out / "history.duckdb") == [1, 2, 3, 4]


def test_a_full_disk_during_a_history_write_is_one_line(data, tmp_path, monkeypatch, capsys):
    """Before: 28 lines of traceback."""
    real = run_store.RunStore._insert

    def insert(self, table, columns):
        if table == "events" and int(columns["step"][0]) == 3:
            raise duckdb.IOException(f'IO Error: Could not write file "{self.path}.wal": No '
                                     "space left on device")
        return real(self, table, columns)

    monkeypatch.setattr(run_store.RunStore, "_insert", insert)
    out = tmp_path / "run"
    assert _train(data, out, monkeypatch) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"vade train: error: cannot write {out / 'history.duckdb'}: "
                           "DuckDB's write failed (IO Error: Could not write file")
    assert _steps(out / "history.duckdb") == [1, 2]


def test_a_read_only_run_folder_is_one_line(data, tmp_path, monkeypatch, capsys):
    """Before: a 21-line traceback ending in ``OSError ... '.lock'``."""
    out = tmp_path / "run"
    out.mkdir()
    if os.geteuid() == 0:   # root ignores mode bits: the open fails as it would for a user
        def refuse(path, *a, **kw):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))

        monkeypatch.setattr(run_folder, "open", refuse, raising=False)
    else:
        out.chmod(0o555)
    try:
        assert _train(data, out, monkeypatch) == 2
    finally:
        out.chmod(0o755)
    line = _one_error_line(capsys.readouterr().err)
    assert line == (f"vade train: error: cannot write {out / '.lock'}: Permission denied; free "
                    "space or make the folder writable, then rerun (what was written before is "
                    "kept)")
