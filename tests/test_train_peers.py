"""The peers (MoPPS, GRESO, MMR1, SEC and their named variants) as training methods on the
local trainer.

Real: the method table, ``make_sampler``, the peer samplers, the local loop (loss, optimizer,
checkpoint and resume), the DuckDB history with its ``peer_state`` table. Stand-in: the toy
policy (``vade.train.local.toy``) instead of the tiny Qwen2.5-VL, so a run takes milliseconds;
its rewards are real rewards of real generated answers.

Each peer's state in the history is checked against its published update rule, recomputed here
by hand from the same run's ``events`` (r of G per trained sample), so a peer that logged the
wrong thing, or updated by the wrong rule, fails.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
import torch
from test_train_local import N_TRAIN, G, _cfg, _paths, _tables, data  # noqa: F401 - fixture

from vade import methods
from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy

torch.set_num_threads(1)
PEERS = methods.names_where(chooser="peer")


@pytest.fixture(scope="module")
def labelled(data, tmp_path_factory):  # noqa: F811
    """The toy data with ``extra_info.difficulty`` = sample id / N_TRAIN (published SEC's arms:
    ids 0-9 -> level 0, 10-19 -> 1, ... in 5 equal-width levels of [0, 1])."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("labelled")
    for f in data.iterdir():
        shutil.copy(f, d / f.name)
    rows = pq.read_table(data / "train.parquet").to_pylist()
    for i, row in enumerate(rows):
        row["extra_info"]["difficulty"] = i / N_TRAIN
    pq.write_table(pa.Table.from_pylist(rows), d / "train.parquet")
    return d


def _run(data, out, method, **kw):  # noqa: F811 - the fixture's name
    cfg = _cfg(out.parent, method=method, **kw)
    return train_local(cfg, _paths(data, out), progress=False, load_policy=ToyPolicy.load)


def _state(con, name):
    """step -> {sample_id: value} of one peer_state name."""
    out: dict[int, dict[int, float]] = {}
    for step, sid, v in con.execute("SELECT step, sample_id, value FROM peer_state WHERE name = ?"
                                    " ORDER BY step, sample_id", [name]).fetchall():
        out.setdefault(step, {})[sid] = v
    return out


def _events(con):
    """step -> list of (sample_id, r, G)."""
    out: dict[int, list] = {}
    for step, sid, r, g in con.execute("SELECT step, sample_id, correct, rollouts FROM events "
                                       "ORDER BY step, sample_id").fetchall():
        out.setdefault(step, []).append((sid, r, g))
    return out


def _initial_r(data):  # noqa: F811
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
    assert methods.names_where(reads_difficulty=True) == ("mmr1", "mopps-prior", "sec-passrate")
    with pytest.raises(ValueError, match="mmr1 starts from the initial difficulty"):
        make_sampler("mmr1", 10, 2)
    with pytest.raises(ValueError, match="sec needs the training rows' extra_info.difficulty"):
        make_sampler("sec", 10, 2)
    with pytest.raises(ValueError, match="reads_difficulty is for chooser 'peer'"):
        methods.Method("x", "vade", "x", "k", "main", reads_difficulty=True)


def test_mopps_history_follows_the_decayed_beta_update(data, tmp_path):  # noqa: F811
    """a <- 0.5 a + 0.5 * 1 + r, b <- 0.5 b + 0.5 * 1 + (G - r) on the trained prompts only."""
    out = tmp_path / "toy-grpo-mopps-s0"
    _run(data, out, "mopps", steps=4, checkpoint_every=0)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    a, b, ev = _state(con, "a"), _state(con, "b"), _events(con)
    assert len(a[0]) == N_TRAIN and set(a[0].values()) == {1.0}  # flat prior, every sample
    cur_a, cur_b = dict(a[0]), dict(b[0])
    for step in (1, 2, 3, 4):
        # the observed samples' new state; every sample on snapshot steps (snapshot_every 2)
        assert set(a[step]) == (set(range(N_TRAIN)) if step % 2 == 0
                                else {s for s, _, _ in ev[step]})
        for sid, r, g in ev[step]:
            cur_a[sid] = 0.5 * cur_a[sid] + 0.5 + r
            cur_b[sid] = 0.5 * cur_b[sid] + 0.5 + (g - r)
            assert a[step][sid] == pytest.approx(cur_a[sid])
            assert b[step][sid] == pytest.approx(cur_b[sid])
    assert con.execute("SELECT sampler FROM runs").fetchone()[0] == "mopps"
    con.close()


