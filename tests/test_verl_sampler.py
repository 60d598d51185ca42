"""VadeCurriculumSampler driven the way verl 0.7.1 drives it (CPU, no GPU, no vLLM).

Real ``RLHFDataset`` (multimodal parquet, a tiny offline Qwen2.5-VL processor, overlong prompts
filtered), real ``create_rl_sampler``, real ``StatefulDataLoader`` (num_workers=0, drop_last), real
``DataProto`` batches repeated n times (interleaved) and then shuffled as ``_balance_batch`` does,
and verl's checkpoint order: ``dataloader.state_dict()`` is taken BEFORE ``update`` of that step.
"""

from __future__ import annotations

import copy
import os
import pickle
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
torch = pytest.importorskip("torch")
pytest.importorskip("verl")
torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "verl"))

from omegaconf import OmegaConf
from torchdata.stateful_dataloader import StatefulDataLoader
from verl import DataProto
from verl.trainer.main_ppo import create_rl_sampler
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

from vade.sampling import make_sampler
from vade.train.verl.sampler import VadeCurriculumSampler

N_ROWS, LONG, FIRST_ID, B, G = 14, (3, 8), 100, 4, 3
KEPT_IDS = [FIRST_ID + i for i in range(N_ROWS) if i not in LONG]  # 12 rows survive filtering


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from tiny_vlm import tiny_processor, write_train_parquet

    root = tmp_path_factory.mktemp("verl_data")
    write_train_parquet(root / "train.parquet", N_ROWS, long_rows=LONG, first_index=FIRST_ID)
    proc = tiny_processor()
    cfg = OmegaConf.create({"max_prompt_length": 64, "filter_overlong_prompts": True,
                            "filter_overlong_prompts_workers": 1, "return_raw_chat": True,
                            "cache_dir": str(root / "cache")})
    return RLHFDataset(str(root / "train.parquet"), proc.tokenizer, cfg, processor=proc)


