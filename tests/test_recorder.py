"""The run recorder: the standard step metrics, guarded MLflow, replayed steps replace rows."""

from __future__ import annotations

import logging

import duckdb
import numpy as np
import pytest

from vade.sampling.observation import Observation
from vade.store import RunStore
from vade.tracking import NullTracker
from vade.train.recorder import RunRecorder, reopen_by_name, step_metrics


def _obs(step: int, correct=(0.0, 3.0, 8.0, 2.0)) -> Observation:
    r = np.asarray(correct)
    nan = np.full(r.shape, np.nan)
    return Observation(step=step, indices=np.arange(r.size, dtype=np.int64) * 10, correct=r,
                       rollouts=np.full(r.shape, 8.0), p_drawn=nan, gain=nan.copy())


def test_step_metrics_by_hand():
    # r = 0, 3, 8, 2 of G = 8: informative 3 and 2 -> 2/4; accuracy (0 + 3 + 8 + 2) / 32
    assert step_metrics(_obs(1), rollouts=96, sampler_seconds=0.25) == {
        "vade/effective_ratio": 0.5,
        "vade/mean_accuracy": 13 / 32,
        "vade/rollouts": 96.0,
        "vade/n_selected": 4.0,
        "vade/sampler_seconds": 0.25,
    }


class _Flaky(NullTracker):
    """Stand-in for a tracking server: raises while ``down``, else records what it is sent."""

    def __init__(self) -> None:
        self.calls, self.down, self.logged, self.closed = 0, True, [], None

    def log_metrics(self, metrics, step):
        self.calls += 1
        if self.down:
            raise RuntimeError("mlflow server gone")
        self.logged.append((step, dict(metrics)))

    def close(self, status="FINISHED"):
        if self.down:
            raise RuntimeError("mlflow server gone")
        self.closed = status


def _store(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "h.duckdb", "r1")
    store.start_run(method="vanilla", sampler_config={"kind": "uniform", "n_samples": 40,
                                                     "batch_size": 4})
    return store


def test_metrics_an_unreachable_server_missed_are_sent_when_it_answers(tmp_path, caplog,
                                                                         monkeypatch):
    """Before: the first error switched tracking off, and every later metric was lost."""
    from vade.train import recorder as recorder_module

    clock = type("Clock", (), {"now": 100.0, "monotonic": lambda self: self.now})()
    monkeypatch.setattr(recorder_module, "time", clock)   # stand-in: the recorder's clock
    server = _Flaky()
    rec = RunRecorder(_store(tmp_path), server)
    with caplog.at_level(logging.WARNING, logger="vade.train.recorder"):
        rec.log_step(_obs(1), {"a": 1.0})
        rec.log_step(_obs(2), {"a": 2.0})   # within RETRY_S of the error: kept, not tried
        rec.set_tags({"x": 1})
        assert server.calls == 1 and rec.unsent == 3 and rec.tracking
        assert caplog.text.count("MLflow unreachable (mlflow server gone)") == 1
        clock.now += recorder_module.RETRY_S
        rec.log_step(_obs(3), {"a": 3.0})   # still down: one more try, no second line
        assert server.calls == 2 and rec.unsent == 4
        assert caplog.text.count("MLflow unreachable") == 1
        clock.now += recorder_module.RETRY_S
        server.down = False
        rec.log_step(_obs(4), {"a": 4.0})
    assert server.logged == [(1, {"a": 1.0}), (2, {"a": 2.0}), (3, {"a": 3.0}), (4, {"a": 4.0})]
    assert rec.unsent == 0 and "MLflow answers again" in caplog.text
    assert rec.store.last_step() == 4   # the history is complete all the same
    rec.close("FINISHED")
    assert server.closed == "FINISHED"


def test_a_server_still_down_at_the_end_is_one_line_and_the_history_is_whole(tmp_path, caplog):
    server = _Flaky()
    rec = RunRecorder(_store(tmp_path), server)
    with caplog.at_level(logging.WARNING, logger="vade.train.recorder"):
        rec.log_step(_obs(1), {"a": 1.0})
        rec.close("FINISHED")
    assert "MLflow still unreachable at the end: 2 call(s) not sent" in caplog.text
    assert server.logged == [] and server.closed is None


def test_a_tracker_that_cannot_be_opened_is_also_only_a_warning(tmp_path, caplog):
    def fail():
        raise ConnectionError("no route to mlflow")

    rec = RunRecorder(_store(tmp_path), fail)
    assert rec.run_id is None
    with caplog.at_level(logging.WARNING, logger="vade.train.recorder"):
        rec.log_metrics({"a": 1.0}, 1)
    assert "no route to mlflow" in caplog.text and rec.unsent == 1
    rec.close()


def test_reopen_by_name_opens_nothing_without_a_uri_and_nothing_before_metrics(tmp_path):
    assert reopen_by_name(None, "e", "r1") is None
    opened = []
    rec = RunRecorder(_store(tmp_path), lambda: opened.append(1) or NullTracker())
    rec.set_tags({"vade.stop_reason": "completed"})  # never opens a run just to tag it
    rec.log_params({"p": 1})
    assert opened == []
    rec.log_metrics({"a": 1.0}, 1)
    assert opened == [1]
    rec.close()


def test_a_replayed_step_replaces_its_rows(tmp_path):
    path = tmp_path / "h.duckdb"
    rec = RunRecorder(_store(tmp_path))
    for step in (1, 2, 3):
        rec.log_step(_obs(step), {"m": float(step)})
    rec.close()
    # resumed from the checkpoint of step 2: step 3 is replayed with other outcomes
    rec = RunRecorder(RunStore(path, "r1"))
    rec.log_step(_obs(3, correct=(8.0, 8.0, 1.0, 1.0)), {"m": 30.0},
                 store_metrics={"epoch": 1.0})
    rec.close()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT step, effective_ratio FROM steps ORDER BY step").fetchall() == [
        (1, 0.5), (2, 0.5), (3, 0.5)]
    assert con.execute("SELECT name, value FROM metrics WHERE step = 3").fetchall() == [
        ("epoch", 1.0)]
    assert con.execute("SELECT correct FROM events WHERE step = 3 ORDER BY sample_id"
                       ).fetchall() == [(8.0,), (8.0,), (1.0,), (1.0,)]
    con.close()


@pytest.mark.parametrize("status", [None, "FAILED"])
def test_close_ends_the_mlflow_run_only_when_given_a_status(tmp_path, status):
    ended = []

    class Owned(NullTracker):
        def close(self, status="FINISHED"):
            ended.append(status)

    rec = RunRecorder(_store(tmp_path), Owned())
    rec.close(status)
    assert ended == ([] if status is None else [status])