def test_greso_trains_only_informative_groups_and_learns_from_the_dropped_ones(
        data, tmp_path):  # noqa: F811
    """Published GRESO: DAPO's filter keeps B informative groups (effective ratio 1 on every
    full step), the rollouts count every generated group under DAPO's cap, and the streaks
    count the groups the filter dropped, which the history's events never show."""
    out = tmp_path / "toy-grpo-greso-s0"
    _run(data, out, "greso", steps=5, checkpoint_every=0)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    ev = _events(con)
    rows = con.execute("SELECT step, rollouts FROM steps ORDER BY step").fetchall()
    metrics = {(s, n): v for s, n, v in con.execute(
        "SELECT step, name, value FROM metrics WHERE name LIKE 'dapo/%'").fetchall()}
    for step, rollouts in rows:
        kept, dropped = metrics[(step, "dapo/kept_groups")], metrics[(step, "dapo/discarded_groups")]
        assert len(ev[step]) == kept and all(0 < r < g for _, r, g in ev[step])
        assert rollouts == (kept + dropped + metrics[(step, "dapo/surplus_groups")]) * G
    assert sum(r for _, r in rows) <= 3 * 5 * 6 * G  # DAPO's cap: 3x a plain run
    streak = _state(con, "streak")  # every sample on the snapshot steps 2 and 4
    dropped_total = sum(v for (s, n), v in metrics.items()
                        if n == "dapo/discarded_groups" and s <= 4)
    assert dropped_total > 0  # the toy policy gives zero-variance groups to drop
    assert sum(v != 0 for v in streak[4].values()) > 0  # ... and GRESO counted them
    assert con.execute("SELECT sampler FROM runs").fetchone()[0] == "greso"
    # p moves by 0.01 a step, and only once the walk is past epoch 0 (its refills can draw up
    # to 3 x 6 of the 48 prompts a step, so epoch 1 begins within the 5 steps)
    peer = {(s, n): v for s, n, v in con.execute(
        "SELECT step, name, value FROM metrics WHERE name LIKE 'peer/%'").fetchall()}
    before = {"peer/p_easy": 0.5, "peer/p_hard": 0.5}
    for step, _ in rows:
        for name in before:
            moved = abs(peer[(step, name)] - before[name])
            assert moved == pytest.approx(0.01 if peer[(step, "peer/epoch")] >= 1 else 0.0)
            before[name] = peer[(step, name)]
    assert peer[(5, "peer/epoch")] >= 1
    con.close()


def test_mmr1_starts_from_the_initial_rollouts_then_the_latest_group(data, tmp_path):  # noqa: F811
    out = tmp_path / "toy-grpo-mmr1-s0"
    _run(data, out, "mmr1", steps=4, checkpoint_every=0)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    p, ev = _state(con, "p_hat"), _events(con)
    r0 = _initial_r(data)
    assert [p[0][i] for i in range(N_TRAIN)] == pytest.approx(list(r0 / G))
    for step in (1, 2, 3, 4):
        for sid, r, g in ev[step]:
            assert p[step][sid] == pytest.approx(r / g)
    # the draws' weight (gain) is p(1-p) of the estimate before the step
    gains = con.execute("SELECT sample_id, gain, p_drawn FROM events WHERE step = 1").fetchall()
    for sid, gain, pd in gains:
        assert pd == pytest.approx(r0[sid] / G) and gain == pytest.approx(pd * (1 - pd))
    con.close()


