"""`vade sql` is read-only for the machine: no writes anywhere, only the given databases readable,
no extension installs, settings locked; ordinary queries over several run files still work.

Everything here is real: DuckDB, RunStore files written by a real sampler, the real CLI (in-process
through ``vade.cli.main`` and once as a subprocess). Nothing needs a GPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from vade.cli import main
from vade.sampling import make_sampler
from vade.store import RunStore, open_catalog, open_readonly, query
from vade.store.query import ReadOnlyError

N, B, G = 40, 4, 8
REPO = Path(__file__).resolve().parents[1]


def _history(path: Path, run_id: str, steps: int) -> None:
    """A small run file: `steps` steps of the vanilla sampler on fixed outcomes."""
    sampler = make_sampler("vanilla", N, B, seed=3)
    outcomes = np.random.default_rng(7).integers(0, G + 1, size=(steps, B))
    with RunStore(path, run_id) as store:
        store.start_run(method="vanilla", sampler_config=sampler.config, config={},
                        code_version="test")
        store.log_initial_state(None, None, n_samples=N)
        for t in range(steps):
            obs = sampler.observe(sampler.select(), outcomes[t], G)
            store.log_step(obs, sampler_seconds=0.0, metrics={"loss": float(t)}, state=sampler)


@pytest.fixture(scope="module")
def written_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run files, written once per module; tests get a copy (``runs``)."""
    folder = tmp_path_factory.mktemp("written") / "runs"
    _history(folder / "a.duckdb", "a", 3)
    _history(folder / "b.duckdb", "b", 2)
    return folder