@pytest.fixture
def initial(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = np.arange(FIRST_ID, FIRST_ID + N_ROWS)  # includes the filtered ids: ignored
    correct = (ids * 7) % 9
    path = tmp_path / "initial.parquet"
    pq.write_table(pa.table({"sample_id": ids.astype(np.int64), "correct": correct,
                             "rollouts": np.full(ids.size, 8)}), path)
    return path, dict(zip(ids.tolist(), correct.tolist()))


def data_config(tmp_path, method="vade", initial=None, seed=3):
    return OmegaConf.create({
        "train_batch_size": B, "dataloader_num_workers": 0, "shuffle": True,
        "sampler": {"class_path": "pkg://vade.train.verl.sampler",
                    "class_name": "VadeCurriculumSampler",
                    "vade": {"method": method, "run_id": f"t-{method}", "seed": seed,
                             "store": str(tmp_path / "run" / "history.duckdb"),
                             "state_dir": str(tmp_path / "run" / "sampler_state"),
                             "snapshot_every": 2,
                             "initial_difficulty": None if initial is None else str(initial)}},
    })


def make(dataset, cfg):
    sampler = create_rl_sampler(cfg, dataset)  # verl's own loader of the plugin
    loader = StatefulDataLoader(dataset=dataset, batch_size=B, num_workers=0, drop_last=True,
                                collate_fn=collate_fn, sampler=sampler)
    return sampler, loader


def pass_prob(sid):
    return ((sid * 37) % 10) / 10.0


def rollout_batch(batch_dict, step):
    """What verl's fit does to a dataloader batch before ``update``: uid, repeat n (interleaved),
    rewards with ``acc``, then a reordering like ``_balance_batch``. Returns (batch, acc by id)."""
    batch = DataProto.from_single_dict(batch_dict)
    batch.non_tensor_batch["uid"] = np.array([f"u{i}" for i in range(len(batch))], dtype=object)
    batch = batch.repeat(repeat_times=G, interleave=True)
    ids = np.array([e["index"] for e in batch.non_tensor_batch["extra_info"]])
    rng = np.random.default_rng(1000 + step)
    acc = (rng.random(ids.size) < np.array([pass_prob(i) for i in ids])).astype(np.float64)
    batch.non_tensor_batch["acc"] = acc
    batch.batch["token_level_scores"] = torch.zeros(len(batch), 5)
    perm = torch.from_numpy(rng.permutation(len(batch)))
    batch.reorder(perm)
    r = {int(i): float(acc[ids == i].sum()) for i in np.unique(ids)}
    return batch, r


def train(loader, sampler, steps, *, save_at=None):
    """verl's loop shape; returns per-step selected ids, r, and the checkpoint taken at save_at."""
    chosen, evidence, saved, step = [], [], None, 0
    while step < steps:
        for batch_dict in loader:
            step += 1
            chosen.append(sorted(int(e["index"]) for e in batch_dict["extra_info"]))
            batch, r = rollout_batch(batch_dict, step)
            evidence.append(r)
            if step == save_at:  # verl: checkpoint (data.pt) BEFORE update
                saved = pickle.loads(pickle.dumps(loader.state_dict()))
            sampler.update(batch)
            if step == steps:
                break
    return chosen, evidence, saved


def test_lengths_and_id_mapping(dataset, tmp_path):
    sampler, loader = make(dataset, data_config(tmp_path))
    assert isinstance(sampler, VadeCurriculumSampler)
    assert len(dataset) == 12 and sampler.sample_ids.tolist() == KEPT_IDS
    assert len(sampler) == 12 and len(loader) == 3
    chosen, _, _ = train(loader, sampler, 4)
    seen = {i for batch in chosen for i in batch}
    assert seen <= set(KEPT_IDS) and all(len(set(b)) == B for b in chosen)
    sampler.close()


def test_selection_is_lazy_and_follows_updates(dataset, tmp_path):
    """Same seed, different rewards for batch 1 -> different batch 2: the selection of a batch is
    made after the previous update (a precomputed epoch would give equal batches)."""
    batches = []
    for value in (0.0, 1.0):
        sampler, loader = make(dataset, data_config(tmp_path / str(value)))
        it = iter(loader)
        first = next(it)
        batch, _ = rollout_batch(first, 1)
        batch.non_tensor_batch["acc"] = np.full(len(batch), value)
        sampler.update(batch)
        batches.append((sorted(e["index"] for e in first["extra_info"]),
                        sorted(e["index"] for e in next(it)["extra_info"])))
        sampler.close()
    assert batches[0][0] == batches[1][0]
    assert batches[0][1] != batches[1][1]


def test_posterior_matches_vade_sampling_and_store(dataset, tmp_path, initial):
    path, init = initial
    sampler, loader = make(dataset, data_config(tmp_path, initial=path))
    chosen, evidence, _ = train(loader, sampler, 5)
    sampler.close()

    # the numpy sampler run directly on the same observations (positions = order of KEPT_IDS)
    pos = {sid: k for k, sid in enumerate(KEPT_IDS)}
    alpha = np.array([init[s] for s in KEPT_IDS], float)
    direct = make_sampler("vade", 12, B, seed=3, alpha=alpha, beta=8.0 - alpha)
    for step, (ids, r) in enumerate(zip(chosen, evidence), 1):
        assert sorted(KEPT_IDS[p] for p in direct.select()) == ids, f"step {step}"
        idx = np.array([pos[i] for i in ids])
        direct.observe(idx, np.array([r[i] for i in ids]), G)
    np.testing.assert_array_equal(sampler.inner.alpha, direct.alpha)
    np.testing.assert_array_equal(sampler.inner.beta, direct.beta)

    con = duckdb.connect(str(tmp_path / "run" / "history.duckdb"), read_only=True)
    steps = con.execute("SELECT step, effective_ratio, rollouts FROM steps "
                        "ORDER BY step").fetchall()
    assert [s[0] for s in steps] == [1, 2, 3, 4, 5]
    for (step, ratio, rollouts), r in zip(steps, evidence):
        informative = sum(1 for v in r.values() if 0 < v < G)
        assert ratio == pytest.approx(informative / B) and rollouts == B * G
    ev = con.execute("SELECT sample_id, correct, rollouts FROM events WHERE step = 3 "
                     "ORDER BY sample_id").fetchall()
    assert [e[0] for e in ev] == chosen[2]
    assert [e[1] for e in ev] == [evidence[2][i] for i in chosen[2]] and ev[0][2] == G
    snap = con.execute("SELECT count(*), count(alpha) FILTER (WHERE NOT isnan(alpha)) "
                       "FROM snapshots WHERE step = 0").fetchone()
    assert snap == (FIRST_ID + N_ROWS, 12)  # sample-id space; filtered and absent ids are NaN
    con.close()


def test_resume_mid_epoch_restores_the_post_update_posterior(dataset, tmp_path):
    """Checkpoint at step 2 (of 3 per epoch) taken before update 2, crash after step 5, resume:
    the resumed run selects the same batches 3-5 and ends with the same posterior."""
    sampler, loader = make(dataset, data_config(tmp_path))
    chosen, evidence, saved = train(loader, sampler, 5, save_at=2)
    final_alpha, final_beta = sampler.inner.alpha.copy(), sampler.inner.beta.copy()
    sampler.close()

    sampler2, loader2 = make(dataset, data_config(tmp_path))
    loader2.load_state_dict(copy.deepcopy(saved))
    resumed, step = [], 2
    while step < 5:
        for batch_dict in loader2:
            step += 1
            resumed.append(sorted(int(e["index"]) for e in batch_dict["extra_info"]))
            batch, r = rollout_batch(batch_dict, step)
            assert r == evidence[step - 1]
            sampler2.update(batch)
            if step == 5:
                break
    assert resumed == chosen[2:]
    np.testing.assert_array_equal(sampler2.inner.alpha, final_alpha)
    np.testing.assert_array_equal(sampler2.inner.beta, final_beta)
    assert sampler2.updates == 5
    sampler2.close()
    con = duckdb.connect(str(tmp_path / "run" / "history.duckdb"), read_only=True)
    assert con.execute("SELECT count(*), max(step) FROM steps").fetchone() == (5, 5)
    con.close()


def test_resume_without_state_file_loses_only_that_update(dataset, tmp_path, caplog):
    sampler, loader = make(dataset, data_config(tmp_path))
    _, _, saved = train(loader, sampler, 2, save_at=2)
    sampler.close()
    (tmp_path / "run" / "sampler_state" / "step_00000002.pkl").unlink()
    sampler2, loader2 = make(dataset, data_config(tmp_path))
    loader2.load_state_dict(copy.deepcopy(saved))
    next(iter(loader2))
    assert sampler2.updates == 2 and "observations are lost" in caplog.text
    sampler2.close()


def test_vanilla_is_uniform_epochs(dataset, tmp_path):
    sampler, loader = make(dataset, data_config(tmp_path, method="vanilla"))
    chosen, _, _ = train(loader, sampler, 3)
    assert sorted(i for b in chosen for i in b) == KEPT_IDS  # one epoch = each row once
    sampler.close()


def test_bad_batches_name_the_row(dataset, tmp_path):
    sampler, loader = make(dataset, data_config(tmp_path))
    batch, _ = rollout_batch(next(iter(loader)), 1)
    bad = copy.deepcopy(batch)
    bad.non_tensor_batch["acc"] = np.where(np.arange(len(bad)) == 4, 0.5, 0.0)
    with pytest.raises(ValueError, match="batch row 4"):
        sampler.update(bad)
    foreign = copy.deepcopy(batch)
    foreign.non_tensor_batch["extra_info"][0] = {"index": FIRST_ID + LONG[0]}  # a filtered row
    with pytest.raises(ValueError, match=f"sample id {FIRST_ID + LONG[0]}"):
        sampler.update(foreign)
    # fallback without acc: score on the last token > 0
    del batch.non_tensor_batch["acc"]
    scores = torch.zeros(len(batch), 5)
    scores[::2, -1] = 1.0
    batch.batch["token_level_scores"] = scores
    sampler.update(batch)
    assert sampler.updates == 1
    sampler.close()
