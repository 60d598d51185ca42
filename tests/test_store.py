"""DuckDB history: views agree with the sampler, resumes neither duplicate nor lose, SQL is read-only."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from vade.cli import main
from vade.sampling import make_sampler
from vade.store import RunStore, open_catalog, query

N, B, G = 300, 16, 8


def _outcomes(steps: int) -> np.ndarray:
    return np.random.default_rng(11).integers(0, G + 1, size=(steps, B))


def _sampler(method="vade"):
    init = np.random.default_rng(0).integers(0, G + 1, N).astype(float)
    if method == "vanilla":
        return make_sampler(method, N, B, seed=5)
    return make_sampler(method, N, B, seed=5, alpha=init, beta=G - init)


def _run(path, run_id, method="vade", steps=12, start=0, sampler=None, snapshot_every=4,
         states=None, checkpoints=None):
    """Drive a sampler for steps [start, steps) and log every step; return the sampler."""
    s = sampler or _sampler(method)
    outcomes = _outcomes(steps)
    with RunStore(path, run_id, snapshot_every=snapshot_every) as store:
        if start == 0:
            store.start_run(method=method, sampler_config=s.config, config={"lr": 1e-6},
                            code_version="test")
            store.log_initial_state(getattr(s, "alpha", None), getattr(s, "beta", None),
                                    n_samples=N)
        for t in range(start, steps):
            idx = s.select()
            obs = s.observe(idx, outcomes[t], G)
            store.log_step(obs, sampler_seconds=0.01, metrics={"loss": float(t)}, state=s)
            if states is not None:
                states[obs.step] = (s.alpha.copy(), s.beta.copy(), np.sort(idx))
            if checkpoints is not None:
                checkpoints[obs.step] = s.state_dict()
    return s


def test_history_view_reproduces_the_sampler_state_at_every_step(tmp_path):
    states: dict[int, tuple] = {}
    path = tmp_path / "run.duckdb"
    _run(path, "r1", steps=12, states=states)
    con = duckdb.connect(str(path), read_only=True)
    for step, (alpha, beta, selected) in states.items():
        got = con.execute(
            "SELECT alpha, beta, selected FROM sample_history WHERE step = ? ORDER BY sample_id",
            [step]).fetchnumpy()
        np.testing.assert_allclose(got["alpha"], alpha, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got["beta"], beta, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(np.flatnonzero(got["selected"]), selected)
    # one sample's full history: every step present, once
    steps = con.execute("SELECT step FROM sample_history WHERE sample_id = 7 ORDER BY step"
                        ).fetchnumpy()["step"]
    np.testing.assert_array_equal(steps, np.arange(0, 13))


def test_step_metrics_and_views_hold_the_right_numbers(tmp_path):
    path = tmp_path / "run.duckdb"
    _run(path, "r1", steps=6)
    outcomes = _outcomes(6)
    rows = query([path], "SELECT step, effective_ratio, effective_ratio_events, rollouts,"
                         " rollouts_cumulative FROM step_summary ORDER BY step").fetchall()
    for t, (step, ratio, ratio_events, rollouts, cumulative) in enumerate(rows):
        expected = np.mean((outcomes[t] > 0) & (outcomes[t] < G))
        assert step == t + 1
        assert ratio == pytest.approx(expected) and ratio_events == pytest.approx(expected)
        assert rollouts == B * G and cumulative == B * G * (t + 1)
    loss = query([path], "SELECT value FROM metrics WHERE name = 'loss' AND step = 3").fetchone()
    assert loss == (2.0,)
    counts = query([path], "SELECT sum(times_selected) FROM selection_counts").fetchone()
    assert counts == (6 * B,)


def test_resume_rewrites_replayed_steps_without_duplicates(tmp_path):
    full_path, resumed_path = tmp_path / "full.duckdb", tmp_path / "resumed.duckdb"
    _run(full_path, "r", steps=10)
    # the interrupted run: logged 8 steps, but its last checkpoint was at step 5
    checkpoints: dict = {}
    _run(resumed_path, "r", steps=8, checkpoints=checkpoints)
    restored = _sampler()
    restored.load_state_dict(checkpoints[5])
    with RunStore(resumed_path, "r", snapshot_every=4) as store:
        assert store.last_step() == 8
        store.start_run(method="vade", sampler_config=restored.config, config={"lr": 1e-6},
                        code_version="test")  # re-recording the run replaces its row
    _run(resumed_path, "r", steps=10, start=5, sampler=restored)

    def dump(path):
        con = duckdb.connect(str(path), read_only=True)
        out = {t: con.execute(f"SELECT * EXCLUDE ({ts}) FROM {t} ORDER BY ALL").fetchall()
               for t, ts in [("steps", "logged_at"), ("events", "run_id"),
                             ("snapshots", "run_id"), ("metrics", "run_id"),
                             ("runs", "started_at")]}
        con.close()
        return out

    full, resumed = dump(full_path), dump(resumed_path)
    assert full == resumed
    assert len(resumed["steps"]) == 10 and len(resumed["events"]) == 10 * B
    assert len(resumed["runs"]) == 1


def test_truncate_after_forgets_later_steps(tmp_path):
    path = tmp_path / "run.duckdb"
    _run(path, "r", steps=9)
    with RunStore(path, "r", snapshot_every=4) as store:
        store.truncate_after(4)
        assert store.last_step() == 4
    assert query([path], "SELECT max(step) FROM events").fetchone() == (4,)
    assert query([path], "SELECT max(step) FROM snapshots").fetchone() == (4,)


def test_log_metrics_records_step_zero_and_replaces_a_repeated_name(tmp_path):
    path = tmp_path / "run.duckdb"
    _run(path, "r", steps=2)
    with RunStore(path, "r") as store:
        store.log_metrics(0, {"val/acc": 0.25, "val/rows": 8})
        store.log_metrics(0, {"val/acc": 0.5})  # a resumed run validating step 0 again
        with pytest.raises(ValueError, match="from 0"):
            store.log_metrics(-1, {"val/acc": 1.0})
    rows = query([path], "SELECT name, value FROM metrics WHERE step = 0 ORDER BY name").fetchall()
    assert rows == [("val/acc", 0.5), ("val/rows", 8.0)]
    assert query([path], "SELECT count(*) FROM metrics WHERE step = 1").fetchone() == (1,)


def test_a_failed_step_write_rolls_back_and_keeps_earlier_steps(tmp_path, monkeypatch):
    path = tmp_path / "run.duckdb"
    s = _run(path, "r", steps=3)
    idx = s.select()
    obs = s.observe(idx, np.ones(B), G)
    with RunStore(path, "r") as store:
        def boom(*_a, **_k):
            raise RuntimeError("disk full")
        monkeypatch.setattr(store, "_insert", boom)
        with pytest.raises(RuntimeError, match="disk full"):
            store.log_step(obs, metrics={"loss": 1.0})
    assert query([path], "SELECT count(*) FROM steps").fetchone() == (3,)
    assert query([path], "SELECT count(*) FROM metrics WHERE step = 4").fetchone() == (0,)
    assert query([path], "SELECT count(*) FROM events").fetchone() == (3 * B,)


def test_uniform_runs_log_events_without_a_posterior(tmp_path):
    path = tmp_path / "run.duckdb"
    _run(path, "u", method="vanilla", steps=3)
    row = query([path], "SELECT count(*), count(alpha), count(p_drawn) FROM sample_history"
                        " WHERE selected").fetchone()
    assert row == (3 * B, 0, 0)
    assert query([path], "SELECT decay_unselected FROM runs").fetchone() == (None,)


def test_catalog_unions_runs_and_keeps_views(tmp_path):
    _run(tmp_path / "a.duckdb", "a", steps=3)
    _run(tmp_path / "b.duckdb", "b", method="vanilla", steps=2)
    con = open_catalog([tmp_path])
    rows = con.execute("SELECT run_id, max(step) FROM step_summary GROUP BY run_id ORDER BY 1"
                       ).fetchall()
    assert rows == [("a", 3), ("b", 2)]
    n = con.execute("SELECT count(*) FROM sample_history WHERE run_id = 'a'").fetchone()
    assert n == (N * 4,)


def test_catalog_joins_histories_with_the_data_catalog(tmp_path, capsys):
    """Difficulty history joins the samples table of `vade build-data` in one query, and
    `--db` may be given more than once."""
    _run(tmp_path / "runs" / "a.duckdb", "a", steps=3)
    con = duckdb.connect(str(tmp_path / "samples.duckdb"))
    con.execute("CREATE TABLE samples (sample_id BIGINT, domain VARCHAR)")
    con.execute("INSERT INTO samples SELECT i, CASE WHEN i < 100 THEN 'math' ELSE 'chart' END "
                "FROM range(?) t(i)", [N])
    con.close()
    sql = ("SELECT s.domain, sum(c.times_selected) AS picks FROM selection_counts c "
           "JOIN samples s USING (sample_id) GROUP BY s.domain ORDER BY s.domain")
    cat = open_catalog([tmp_path / "runs", tmp_path / "samples.duckdb"])
    picks = dict(cat.execute(sql).fetchall())
    assert sum(picks.values()) == 3 * B and set(picks) <= {"math", "chart"}
    events = cat.execute("SELECT sum(CASE WHEN sample_id < 100 THEN 1 ELSE 0 END) FROM events"
                         ).fetchone()[0]
    assert picks.get("math", 0) == events
    assert main(["sql", sql, "--db", str(tmp_path / "runs"), "--db",
                 str(tmp_path / "samples.duckdb"), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.split()[1:]
    assert {ln.split(",")[0].strip('"'): int(ln.split(",")[1]) for ln in lines} == picks


def test_vade_sql_prints_tables_csv_and_json(tmp_path, capsys):
    path = tmp_path / "run.duckdb"
    _run(path, "r", steps=4)
    assert main(["sql", "SELECT step, effective_ratio FROM steps ORDER BY step", "--db",
                 str(path)]) == 0
    assert "effective_ratio" in capsys.readouterr().out
    assert main(["sql", "SELECT step FROM steps ORDER BY step", "--db", str(path),
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out.split() == ['"step"', "1", "2", "3", "4"]
    out = tmp_path / "q.json"
    sql_file = tmp_path / "q.sql"
    sql_file.write_text("SELECT count(*) AS n FROM events")
    assert main(["sql", f"@{sql_file}", "--db", str(path), "--format", "json",
                 "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == [{"n": 4 * B}]


@pytest.mark.parametrize("many", [False, True])
def test_vade_sql_is_read_only(tmp_path, capsys, many):
    path = tmp_path / "run.duckdb"
    _run(path, "r", steps=2)
    if many:
        _run(tmp_path / "other.duckdb", "o", steps=1)
    db = [str(tmp_path)] if many else [str(path)]
    assert main(["sql", "DELETE FROM steps", "--db", *db]) == 2
    assert "error" in capsys.readouterr().err
    assert query([path], "SELECT count(*) FROM steps").fetchone() == (2,)


def test_vade_sql_names_a_missing_database(tmp_path, capsys):
    assert main(["sql", "SELECT 1", "--db", str(tmp_path / "nope.duckdb")]) == 2
    assert "no run database at" in capsys.readouterr().err


def test_step_summary_shows_the_generated_ratio_beside_the_trained_one(tmp_path):
    """DAPO's filter trains on informative groups only, so its trained ratio is 1.0 by
    construction; the share of what it generated (the trainer's metric
    dapo/generated_effective_ratio, here 0.25 at step 2) is the comparable number. A method
    without the filter has the two equal."""
    path = tmp_path / "run.duckdb"
    _run(path, "r1", steps=3)
    with RunStore(path, "r1") as store:
        store.log_metrics(2, {"dapo/generated_effective_ratio": 0.25})
    rows = query([path], "SELECT step, effective_ratio, effective_ratio_generated "
                         "FROM step_summary ORDER BY step").fetchall()
    assert rows[1][2] == 0.25
    assert [r[2] for r in (rows[0], rows[2])] == [rows[0][1], rows[2][1]]
