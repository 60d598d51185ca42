"""verl 0.7.1's own ``RayPPOTrainer.fit`` with the VADE sampler plugin, on CPU (GRPO, GSPO, resume).

What is verl's code and what is a stand-in is listed in ``tests/fixtures/verl/cpu_fit.py``: the
trainer class, its ``fit`` loop, dataset, dataloader, sampler loading, reward manager (calling the
project's ``compute_score``), ``_balance_batch``, GRPO advantages, policy losses, validation,
checkpoint save/load and the metrics are verl's; only the GPU worker groups (rollout, actor,
reference, weight sync) are CPU stand-ins behind ``init_workers``, backed by a tabular policy.

The numbers: 10 training prompts (ids 0-9, answer id % 4), 4 validation prompts (ids 100-103,
3 of source ``synthetic/shape``, 1 of ``synthetic/count``), batch 4, n = 3, 2 steps an epoch,
6 steps (3 epochs), checkpoints at steps 2, 4, 6, validation at 0, 2, 4, 6.

The trainer is the project's production class (``vade.train.verl.ppo_entry``), except in the
test that shows why it exists. DAPO runs verl-recipe's own ``RayDAPOTrainer.fit`` (the pinned
commit's file, vendored unmodified in ``fixtures/verl/recipe_8f9e7ac``: verl-recipe cannot be
pip-installed) under the project's capped subclass, with the same CPU workers: 10 prompts,
batch 4, n = 3, 4 base steps (48 rollouts), cap factor 1.5 = 72 rollouts = 6
generation batches; it trains 3 steps of 2 generation batches each and stops at the cap. The
cap's edge cases (unfinished steps, old checkpoints) are in ``test_verl_dapo_cap.py``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
torch = pytest.importorskip("torch")
pytest.importorskip("verl")
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "verl"))

from cpu_fit import (
    WORDS,
    Killed,
    build_config,
    dapo_trainer_class,
    make_trainer,
    save_model_dir,
)

from vade.sampling import make_sampler
from vade.train.difficulty import initial_alpha_beta

N_TRAIN, N_VAL, G, STEPS = 10, 4, 3, 6
SOURCES = ["synthetic/shape", "synthetic/shape", "synthetic/count", "synthetic/shape"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Model dir (tokenizer), train/val parquet, initial difficulty: shared by every run."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tiny_vlm import tiny_processor, write_train_parquet

    root = tmp_path_factory.mktemp("verl_fit")
    proc = tiny_processor(extra_words=WORDS)
    save_model_dir(proc, root / "model")
    (root / "data").mkdir()
    write_train_parquet(root / "data" / "train.parquet", N_TRAIN)
    write_train_parquet(root / "data" / "val.parquet", N_VAL, first_index=100)
    val = pq.read_table(root / "data" / "val.parquet")
    val = val.set_column(val.schema.get_field_index("data_source"), "data_source",
                         pa.array(SOURCES))
    pq.write_table(val, root / "data" / "val.parquet")
    ids = np.arange(N_TRAIN, dtype=np.int64)
    pq.write_table(pa.table({"sample_id": ids, "correct": (ids * 5) % 9,
                             "rollouts": np.full(N_TRAIN, 8)}), root / "initial.parquet")
    return root, proc


def run(world, *, method="vade", algorithm="grpo", out="run", kill_at=None, attempt=0,
        plain_verl=False, kill_at_generation=None):
    """One attempt (a process): verl's config, trainer and ``fit``; a kill ends it. DAPO runs
    verl-recipe's own trainer (vendored, see ``fixtures/verl/recipe_8f9e7ac``) with the cap
    factor 1.5 (6 generation batches of 4 prompts x 3 = 72 rollouts)."""
    root, proc = world
    dapo = method == "dapo"
    spec, cfg = build_config(root, method=method, algorithm=algorithm, out=out,
                             steps=4 if dapo else 6, max_rollout_factor=1.5)
    os.environ["VERL_FILE_LOGGER_PATH"] = str(root / f"{out}-attempt{attempt}.jsonl")
    trainer = make_trainer(cfg, proc, kill_at=kill_at, plain_verl=plain_verl,
                           trainer_class=dapo_trainer_class() if dapo else None,
                           kill_at_generation=kill_at_generation)
    try:
        trainer.fit()
    except Killed:
        pass
    finally:
        if dapo:
            trainer._vade.store.close()
        else:
            trainer.train_dataloader.sampler.close()  # the process's history connection ends
        os.environ.pop("VERL_FILE_LOGGER_PATH", None)
    return spec, trainer


def history(spec):
    con = duckdb.connect(str(spec.out_dir / "history.duckdb"), read_only=True)
    try:
        events = con.execute("SELECT step, sample_id, correct, rollouts, alpha_after, beta_after "
                             "FROM events ORDER BY step, sample_id").fetchall()
        steps = con.execute("SELECT step, rollouts FROM steps ORDER BY step").fetchall()
    finally:
        con.close()
    return events, steps


def evidence_from_texts(generated):
    """step -> {id: r}, recomputed from the answers the rollout wrote (answer == id % 4)."""
    out = {}
    for g in generated:
        r = out.setdefault(g["step"], {})
        for i, a in zip(g["ids"], g["answers"]):
            r[i] = r.get(i, 0) + int(a == i % 4)
    return out


@pytest.fixture(scope="module")
def grpo(world):
    return run(world)


def test_every_update_sees_verls_rewards_and_the_history_matches(grpo):
    spec, trainer = grpo
    rollout, actor = trainer.async_rollout_manager, trainer.actor_rollout_wg
    assert trainer.global_steps == STEPS + 1 and len(actor.updates) == STEPS
    expected = evidence_from_texts(rollout.generated)
    events, steps = history(spec)
    assert [s for s, _ in steps] == list(range(1, STEPS + 1))
    assert all(r == 4 * G for _, r in steps)
    observed = {}
    for step, sid, correct, rollouts, _, _ in events:
        assert rollouts == G
        observed.setdefault(step, {})[sid] = correct
    assert observed == expected
    # what the actor trained on: verl's reward manager's acc per row, per id the same r
    for step, upd in enumerate(actor.updates, 1):
        r = {}
        for i, acc in zip(upd["ids"], upd["acc"]):
            r[i] = r.get(i, 0) + acc
        assert r == expected[step]
        assert upd["loss_mode"] == "vanilla"


def test_selections_follow_the_previous_steps_rewards(world, grpo):
    """Replaying VADE offline on the recorded evidence reproduces every batch verl's dataloader
    drew; flipping step 1's evidence changes a later batch (the choice is lazy)."""
    root, _ = world
    spec, trainer = grpo
    drawn = [sorted(set(g["ids"])) for g in trainer.async_rollout_manager.generated]
    events, _ = history(spec)

    def replay(flip_step=None):
        ids = np.arange(N_TRAIN)
        alpha, beta = initial_alpha_beta(str(root / "initial.parquet"), ids)
        inner = make_sampler("vade", N_TRAIN, 4, seed=0, lambda1=0.2, lambda2=0.999,
                             alpha=alpha, beta=beta)
        chosen = []
        for step in range(1, STEPS + 1):
            chosen.append(sorted(int(i) for i in inner.select()))
            rows = [e for e in events if e[0] == step]
            correct = np.array([G - e[2] if step == flip_step else e[2] for e in rows])
            inner.observe(np.array([e[1] for e in rows]), correct, np.full(len(rows), G))
        return chosen

    assert replay() == drawn
    assert replay(flip_step=1)[1:] != drawn[1:]


