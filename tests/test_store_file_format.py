"""Every DuckDB file the project writes is in the v1.0.0 storage format, so DuckDB 1.x opens it.

Real: DuckDB 2.0 writing through the project's own writers, the file header read byte by byte.
The check with a real DuckDB 1.x runs when ``VADE_DUCKDB1_PYTHON`` names a Python that has
duckdb 1.x installed: ``make test`` (and so CI, ``.ci/run``) builds one (``.venv-duckdb1``, duckdb
1.1.3) and sets it; a bare ``pytest`` skips it, because the test environment holds one duckdb.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from vade.eval.store import EvalRow, write_eval_results
from vade.rollout.difficulty import DifficultyConfig, write_difficulty
from vade.sampling import make_sampler
from vade.store import RunStore
from vade.store.file_format import connect_for_writing, storage_version

REPO = Path(__file__).resolve().parents[1]
V1_HEADER = 64  # DuckDB's storage version number for the v1.0.0 format (2.0's own: 999)


def _header_version(path: Path) -> int:
    """The storage version number in the main header: after an 8-byte checksum, b'DUCK'."""
    head = path.read_bytes()[:20]
    assert head[8:12] == b"DUCK", f"{path} is not a DuckDB file"
    return int.from_bytes(head[12:20], "little")


def _run_file(path: Path) -> Path:
    sampler = make_sampler("vanilla", 20, 4, seed=1)
    with RunStore(path, "r") as store:
        store.start_run(method="vanilla", sampler_config=sampler.config, config={},
                        code_version="test")
        obs = sampler.observe(sampler.select(), np.array([0, 3, 8, 5]), 8)
        store.log_step(obs, sampler_seconds=0.0, metrics={"loss": 1.0}, state=sampler)
    return path


def test_connect_for_writing_writes_the_v1_format_and_plain_connect_does_not(tmp_path):
    """The control: DuckDB 2.0's default is the format 1.x cannot read."""
    with connect_for_writing(tmp_path / "new.duckdb") as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
        assert storage_version(con) == "v1.0.0+"
    with duckdb.connect(str(tmp_path / "plain.duckdb")) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    assert _header_version(tmp_path / "new.duckdb") == V1_HEADER
    assert _header_version(tmp_path / "plain.duckdb") != V1_HEADER
    with pytest.raises(ValueError, match="no storage version"):
        storage_version(duckdb.connect(":memory:"))


@pytest.fixture()
def written(tmp_path: Path) -> list[Path]:
    """One file from each writer cheap enough for a unit test: run history, evaluation results,
    initial difficulty (the data catalog and simulator tables share the same helper)."""
    run = _run_file(tmp_path / "run" / "history.duckdb")
    ev = write_eval_results(tmp_path / "eval.duckdb", [EvalRow(
        run_id="r", model="m", algorithm="grpo", method="vade", seed=0, benchmark="b", repeat=0,
        seed_eval=0, score=50.0, n=2, checkpoint="c", task="t")])
    write_difficulty(tmp_path / "diff", {"sample_id": [0, 1], "correct": [1, 8],
                                         "rollouts": [8, 8]}, cfg=DifficultyConfig())
    return [run, ev, tmp_path / "diff" / "difficulty.duckdb"]


def test_the_project_writers_write_the_v1_format(written):
    for path in written:
        assert _header_version(path) == V1_HEADER, path
    with RunStore(written[0], "r") as store:  # reopened to append: the format stays
        assert store.last_step() == 1
    assert _header_version(written[0]) == V1_HEADER


def _writes_a_file(call: ast.Call) -> bool:
    """A duckdb.connect call that may open a file read-write (not read-only, not :memory:)."""
    if any(k.arg == "read_only" for k in call.keywords):
        return False
    first = call.args[0] if call.args else None
    return not (isinstance(first, ast.Constant) and first.value == ":memory:")


def test_no_writer_bypasses_connect_for_writing():
    """A new writer that calls duckdb.connect on a file would write 2.0's format again."""
    offenders = []
    for path in sorted((REPO / "vade").rglob("*.py")):
        if path.name == "file_format.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "connect" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "duckdb" and _writes_a_file(node)):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


READ_ALL = """
import duckdb, json, sys
out = {"version": duckdb.__version__}
for path in sys.argv[1:]:
    con = duckdb.connect(path, read_only=True)
    names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                       "WHERE table_schema = 'main' ORDER BY 1").fetchall()]
    out[path] = {n: sorted(map(repr, con.execute(f'SELECT * FROM "{n}"').fetchall()))
                 for n in names}
    con.close()
print(json.dumps(out))
"""


def _read_all(python: str, paths: list[Path]) -> dict:
    """Every table and view of each file, read by the duckdb that `python` imports."""
    done = subprocess.run([python, "-c", READ_ALL, *map(str, paths)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not os.environ.get("VADE_DUCKDB1_PYTHON"),
                    reason="set VADE_DUCKDB1_PYTHON to a Python with duckdb 1.x")
def test_duckdb_1x_reads_what_the_project_writes(written):
    old = _read_all(os.environ["VADE_DUCKDB1_PYTHON"], written)
    new = _read_all(sys.executable, written)
    assert old.pop("version").startswith("1.") and new.pop("version").startswith("2.")
    assert old == new  # every table and view, row for row
    events = old[str(written[0])]["events"]
    assert len(events) == 4  # the one step's four selected samples
