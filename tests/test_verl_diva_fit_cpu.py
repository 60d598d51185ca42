"""verl 0.7.1's own ``RayPPOTrainer.fit`` running DIVA-GRPO (``diva``, ``vade-diva``) on CPU.

Real (see ``tests/fixtures/verl/cpu_fit.py`` for the full list): verl's trainer, ``fit`` loop,
``StatefulDataLoader``, ``create_rl_dataset`` loading ``DivaDataset`` from ``data.custom_cls``,
``create_rl_sampler`` loading ``DivaCurriculumSampler``, the reward manager calling the project's
``compute_score``, ``_balance_batch``, ``compute_advantage`` (with the project's ``diva`` wrapper
installed as ``ppo_entry`` installs it), policy loss, checkpoints; the config is verl's
``ppo_trainer`` composed with the project's own override builder for the DIVA cell; variants are
built by the project's real variant code (``vade.data.variants``) from real ``synthetic/count``
rows. Stand-ins: only the GPU worker groups (rollout, actor, reference, weight sync), backed by a
tabular policy indexed by sample id, so a variant is answered from its original's row of the
table (the stand-in cannot read images or hints: what the test checks is the plumbing, not
whether variants are harder).

The numbers: 10 originals (ids 0-9, answer id % 4), B = 4 originals a step (8 rows), G = 3,
2 steps an epoch, 3 epochs = 6 steps.
"""

from __future__ import annotations

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

from cpu_fit import WORDS, Killed, build_config, make_trainer, save_model_dir

from vade.diva import diva_advantages, initial_levels, plan_variant, update_levels
from vade.sampling import make_sampler
from vade.train.difficulty import initial_alpha_beta

N_TRAIN, B, G, STEPS = 10, 4, 3, 6


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tiny_vlm import tiny_processor, write_train_parquet

    from vade.train.verl.diva_advantage import install

    install()   # what vade.train.verl.ppo_entry.install does in the task runner's process
    root = tmp_path_factory.mktemp("diva_fit")
    proc = tiny_processor(extra_words=WORDS)
    save_model_dir(proc, root / "model")
    (root / "data").mkdir()
    count = {"task": "synthetic/count", "source": "synthetic/count"}  # the variant builder's task
    write_train_parquet(root / "data" / "train.parquet", N_TRAIN, **count)
    write_train_parquet(root / "data" / "val.parquet", 4, first_index=100, **count)
    ids = np.arange(N_TRAIN, dtype=np.int64)
    pq.write_table(pa.table({"sample_id": ids, "correct": (ids * 5) % 9,
                             "rollouts": np.full(N_TRAIN, 8)}), root / "initial.parquet")
    return root, proc


def run(world, method, out, kill_at=None, attempt=0):
    """One attempt of ``fit``; the actor stand-in's inputs are recorded as it trains."""
    root, proc = world
    spec, cfg = build_config(root, method=method, out=out)
    os.environ["VERL_FILE_LOGGER_PATH"] = str(root / f"{out}-attempt{attempt}.jsonl")
    trainer = make_trainer(cfg, proc, kill_at=kill_at)
    seen = []
    actor = trainer.actor_rollout_wg
    inner = actor.update_actor

    def recording(data):
        seen.append({
            "extra_info": [dict(e) for e in data.non_tensor_batch["extra_info"]],
            "uid": list(data.non_tensor_batch["uid"]),
            "acc": np.asarray(data.non_tensor_batch["acc"], float),
            "reward": data.batch["token_level_rewards"].sum(-1).numpy().astype(float),
            "adv": data.batch["advantages"].clone(), "mask": data.batch["response_mask"].clone()})
        return inner(data)

    actor.update_actor = recording
    try:
        trainer.fit()
    except Killed:
        pass
    finally:
        trainer.train_dataloader.sampler.close()
        os.environ.pop("VERL_FILE_LOGGER_PATH", None)
    return spec, trainer, seen


def tables(spec):
    con = duckdb.connect(str(spec.out_dir / "history.duckdb"), read_only=True)
    try:
        q = con.execute
        return {
            "events": q("SELECT step, sample_id, correct, rollouts, alpha_after, beta_after "
                        "FROM events ORDER BY step, sample_id").fetchall(),
            "steps": q("SELECT step, rollouts FROM steps ORDER BY step").fetchall(),
            "levels": q("SELECT step, sample_id, level, variant_offset, mean_accuracy "
                        "FROM levels ORDER BY step, sample_id").fetchall(),
            "method": q("SELECT method FROM runs").fetchone()[0]}
    finally:
        con.close()


@pytest.fixture(scope="module", params=["diva", "vade-diva"])
def fitted(world, request):
    return request.param, *run(world, request.param, request.param)


def _per_id(ids, values):
    out = {}
    for i, v in zip(ids, values):
        out[i] = out.get(i, 0.0) + float(v)
    return out


def test_every_step_pairs_b_originals_with_their_variants(fitted):
    method, spec, trainer, seen = fitted
    assert len(seen) == STEPS and trainer.global_steps == STEPS + 1
    for step in seen:
        info = step["extra_info"]
        orig = [e["index"] for e in info if e["diva_variant"] == 0]
        var = [e["index"] for e in info if e["diva_variant"] == 1]
        assert len(orig) == len(var) == B * G
        assert len(set(orig)) == B and set(orig) == set(var)
        assert len(set(step["uid"])) == 2 * B        # one local group per prompt
        for e in info:   # a variant keeps its original's answer
            assert e["answer"] == str(e["index"] % 4)
    t = tables(spec)
    assert t["method"] == method
    assert t["steps"] == [(s, 2 * B * G) for s in range(1, STEPS + 1)]   # variants cost rollouts


