"""The peers (MoPPS, GRESO, MMR1, SEC and their named variants) as training methods on the
local trainer.

Real: the method table, ``make_sampler``, the peer samplers, the local loop (loss, optimizer,
checkpoint and resume), the DuckDB history with its ``peer_state`` table, MLflow on sqlite. Stand-in:
the toy policy (``vade.train.local.toy``) instead of the tiny Qwen2.5-VL, so a step takes
milliseconds; its rewards are real rewards of real generated answers.

Each peer runs uninterrupted once per module (``whole``, 6 steps): its history is checked against
the peer's published update rule, recomputed here by hand from the same run's ``events`` (r of G
per trained sample), so a peer that logged the wrong thing, or updated by the wrong rule, fails;
and a run crashed after step 5 and resumed must write the same history.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
import torch
from peers_cases import peer_state_rows, state_by_step
from test_train_local import N_TRAIN, G, _cfg, _paths, _tables, write_toy_data

from vade import methods
from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy

torch.set_num_threads(1)
PEERS = methods.names_where(chooser="peer")
STEPS = 6  # _cfg's: checkpoints and snapshots every 2 steps


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """The toy data with ``extra_info.difficulty`` = sample id / N_TRAIN (published SEC's arms:
    ids 0-9 -> level 0, 10-19 -> 1, ... in 5 equal-width levels of [0, 1]); the other peers do
    not read it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = write_toy_data(tmp_path_factory.mktemp("labelled"))
    rows = pq.read_table(d / "train.parquet").to_pylist()
    for i, row in enumerate(rows):
        row["extra_info"]["difficulty"] = i / N_TRAIN
    pq.write_table(pa.Table.from_pylist(rows), d / "train.parquet")
    return d