def _sec_check(con, cat_of, n_cat, decay_all):
    """Q per step by hand from the events: (1-a) Q + a mean|A| (a = 0.5), untrained arms
    moving toward 0 only when ``decay_all``."""
    ev = _events(con)
    q = np.zeros(n_cat)
    for step in sorted(ev):
        adv: dict[int, list] = {}
        for sid, r, g in ev[step]:
            p = r / g  # mean |A| of a binary group with the unbiased std
            adv.setdefault(cat_of(sid), []).append(2 * np.sqrt(p * (1 - p) * (g - 1) / g))
        for c in range(n_cat):
            if c in adv:
                q[c] = 0.5 * q[c] + 0.5 * np.mean(adv[c])
            elif decay_all:
                q[c] = 0.5 * q[c]
        logged = dict(con.execute("SELECT name, value FROM metrics WHERE step = ? AND name "
                                  "LIKE 'peer/q%'", [step]).fetchall())
        assert logged == pytest.approx({f"peer/q{c}": q[c] for c in range(n_cat)})


def test_sec_arms_are_the_data_labels_and_every_arm_decays(labelled, tmp_path):
    out = tmp_path / "toy-grpo-sec-s0"
    _run(labelled, out, "sec", steps=4, checkpoint_every=0)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    cat = _state(con, "category")
    assert [int(cat[0][i]) for i in range(N_TRAIN)] == [5 * i // N_TRAIN for i in range(N_TRAIN)]
    _sec_check(con, lambda sid: 5 * sid // N_TRAIN, 5, decay_all=True)
    con.close()


def test_sec_passrate_bins_the_initial_rollouts_and_moves_trained_arms(data, tmp_path):  # noqa: F811
    out = tmp_path / "toy-grpo-sec-passrate-s0"
    _run(data, out, "sec-passrate", steps=4, checkpoint_every=0)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    cat = _state(con, "category")
    r0 = _initial_r(data)
    by_hand = {0: {7, 8}, 1: {5, 6}, 2: {4}, 3: {2, 3}, 4: {0, 1}}  # G = 8, 5 categories
    for sid in range(N_TRAIN):
        assert r0[sid] in by_hand[int(cat[0][sid])]
    _sec_check(con, lambda sid: int(cat[0][sid]), 5, decay_all=False)
    con.close()


@pytest.mark.parametrize("method", PEERS)
def test_peer_resume_after_a_crash_equals_an_uninterrupted_run(labelled, tmp_path, method):
    data = labelled  # noqa: F811 - every peer runs on it (SEC reads its labels)
    whole = tmp_path / "a" / f"toy-grpo-{method}-s0"
    _run(data, whole, method)
    cut = tmp_path / "b" / f"toy-grpo-{method}-s0"
    with pytest.raises(RuntimeError, match="simulated crash after step 5"):
        cfg = _cfg(cut.parent, method=method)
        train_local(cfg, _paths(data, cut), progress=False, load_policy=ToyPolicy.load,
                    crash_after_step=5)
    _run(data, cut, method)
    a, b = _tables(whole / "history.duckdb"), _tables(cut / "history.duckdb")
    for table in a:
        assert a[table] == b[table], table
    q = "SELECT step, sample_id, name, value FROM peer_state ORDER BY ALL"
    pa_ = duckdb.connect(str(whole / "history.duckdb"), read_only=True).execute(q).fetchall()
    pb = duckdb.connect(str(cut / "history.duckdb"), read_only=True).execute(q).fetchall()
    assert pa_ == pb and len(pa_) > 0
    # every sample at step 0 and at the snapshot steps (snapshot_every 2), observed ones between
    steps = {s for s, *_ in pa_}
    assert steps == {0, 1, 2, 3, 4, 5, 6}