def test_levels_follow_the_interval_table_from_observed_rewards(world, fitted):
    root, _ = world
    _, spec, trainer, seen = fitted
    alpha, beta = initial_alpha_beta(str(root / "initial.parquet"), np.arange(N_TRAIN))
    levels = initial_levels(alpha, alpha + beta)
    rows = tables(spec)["levels"]
    assert [(sid, lv) for s, sid, lv, *_ in rows if s == 0] == list(enumerate(levels.tolist()))
    for k, step in enumerate(seen, 1):
        info = step["extra_info"]
        ids = np.array([e["index"] for e in info])
        is_var = np.array([e["diva_variant"] for e in info]) == 1
        # the levels the rows were scored at: the original's before this step, and the plan's
        for e in info:
            want = levels[e["index"]] if not e["diva_variant"] else plan_variant(
                int(levels[e["index"]]), e["diva_offset"]).level
            assert e["diva_level"] == want
        right = _per_id(ids, step["acc"])
        chosen = sorted(right)
        mean = np.array([right[i] / (2 * G) for i in chosen])
        levels[chosen] = update_levels(levels[chosen], mean)
        offsets = {e["index"]: e["diva_offset"] for e, v in zip(info, is_var) if v}
        logged = [r for r in rows if r[0] == k]
        assert [(sid, lv, off) for _, sid, lv, off, _ in logged] == [
            (i, int(levels[i]), offsets[i]) for i in chosen]
        assert [m for *_, m in logged] == pytest.approx(mean.tolist())
    assert np.array_equal(trainer.train_dataloader.sampler.levels, levels)


def test_the_posterior_saw_only_the_originals_groups(world, fitted):
    """Replaying the method's sampler offline on the originals' rows alone reproduces every batch
    verl drew and the logged posterior; the events hold the originals' r, G only."""
    root, _ = world
    method, spec, _, seen = fitted
    events = tables(spec)["events"]
    alpha, beta = initial_alpha_beta(str(root / "initial.parquet"), np.arange(N_TRAIN))
    vade = method == "vade-diva"
    inner = make_sampler("vade" if vade else "vanilla", N_TRAIN, B, seed=0, lambda1=0.2,
                         lambda2=0.999, alpha=alpha if vade else None,
                         beta=beta if vade else None)
    for k, step in enumerate(seen, 1):
        info = step["extra_info"]
        orig = np.array([e["diva_variant"] == 0 for e in info])
        ids = np.array([e["index"] for e in info])
        r = _per_id(ids[orig], step["acc"][orig])
        assert sorted(int(i) for i in inner.select()) == sorted(r)
        obs = inner.observe(np.array(sorted(r)), np.array([r[i] for i in sorted(r)]),
                            np.full(len(r), float(G)))
        logged = [e for e in events if e[0] == k]
        assert [(e[1], e[2], e[3]) for e in logged] == [(i, r[i], G) for i in sorted(r)]
        if vade:
            assert [e[4] for e in logged] == pytest.approx(obs.alpha_after.tolist())
            assert [e[5] for e in logged] == pytest.approx(obs.beta_after.tolist())


def test_the_actor_trained_on_divas_advantage(fitted):
    _, _, _, seen = fitted
    for step in seen:
        info = step["extra_info"]
        want = diva_advantages(step["reward"], np.array(step["uid"]),
                               np.array([e["index"] for e in info]),
                               np.array([e["diva_level"] for e in info], float),
                               k=0.1, low_reward=0.15, low_reward_scale=0.1)
        mask = step["mask"].bool()
        assert torch.allclose(step["adv"], torch.as_tensor(want, dtype=step["adv"].dtype)
                              [:, None] * mask, atol=1e-5)
        assert np.array_equal(step["reward"] > 0, step["acc"] > 0)
        assert np.abs(want).max() > 0    # the step trained on something


@pytest.mark.parametrize("kill_at", [4, 5])
def test_resume_after_a_kill_replays_identically(world, fitted, kill_at):
    """Killed right after step 4's checkpoint (4) or in step 5 after its actor update (5),
    resumed by verl's ``_load_checkpoint`` from step 4: the same batches, variants, levels,
    history and policy as the uninterrupted run (the levels travel in ``data.pt``)."""
    method, spec_a, a, seen_a = fitted
    out = f"{method}-resumed-{kill_at}"
    spec_b, _, seen_1 = run(world, method, out, kill_at=kill_at)
    assert len(seen_1) == kill_at
    _, second, seen_2 = run(world, method, out, attempt=1)
    assert len(seen_2) == 2     # steps 5 and 6
    replay = seen_1[:4] + seen_2
    for x, y in zip(replay, seen_a):
        assert x["extra_info"] == y["extra_info"] and np.array_equal(x["acc"], y["acc"])
        assert torch.equal(x["adv"], y["adv"])
    assert tables(spec_b) == tables(spec_a)
    assert torch.equal(second.policy.logits, a.policy.logits)
    assert np.array_equal(second.train_dataloader.sampler.levels,
                          a.train_dataloader.sampler.levels)
