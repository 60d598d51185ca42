"""The session guard and the clean copy that keep the tests off a user's pipeline outputs.

Real: the guard's fingerprint and comparison on files written here, the copy of this repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from output_guard import ROOT, changed_paths, fingerprint
from workflow_copy import clean_copy


def test_fingerprint_sees_added_changed_and_removed_outputs(tmp_path: Path) -> None:
    (tmp_path / "results" / "tiny").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "README.md").write_text("shipped")
    db = tmp_path / "results" / "tiny" / "mlflow.db"
    db.write_bytes(b"1234")
    (tmp_path / "vade").mkdir()
    (tmp_path / "vade" / "x.py").write_text("code is not an output")
    before = fingerprint(tmp_path)
    assert before == {"results/tiny/mlflow.db": (4, db.stat().st_mtime_ns)}

    os.utime(db, ns=(0, db.stat().st_mtime_ns + 1_000_000))  # same size, touched
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "eval.log").write_text("new")
    (tmp_path / "vade" / "x.py").write_text("edited code is not an output either")
    assert changed_paths(before, fingerprint(tmp_path)) == ["logs/eval.log",
                                                            "results/tiny/mlflow.db"]
    db.unlink()
    assert "results/tiny/mlflow.db" in changed_paths(before, fingerprint(tmp_path))


def test_mlflow_store_of_the_session_is_temporary() -> None:
    uri = os.environ["MLFLOW_TRACKING_URI"]
    assert uri.startswith("sqlite:///")
    assert not Path(uri[len("sqlite:///"):]).resolve().is_relative_to(ROOT)


def test_clean_copy_holds_the_repository_and_no_outputs(tmp_path: Path) -> None:
    copy = clean_copy(tmp_path / "clone")
    for entry in ("Snakefile", "workflow/rules/common.smk", "config/tiny.yaml",
                  "slurm/config.yaml", "vade/cli.py", "tests/conftest.py"):
        assert (copy / entry).is_file(), entry
    assert fingerprint(copy) == {}
    assert not (copy / ".venv").exists() and not (copy / ".git").exists()