def test_pooled_validation_of_a_real_fit(world, grpo):
    from vade.report.collect import _curves
    from vade.store.query import open_catalog
    from vade.train.verl.validation import pool_run_validation, val_item_counts

    root, _ = world
    spec, trainer = grpo
    counts = val_item_counts(root / "data" / "val.parquet")
    assert counts == {"synthetic/shape": 3, "synthetic/count": 1}
    pool_run_validation([root / "run-attempt0.jsonl"], counts, store=spec.out_dir /
                        "history.duckdb", run_id=spec.run_id)
    # independently: the greedy answer of each validation prompt, right when == (id - 100) % 4
    truth = {}
    for v in trainer.async_rollout_manager.validated:
        right = {i: int(a == (i - 100) % 4) for i, a in zip(v["ids"], v["answers"])}
        truth[v["step"]] = sum(right.values()) / N_VAL
    assert sorted(truth) == [0, 2, 4, 6]
    con = open_catalog([spec.out_dir / "history.duckdb"])
    curve = _curves(con, ["val/acc"])[spec.run_id]["val/acc"]
    con.close()
    assert curve.step.tolist() == [0, 2, 4, 6]
    assert curve.value.tolist() == pytest.approx([truth[s] for s in (0, 2, 4, 6)])


@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
def test_resume_after_a_kill_replays_identically(world, request, algorithm):
    """Killed in step 5 after its actor update (weights sync), before any step-5 checkpoint or
    sampler update; resumed by verl's own ``_load_checkpoint`` (resume_mode=auto) from step 4."""
    spec_a, a = request.getfixturevalue(algorithm)
    out = f"resumed-{algorithm}"
    spec_b, first = run(world, algorithm=algorithm, out=out, kill_at=5)
    assert first.global_steps == 5 and len(first.actor_rollout_wg.updates) == 5
    assert (spec_b.out_dir / "checkpoints" / "latest_checkpointed_iteration.txt"
            ).read_text() == "4"
    _, second = run(world, algorithm=algorithm, out=out, attempt=1)
    assert [g["step"] for g in second.async_rollout_manager.generated] == [5, 6]
    drawn = {g["step"]: g["ids"] for g in first.async_rollout_manager.generated}
    drawn.update({g["step"]: g["ids"] for g in second.async_rollout_manager.generated})
    assert drawn == {g["step"]: g["ids"] for g in a.async_rollout_manager.generated}
    assert history(spec_b) == history(spec_a)
    assert torch.equal(second.policy.logits, a.policy.logits)