@pytest.fixture()
def runs(written_runs: Path, tmp_path: Path) -> Path:
    """Two run files (3 and 2 steps) in one directory, as `vade sql --db <dir>` reads them: a
    test's own copy of the module's files (a byte copy of a closed DuckDB file is that file)."""
    return Path(shutil.copytree(written_runs, tmp_path / "runs"))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(sql: str, runs: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run `vade sql` on the runs; assert it fails and changed nothing; return its error."""
    before = _snapshot(runs.parent)
    assert main(["sql", sql, "--db", str(runs)]) == 2
    err = capsys.readouterr().err
    assert "vade sql: error:" in err and "read-only" in err
    assert _snapshot(runs.parent) == before  # no file written, created or changed
    return err


@pytest.mark.parametrize("sql", [
    "COPY (SELECT 1) TO '{tmp}/x.csv'",
    "COPY steps TO '{tmp}/x.parquet' (FORMAT parquet)",
    "EXPORT DATABASE '{tmp}/dump'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "ATTACH '{tmp}/other.duckdb' AS other",
    "DETACH run_file_0; ATTACH '{runs}/a.duckdb' AS w; DELETE FROM w.steps",
    "CREATE TEMP TABLE t AS SELECT 1",
    "DELETE FROM steps",
])
def test_statements_other_than_queries_are_refused_by_name(sql, runs, capsys):
    err = _refused(sql.format(tmp=runs.parent, runs=runs), runs, capsys)
    assert "refused" in err and sql.split()[0].upper() in err.upper()
    assert not (runs.parent / "x.csv").exists() and not (runs.parent / "other.duckdb").exists()


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT count(*) FROM read_blob('{runs}/../*')",
    "SELECT * FROM glob('/etc/*')",
])
def test_queries_cannot_read_other_files(sql, runs, capsys):
    err = _refused(sql.format(runs=runs), runs, capsys)
    assert "Permission Error" in err


def test_the_connection_itself_is_sealed(runs, tmp_path):
    """What a Python caller of open_catalog gets: the seal holds without the statement check."""
    con = open_catalog([runs])
    for sql, error in [
        (f"COPY (SELECT 1) TO '{tmp_path}/x.csv'", duckdb.PermissionException),
        ("SELECT * FROM read_text('/etc/passwd')", duckdb.PermissionException),
        (f"ATTACH '{tmp_path}/other.duckdb' AS other", duckdb.PermissionException),
        ("INSTALL httpfs", duckdb.Error),
        ("SET enable_external_access = true", duckdb.InvalidInputException),
        ("SET temp_directory = '/tmp'", duckdb.InvalidInputException),
        ("DELETE FROM run_file_0.steps", duckdb.Error),
    ]:
        with pytest.raises(error):
            con.execute(sql)
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "other.duckdb").exists()
    # no spill files next to anything: queries that do not fit in memory fail instead
    assert con.execute("SELECT current_setting('temp_directory')").fetchone() == ("",)
    assert con.execute("SELECT count(*) FROM steps").fetchone() == (5,)


def test_query_runs_queries_only(runs):
    with pytest.raises(ReadOnlyError, match="refused COPY statement"):
        query([runs], f"SELECT 1; COPY (SELECT 1) TO '{runs.parent}/x.csv'")
    assert not (runs.parent / "x.csv").exists()
    assert query([runs], "SELECT count(*) FROM events").fetchone() == (5 * B,)


def test_single_files_opened_twice_stay_usable(runs):
    """Sealing locks a DuckDB instance; two connections on one file must not share one."""
    first = open_readonly(runs / "a.duckdb")
    second = open_readonly(runs / "a.duckdb")
    assert first.execute("SELECT max(step) FROM steps").fetchone() == (3,)
    assert second.execute("SELECT max(step) FROM steps").fetchone() == (3,)


def test_the_real_cli_still_answers_queries_over_several_runs(runs):
    """`vade sql --db <dir>` as a user runs it (subprocess): a join across both run files."""
    sql = ("SELECT r.run_id, count(*) AS steps, sum(s.n_selected) AS picks FROM runs r "
           "JOIN steps s USING (run_id) GROUP BY r.run_id ORDER BY r.run_id")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "vade.cli", "sql", sql, "--db", str(runs),
                           "--format", "csv"], capture_output=True, text=True, env=env,
                          cwd=runs.parent, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['"run_id","steps","picks"', f'"a",3,{3 * B}',
                                   f'"b",2,{2 * B}']
    bad = subprocess.run([sys.executable, "-m", "vade.cli", "sql",
                          "SELECT * FROM read_text('/etc/passwd')", "--db", str(runs)],
                         capture_output=True, text=True, env=env, cwd=runs.parent, timeout=120)
    assert bad.returncode == 2 and "root:" not in bad.stdout
    assert "read-only" in bad.stderr and "Permission Error" in bad.stderr
    assert sorted(p.name for p in runs.parent.iterdir()) == ["runs"]  # nothing written in cwd


def test_a_file_another_process_is_writing_is_named_not_a_traceback(tmp_path, capsys):
    """Real DuckDB, real second process holding the write lock (a run still training)."""
    busy = tmp_path / "busy.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "c.execute('CREATE TABLE t (x INT)'); print('ready', flush=True); time.sleep(60)",
         str(busy)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(ValueError, match=r"busy\.duckdb: another process is writing it"):
            open_catalog([busy])
        code = main(["sql", "SELECT 1", "--db", str(busy)])
        assert code != 0 and "another process is writing it" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


def test_a_runaway_query_stops_at_the_time_limit(runs, capsys):
    """A cross join of 10^16 rows ran until killed; ``--timeout 0.2`` interrupts it (the bound
    below only keeps a regression from hanging the suite: the join alone runs for days)."""
    import time

    start = time.monotonic()
    code = main(["sql", "SELECT sum(a.range * b.range) FROM range(100000000) a, "
                 "range(100000000) b", "--db", str(runs), "--timeout", "0.2"])
    assert code == 2 and time.monotonic() - start < 30
    assert "ran longer than --timeout 0.2 s and was stopped" in capsys.readouterr().err


def test_the_memory_limit_flag_caps_a_query(runs, capsys):
    sql = "SELECT count(DISTINCT range) FROM range(30000000)"
    assert main(["sql", sql, "--db", str(runs), "--memory-limit", "20MB"]) == 2
    assert "raise --memory-limit, now 20MB" in capsys.readouterr().err
    assert main(["sql", sql, "--db", str(runs), "--memory-limit", "twenty"]) == 2
    assert "--memory-limit 'twenty'" in capsys.readouterr().err


def test_output_file_extension_sets_the_format(runs, tmp_path, capsys):
    """``-o FILE`` without ``--format`` wrote nothing and exited 0."""
    import json

    sql = "SELECT run_id, count(*) AS n FROM steps GROUP BY run_id ORDER BY run_id"
    assert main(["sql", sql, "--db", str(runs), "-o", str(tmp_path / "n.json")]) == 0
    assert json.loads((tmp_path / "n.json").read_text()) == [{"run_id": "a", "n": 3},
                                                              {"run_id": "b", "n": 2}]
    assert main(["sql", sql, "--db", str(runs), "-o", str(tmp_path / "n.csv")]) == 0
    assert (tmp_path / "n.csv").read_text().splitlines() == ['"run_id","n"', '"a",3', '"b",2']
    for bad, message in ((["-o", str(tmp_path / "n.txt")], "give a .csv or .json file"),
                         (["-o", str(tmp_path / "x.csv"), "--format", "json"],
                          "says csv but --format is json"),
                         (["-o", str(tmp_path / "x.csv"), "--format", "table"],
                          "the table format prints to the terminal")):
        assert main(["sql", sql, "--db", str(runs), *bad]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "n.txt").exists() and not (tmp_path / "x.csv").exists()


def test_a_folder_query_skips_runs_still_being_written(runs, capsys):
    """Real second process holding b.duckdb's write lock (a run training): the folder query
    answers from a.duckdb and names b; naming b itself stays an error."""
    busy = runs / "b.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('ready', flush=True); time.sleep(60)", str(busy)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        code = main(["sql", "SELECT run_id, count(*) AS n FROM steps GROUP BY run_id",
                     "--db", str(runs), "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0 and '"run_id": "a"' in out and '"b"' not in out
        assert f"skipped {busy.resolve()}: another process is writing it" in err
        assert main(["sql", "SELECT 1", "--db", str(busy)]) == 2
    finally:
        holder.kill()
        holder.wait()