@pytest.fixture(scope="module")
def mlflow_db(tmp_path_factory) -> Path:
    """An empty MLflow store at the current schema. Each run gets a copy: building the schema
    (MLflow's alembic migrations) took about 90% of a toy run's time."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("mlflow") / "ml.db"
    MlflowClient(f"sqlite:///{db}").search_experiments()
    return db


@pytest.fixture(scope="module")
def run(labelled, mlflow_db):
    """``run(out, method, crash_after_step=None)``: one attempt of a toy run into ``out``, whose
    folder holds its MLflow store (``_cfg``'s), made from the template on the first attempt."""
    def attempt(out: Path, method: str, crash_after_step: int | None = None) -> Path:
        out.parent.mkdir(parents=True, exist_ok=True)
        if not (out.parent / "ml.db").exists():
            shutil.copyfile(mlflow_db, out.parent / "ml.db")
        train_local(_cfg(out.parent, method=method), _paths(labelled, out), progress=False,
                    load_policy=ToyPolicy.load, crash_after_step=crash_after_step)
        return out / "history.duckdb"
    return attempt


@pytest.fixture(scope="module")
def whole(run, tmp_path_factory):
    """``whole(method)``: the history of the peer's uninterrupted run, run on first use."""
    root = tmp_path_factory.mktemp("whole")
    done: dict[str, Path] = {}

    def get(method: str) -> Path:
        if method not in done:
            done[method] = run(root / method / f"toy-grpo-{method}-s0", method)
        return done[method]
    return get


def _history(db: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(db), read_only=True)  # closed by its ``with``


def _events(con):
    """step -> list of (sample_id, r, G)."""
    out: dict[int, list] = {}
    for step, sid, r, g in con.execute("SELECT step, sample_id, correct, rollouts FROM events "
                                       "ORDER BY step, sample_id").fetchall():
        out.setdefault(step, []).append((sid, r, g))
    return out


def _initial_r(data):
    import pyarrow.parquet as pq

    return pq.read_table(data / "initial.parquet").column("correct").to_numpy()


def test_peers_are_rows_whose_chooser_is_the_lab_sampler():
    from vade.sampling import make_sampler
    from vade.sampling.peers import PEERS as CLASSES

    for name in PEERS:
        row = methods.get(name)
        assert row.chooser == "peer"
        assert row.config_sections == (("sampler", "dapo") if name == "greso" else ("sampler",))
        sampler = make_sampler(name, 10, 2, seed=0, alpha=np.full(10, 3.0),
                               beta=np.full(10, 5.0), labels=[0.1 * i for i in range(10)])
        assert type(sampler) is CLASSES[name] and sampler.config["kind"] == name
    assert methods.names_where(reads_difficulty=True) == ("mmr1", "mopps-prior", "mmr1-stale",
                                                         "sec-passrate")
    with pytest.raises(ValueError, match="mmr1 starts from the initial difficulty"):
        make_sampler("mmr1", 10, 2)
    with pytest.raises(ValueError, match="sec needs the training rows' extra_info.difficulty"):
        make_sampler("sec", 10, 2)
    with pytest.raises(ValueError, match="reads_difficulty is for chooser 'peer'"):
        methods.Method("x", "vade", "x", "k", "main", reads_difficulty=True)


def test_mopps_history_follows_the_decayed_beta_update(whole):
    """a <- 0.5 a + 0.5 * 1 + r, b <- 0.5 b + 0.5 * 1 + (G - r) on the trained prompts only."""
    db = whole("mopps")
    rows = peer_state_rows(db)
    a, b = state_by_step(rows, "a"), state_by_step(rows, "b")
    with _history(db) as con:
        ev = _events(con)
        assert con.execute("SELECT sampler FROM runs").fetchone()[0] == "mopps"
    assert len(a[0]) == N_TRAIN and set(a[0].values()) == {1.0}  # flat prior, every sample
    cur_a, cur_b = dict(a[0]), dict(b[0])
    for step in range(1, STEPS + 1):
        # the observed samples' new state; every sample on snapshot steps (snapshot_every 2)
        assert set(a[step]) == (set(range(N_TRAIN)) if step % 2 == 0
                                else {s for s, _, _ in ev[step]})
        for sid, r, g in ev[step]:
            cur_a[sid] = 0.5 * cur_a[sid] + 0.5 + r
            cur_b[sid] = 0.5 * cur_b[sid] + 0.5 + (g - r)
            assert a[step][sid] == pytest.approx(cur_a[sid])
            assert b[step][sid] == pytest.approx(cur_b[sid])


def test_greso_trains_only_informative_groups_and_learns_from_the_dropped_ones(whole):
    """Published GRESO: DAPO's filter keeps B informative groups (effective ratio 1 on every
    full step), the rollouts count every generated group under DAPO's cap, and the streaks
    count the groups the filter dropped, which the history's events never show."""
    db = whole("greso")
    with _history(db) as con:
        ev = _events(con)
        rows = con.execute("SELECT step, rollouts FROM steps ORDER BY step").fetchall()
        metrics = {(s, n): v for s, n, v in con.execute(
            "SELECT step, name, value FROM metrics WHERE name LIKE 'dapo/%'").fetchall()}
        peer = {(s, n): v for s, n, v in con.execute(
            "SELECT step, name, value FROM metrics WHERE name LIKE 'peer/%'").fetchall()}
        assert con.execute("SELECT sampler FROM runs").fetchone()[0] == "greso"
    for step, rollouts in rows:
        kept, dropped = metrics[(step, "dapo/kept_groups")], metrics[(step, "dapo/discarded_groups")]
        assert len(ev[step]) == kept and all(0 < r < g for _, r, g in ev[step])
        assert rollouts == (kept + dropped + metrics[(step, "dapo/surplus_groups")]) * G
    assert sum(r for _, r in rows) <= 3 * STEPS * 6 * G  # DAPO's cap: 3x a plain run
    streak = state_by_step(peer_state_rows(db), "streak")  # every sample on snapshot steps
    dropped_total = sum(v for (s, n), v in metrics.items()
                        if n == "dapo/discarded_groups" and s <= 4)
    assert dropped_total > 0  # the toy policy gives zero-variance groups to drop
    assert sum(v != 0 for v in streak[4].values()) > 0  # ... and GRESO counted them
    # p moves by 0.01 a step, and only once the walk is past epoch 0 (its refills can draw up
    # to 3 x 6 of the 48 prompts a step, so epoch 1 begins within the first 5 steps)
    before = {"peer/p_easy": 0.5, "peer/p_hard": 0.5}
    for step, _ in rows:
        for name, last in before.items():
            moved = abs(peer[(step, name)] - last)
            assert moved == pytest.approx(0.01 if peer[(step, "peer/epoch")] >= 1 else 0.0)
            before[name] = peer[(step, name)]
    assert peer[(5, "peer/epoch")] >= 1


def test_mmr1_starts_from_the_initial_rollouts_then_the_latest_group(whole, labelled):
    db = whole("mmr1")
    p = state_by_step(peer_state_rows(db), "p_hat")
    r0 = _initial_r(labelled)
    with _history(db) as con:
        ev = _events(con)
        # the draws' weight (gain) is p(1-p) of the estimate before the step
        gains = con.execute("SELECT sample_id, gain, p_drawn FROM events WHERE step = 1"
                            ).fetchall()
    assert [p[0][i] for i in range(N_TRAIN)] == pytest.approx(list(r0 / G))
    for step in range(1, STEPS + 1):
        for sid, r, g in ev[step]:
            assert p[step][sid] == pytest.approx(r / g)
    for sid, gain, pd in gains:
        assert pd == pytest.approx(r0[sid] / G) and gain == pytest.approx(pd * (1 - pd))


def test_mmr1_rescores_its_pool_and_is_charged_for_it_mmr1_stale_is_not(whole):
    """Published MMR1 re-scores all 48 prompts with 8 fresh rollouts after every 4th step: step
    5 generates 6 x 8 training + 48 x 8 re-scoring = 432 rollouts, the others 48 (before
    2026-11-28 no trainer generated them and the report charged them anyway). After the
    re-scoring, an untrained prompt's estimate is its re-scoring r / 8, no longer its initial
    one. mmr1-stale never re-scores: 48 rollouts every step, estimates only from training."""
    for method, step5 in (("mmr1", 432), ("mmr1-stale", 48)):
        with _history(whole(method)) as con:
            rollouts = dict(con.execute("SELECT step, rollouts FROM steps").fetchall())
            charged = con.execute("SELECT step, value FROM metrics WHERE name = "
                                  "'mmr1/rescore_rollouts'").fetchall()
        assert rollouts == {s: step5 if s == 5 else 48 for s in range(1, STEPS + 1)}, method
        assert charged == ([(5, 384.0)] if method == "mmr1" else []), method
    p = state_by_step(peer_state_rows(whole("mmr1")), "p_hat")
    assert len(p[6]) == N_TRAIN  # step 6 is a snapshot step: every prompt's estimate
    with _history(whole("mmr1")) as con:
        trained = {sid for (sid,) in con.execute("SELECT DISTINCT sample_id FROM events")
                   .fetchall()}
    assert all(v * G == round(v * G) for v in p[6].values())  # r / 8 of its latest evidence
    assert trained != set(range(N_TRAIN))  # some prompts were never trained: their p moved
    moved = [i for i in range(N_TRAIN) if i not in trained and p[6][i] != p[0][i]]
    assert moved  # ... only because the re-scoring measured them afresh


@pytest.mark.parametrize("method, decay_all", [("sec", True), ("sec-passrate", False)],
                         ids=["sec", "sec-passrate"])
def test_sec_arms_and_their_q_by_hand(whole, labelled, method, decay_all):
    """sec's arms are the data's labels (``labelled``: level floor(5 id / 48) of 5) and
    every arm decays; sec-passrate's arms bin the initial rollouts (r of G = 8 into 5 bins,
    easiest first) and only trained arms move. Q per step by hand from the events:
    (1-a) Q + a mean|A| (a = 0.5), untrained arms moving toward 0 only when ``decay_all``."""
    db = whole(method)
    cat = state_by_step(peer_state_rows(db), "category")[0]
    if method == "sec":
        assert [int(cat[i]) for i in range(N_TRAIN)] == [5 * i // N_TRAIN for i in range(N_TRAIN)]
    else:
        r0 = _initial_r(labelled)
        by_hand = {0: {7, 8}, 1: {5, 6}, 2: {4}, 3: {2, 3}, 4: {0, 1}}
        for sid in range(N_TRAIN):
            assert r0[sid] in by_hand[int(cat[sid])]
    with _history(db) as con:
        ev = _events(con)
        logged = {}
        for step in ev:
            logged[step] = dict(con.execute("SELECT name, value FROM metrics WHERE step = ? AND"
                                            " name LIKE 'peer/q%'", [step]).fetchall())
    q = np.zeros(5)
    for step in sorted(ev):
        adv: dict[int, list] = {}
        for sid, r, g in ev[step]:
            p = r / g  # mean |A| of a binary group with the unbiased std
            adv.setdefault(int(cat[sid]), []).append(2 * np.sqrt(p * (1 - p) * (g - 1) / g))
        for c in range(5):
            if c in adv:
                q[c] = 0.5 * q[c] + 0.5 * np.mean(adv[c])
            elif decay_all:
                q[c] = 0.5 * q[c]
        assert logged[step] == pytest.approx({f"peer/q{c}": q[c] for c in range(5)})


@pytest.mark.parametrize("method", PEERS)
def test_peer_resume_after_a_crash_equals_an_uninterrupted_run(run, whole, tmp_path, method):
    cut = tmp_path / f"toy-grpo-{method}-s0"
    with pytest.raises(RuntimeError, match="simulated crash after step 5"):
        run(cut, method, crash_after_step=5)
    resumed = run(cut, method)
    a, b = _tables(whole(method)), _tables(resumed)
    for table in a:
        assert a[table] == b[table], table
    pa_, pb = peer_state_rows(whole(method)), peer_state_rows(resumed)
    assert pa_ == pb and len(pa_) > 0
    # every sample at step 0 and at the snapshot steps (snapshot_every 2), observed ones between
    assert {s for s, *_ in pa_} == set(range(STEPS + 1))