def test_kill_between_checkpoint_and_sampler_update_is_lossless(world, grpo):
    """Killed right after step 4's checkpoint, before verl's ``sampler.update`` of step 4: the
    project's trainer (``ppo_entry``) observed the batch before the checkpoint, so the resumed
    run equals the uninterrupted one."""
    spec_a, a = grpo
    spec_c, first = run(world, out="between", kill_at=4)
    assert len(first.actor_rollout_wg.updates) == 4
    _, second = run(world, out="between", attempt=1)
    assert [g["step"] for g in second.async_rollout_manager.generated] == [5, 6]
    assert history(spec_c) == history(spec_a)
    assert torch.equal(second.policy.logits, a.policy.logits)


def test_plain_verl_loses_the_step_killed_between_checkpoint_and_update(world, caplog):
    """The same kill with verl's trainer as it is: step 4's evidence never reaches the sampler
    (why ``ppo_entry`` exists)."""
    spec, _ = run(world, out="plain", kill_at=4, plain_verl=True)
    with caplog.at_level("WARNING", logger="vade.train.verl.sampler"):
        run(world, out="plain", attempt=1, plain_verl=True)
    assert "no sampler state after step 4's update" in caplog.text
    _, steps = history(spec)
    assert [s for s, _ in steps] == [1, 2, 3, 5, 6]


@pytest.fixture(scope="module")
def gspo(world):
    return run(world, algorithm="gspo", out="gspo")


def test_gspo_fit_uses_gspo_loss(gspo):
    spec, trainer = gspo
    updates = trainer.actor_rollout_wg.updates
    assert len(updates) == STEPS and {u["loss_mode"] for u in updates} == {"gspo"}
    events, _ = history(spec)
    observed = {}
    for step, sid, correct, *_ in events:
        observed.setdefault(step, {})[sid] = correct
    assert observed == evidence_from_texts(trainer.async_rollout_manager.generated)


def test_entry_installs_its_trainer_once(monkeypatch):
    """``ppo_entry`` swaps the class ``verl.trainer.main_ppo.TaskRunner.run`` builds, once."""
    from verl.trainer import main_ppo
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    from vade.train.verl.ppo_entry import install

    monkeypatch.setattr(main_ppo, "RayPPOTrainer", RayPPOTrainer)
    cls = install()
    assert main_ppo.RayPPOTrainer is cls and install() is cls
    assert issubclass(cls, RayPPOTrainer) and cls._update_actor is not RayPPOTrainer._update_actor
    assert cls.fit is RayPPOTrainer.fit  # verl's loop itself is untouched


def stop(spec):
    return json.loads((spec.out_dir / "stop.json").read_text())


@pytest.fixture(scope="module")
def dapo(world):
    return run(world, method="dapo", out="dapo")


def test_dapo_recipe_fit_stops_at_the_global_cap(world, dapo):
    """verl-recipe's own DAPO ``fit`` (dynamic sampling on ``acc``), the project's capped
    subclass: the budget of 72 rollouts = 6 generation batches is spent exactly, every batch
    the rollout generated is counted (the unfinished step's too), names agree."""
    root, _ = world
    spec, trainer = dapo
    generated = trainer.async_rollout_manager.generated
    info = stop(spec)
    assert info["gen_batch_limit"] == 6 and info["rollout_budget_batches"] == 72
    assert info["reason"] == "rollout_cap" and info["gen_batches_used"] == len(generated) == 6
    assert info["rollouts_generated"] == sum(len(g["ids"]) for g in generated) == 72
    events, steps = history(spec)
    assert [s for s, _ in steps] == list(range(1, info["steps_trained"] + 1))
    assert sum(r for _, r in steps) == 72          # the cost axis ends at the budget
    assert all(0 < e[2] < G and e[3] == G for e in events)  # only informative groups kept
    ckpt = spec.out_dir / "checkpoints" / "latest_checkpointed_iteration.txt"
    assert int(ckpt.read_text()) == info["steps_trained"]
    last = [json.loads(x) for x in (root / "dapo-attempt0.jsonl").read_text().splitlines()][-1]
    assert last["step"] == info["steps_trained"]
    assert any(k.startswith("val-core/") for k in last["data"])   # a final validation


def test_dapo_resume_mid_step_spends_the_same_budget(world, dapo):
    """Killed in the middle of a step (at the 5th generation batch, after step 2's checkpoint),
    resumed through the recipe's own ``_load_checkpoint``: the run ends where the uninterrupted
    one does, with the same history and policy; generation batches of both attempts after the
    checkpoint are not double-counted."""
    spec_a, a = dapo
    spec_b, first = run(world, method="dapo", out="dapo-resumed", kill_at_generation=5)
    assert len(first.async_rollout_manager.generated) == 4
    _, second = run(world, method="dapo", out="dapo-resumed", attempt=1)
    info = stop(spec_b)
    assert info == stop(spec_a)
    assert history(spec_b) == history(spec_a)
    assert torch.equal(second.policy.logits, a.policy.logits)
    used_at_ckpt = info["gen_batches_used"] - len(second.async_rollout_manager.generated)
    assert first.async_rollout_manager.generated[:used_at_ckpt] + \
        second.async_rollout_manager.generated == a.async_rollout_manager.generated
