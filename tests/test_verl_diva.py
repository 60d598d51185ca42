"""DIVA-GRPO's verl pieces, one at a time (CPU, ~15 s): advantage seam, dataset, sampler, overrides.

Real: verl 0.7.1's ``DataProto``, its ``compute_advantage`` (wrapped by
``vade.train.verl.diva_advantage.install``) and advantage registry, its ``RLHFDataset`` (the
parent of ``DivaDataset``) reading a parquet of real synthetic rows (``vade.data.synthetic``),
its Hydra ``ppo_trainer`` config, its ``load_extern_object`` loader; the project's variant
builder, DIVA numpy core and ``RunStore``. Stand-ins: the tiny offline processor of
``tests/fixtures/verl/tiny_vlm.py`` (tokenizer and image processor built locally) and, in the
sampler test, a hand-built batch in place of verl's rollout (rows with ``extra_info`` and
``acc``, as the reward manager leaves them). The whole ``fit`` loop is in
``tests/test_verl_diva_fit_cpu.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("verl")
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "verl"))

from omegaconf import OmegaConf

from vade.diva import diva_advantages
from vade.train.verl.diva_dataset import DivaDataset, DivaKey, decode_index, encode_index

TEMPLATE = "{question}\nPut the final answer in \\boxed{{}}."


# --------------------------------------------------------------------------- the advantage seam
def _proto(order):
    """16 responses: originals 10 and 11, each with one variant, G = 4, in ``order`` (verl's
    ``_balance_batch`` reorders rows; the result must not depend on it)."""
    from verl import DataProto

    rows = []  # (uid, sample id, level, reward)
    for uid, sid, level, rewards in (("o10", 10, 3, [1, 1, 0, 0]), ("v10", 10, 5, [1, 0, 0, 0]),
                                     ("o11", 11, 7, [0, 0, 0, 0]), ("v11", 11, 4, [1, 1, 1, 1])):
        rows += [(uid, sid, level, r) for r in rewards]
    rows = [rows[i] for i in order]
    n, length = len(rows), 5
    lengths = torch.tensor([2 + (i % 4) for i in range(n)])          # ragged responses
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    rewards = torch.zeros(n, length)
    rewards[torch.arange(n), lengths - 1] = torch.tensor([float(r[3]) for r in rows])
    return DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array([r[0] for r in rows], dtype=object),
                     "extra_info": np.array([{"index": r[1], "diva_level": r[2],
                                              "diva_variant": int(r[0][0] == "v")}
                                             for r in rows], dtype=object)}), rows


# Hand-computed (k = 0.1; binary rewards, so low-reward rescaling touches only tied groups):
#   local GRPO: o10 +-0.5/sqrt(1/3) = +-0.866025; v10 (1, 0, 0, 0) -> 1.5, -0.5; o11, v11 tied -> 0.
#   batch z-score of the local term: mean 0, unbiased var (4 * 0.75 + 2.25 + 3 * 0.25) / 15 = 0.4,
#   so 0.866025 -> 1.369306, 1.5 -> 2.371708, -0.5 -> -0.790569.
#   global GRPO: group 10 (3 of 8 right): mean 0.375, var 1.875 / 7 -> +1.207615 / -0.724569;
#   group 11 (4 of 8): +-0.935414. Batch z: mean 0, var 14 / 15, so 1.25 / -0.75 / +-0.968246.
#   levels: group 10 mean 4 (dd o10 = -1, v10 = +1); group 11 mean 5.5 (dd o11 = +1.5, v11 = -1.5).
#   weight exp(0.1 dd sign(A)): o10 right 1.25 e^-0.1 = 1.131047, o10 wrong -0.75 e^0.1 =
#   -0.828878, v10 right 1.25 e^0.1 = 1.381464, v10 wrong -0.75 e^-0.1 = -0.678628,
#   o11 -0.968246 e^-0.15 = -0.833378, v11 +0.968246 e^-0.15 = +0.833378.
EXPECTED = {("o10", 1): 1.369306 + 1.131047, ("o10", 0): -1.369306 - 0.828878,
            ("v10", 1): 2.371708 + 1.381464, ("v10", 0): -0.790569 - 0.678628,
            ("o11", 0): -0.833378, ("v11", 1): 0.833378}


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_diva_advantage_through_verls_compute_advantage_matches_hand_numbers(seed):
    from verl.trainer.ppo import ray_trainer

    from vade.train.verl.diva_advantage import install

    install()
    order = np.arange(16) if seed is None else np.random.default_rng(seed).permutation(16)
    data, rows = _proto(order)
    config = OmegaConf.create({"adv_estimator": "diva", "diva": {"k": 0.1, "low_reward": 0.15,
                                                                 "low_reward_scale": 0.1}})
    out = ray_trainer.compute_advantage(data, adv_estimator="diva", gamma=1.0, lam=1.0,
                                        num_repeat=4, norm_adv_by_std_in_grpo=True,
                                        config=config)
    adv, mask = out.batch["advantages"], out.batch["response_mask"]
    assert torch.equal(adv * (1 - mask), torch.zeros_like(adv))   # nothing on padding
    for i, (uid, _, _, r) in enumerate(rows):
        on = adv[i][mask[i].bool()]
        assert on.numel() == int(mask[i].sum())
        assert torch.allclose(on, torch.full_like(on, EXPECTED[(uid, r)]), atol=2e-5), (uid, r)
    assert torch.equal(out.batch["returns"], adv)


def test_the_seam_is_the_numpy_core_and_other_estimators_are_verls():
    from verl.trainer.ppo import core_algos, ray_trainer

    from vade.train.verl.diva_advantage import diva_batch_advantages, install, installed

    install()
    assert installed()
    data, rows = _proto(np.arange(16))
    cfg = OmegaConf.create({"diva": {"k": 0.3, "low_reward": 0.5, "low_reward_scale": 0.2}})
    adv, _ = diva_batch_advantages(data, cfg)
    core = diva_advantages(np.array([r[3] for r in rows], float), np.array([r[0] for r in rows]),
                           np.array([r[1] for r in rows]), np.array([r[2] for r in rows], float),
                           k=0.3, low_reward=0.5, low_reward_scale=0.2)
    assert np.allclose(adv[:, 0].numpy(), core, atol=1e-6) and not np.allclose(
        core, [EXPECTED[(r[0], r[3])] for r in rows], atol=1e-3)
    # GRPO through the wrapper is verl's own function, untouched
    original = ray_trainer.compute_advantage._vade_diva_wrapper
    a, _ = _proto(np.arange(16))
    b, _ = _proto(np.arange(16))
    kw = {"adv_estimator": "grpo", "num_repeat": 4, "norm_adv_by_std_in_grpo": True}
    assert torch.equal(ray_trainer.compute_advantage(a, **kw).batch["advantages"],
                       original(b, **kw).batch["advantages"])
    # the registry knows the name, and refuses to run without the batch
    fn = core_algos.get_adv_estimator_fn("diva")
    with pytest.raises(RuntimeError, match="non-tensor"):
        fn(token_level_rewards=data.batch["token_level_rewards"],
           response_mask=data.batch["response_mask"], index=data.non_tensor_batch["uid"])


def test_ppo_entry_installs_the_diva_advantage(monkeypatch):
    from verl.trainer import main_ppo
    from verl.trainer.ppo import ray_trainer
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    from vade.train.verl.ppo_entry import install

    original = getattr(ray_trainer.compute_advantage, "_vade_diva_wrapper",
                       ray_trainer.compute_advantage)
    monkeypatch.setattr(ray_trainer, "compute_advantage", original)
    monkeypatch.setattr(main_ppo, "RayPPOTrainer", RayPPOTrainer)
    install()
    assert ray_trainer.compute_advantage._vade_diva_wrapper is original
    install()   # once per process: not wrapped twice
    assert ray_trainer.compute_advantage._vade_diva_wrapper is original


def test_missing_diva_columns_are_a_clear_error():
    from vade.train.verl.diva_advantage import diva_batch_advantages

    data, _ = _proto(np.arange(16))
    data.non_tensor_batch["extra_info"] = np.array([{"index": 1}] * 16, dtype=object)
    with pytest.raises(ValueError, match="diva_level"):
        diva_batch_advantages(data)


# --------------------------------------------------------------------------- dataset
def test_index_codec_round_trips_and_keeps_plain_rows_plain():
    n = 37
    assert decode_index(n, 0) is None and decode_index(n, n - 1) is None
    seen = set()
    for pos in (0, 5, n - 1):
        for variant in (False, True):
            for d in (-8, -1, 0, 3, 8):
                for level in (1, 4, 9):
                    for step in (0, 1, 250):
                        key = DivaKey(pos, variant, d, level, step)
                        i = encode_index(n, key)
                        assert i >= n and decode_index(n, i) == key
                        seen.add(i)
    assert len(seen) == 3 * 2 * 5 * 3 * 3
    with pytest.raises(ValueError):
        encode_index(n, DivaKey(n, False, 0, 1, 1))
    with pytest.raises(ValueError):
        encode_index(n, DivaKey(0, True, 9, 1, 1))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A parquet of 9 real synthetic rows (3 per task), the tiny processor, a data config."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tiny_vlm import tiny_processor

    from vade.data.config import SyntheticConfig
    from vade.data.synthetic.generate import make_items
    from vade.data.writer import verl_row, verl_schema

    root = tmp_path_factory.mktemp("diva_ds")
    items = make_items(SyntheticConfig(), 7, "train", {"math": 3, "chart": 3, "science": 3}, set())
    rows = [verl_row(it, 100 + i, "train", TEMPLATE, with_difficulty=False)
            for i, it in enumerate(items)]
    pq.write_table(pa.Table.from_pylist(rows, schema=verl_schema(False)), root / "train.parquet")
    cfg = OmegaConf.create({"prompt_key": "prompt", "image_key": "images",
                            "max_prompt_length": 4096, "filter_overlong_prompts": False,
                            "cache_dir": str(root / "cache"), "sampler": {"vade": {"seed": 3}}})
    return root / "train.parquet", tiny_processor(), cfg


def _draw(seed, step, sid, level):
    from vade.data.splits import rng_for
    from vade.diva import draw_offsets

    rng = rng_for(seed, "diva", str(step), str(sid))
    return int(draw_offsets(np.array([level]), rng)[0]), rng


def test_variant_rows_keep_the_original_and_equal_the_local_trainers(synthetic):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from vade.data.records import example_from_row
    from vade.data.variants import variant_example
    from vade.diva import plan_variant

    path, proc, cfg = synthetic
    ds = DivaDataset(str(path), proc.tokenizer, cfg, proc)
    plain = RLHFDataset(str(path), proc.tokenizer, cfg, proc)
    n = len(ds)
    assert n == 9 and ds.diva_seed == 3
    kinds = set()
    for pos in range(n):
        # plain indices: verl's own row, as RLHFDataset gives it
        mine, theirs = ds[pos], plain[pos]
        assert mine.keys() == theirs.keys() and mine["extra_info"] == theirs["extra_info"]
        assert mine["raw_prompt"][0]["content"][1] == theirs["raw_prompt"][0]["content"][1]
        original = example_from_row(plain.dataframe[pos])
        for level, step in ((2, 1), (8, 4), (5, 7)):
            d, rng = _draw(3, step, original.index, level)
            orow = ds[encode_index(n, DivaKey(pos, False, d, level, step))]
            vrow = ds[encode_index(n, DivaKey(pos, True, d, level, step))]
            assert orow["extra_info"] == {**theirs["extra_info"], "diva_variant": 0,
                                          "diva_offset": 0, "diva_level": level}
            vx = vrow["extra_info"]
            assert (vx["index"], vx["diva_variant"], vx["diva_offset"], vx["diva_level"]) == (
                original.index, 1, d, plan_variant(level, d).level)
            assert vrow["index"] == original.index
            assert vrow["reward_model"]["ground_truth"] == original.ground_truth
            assert vx["answer"] == original.ground_truth
            assert vrow["data_source"] == original.data_source
            # the very variant the local trainer builds from the same stream
            local = variant_example(original, d, level, rng)
            text = "".join(p.get("text", "") for p in vrow["raw_prompt"][0]["content"]
                           if p["type"] == "text")
            assert text == local.messages[0]["content"].replace("<image>", "")
            img = [p for p in vrow["raw_prompt"][0]["content"] if p["type"] == "image"]
            assert len(img) == 1 and img[0]["bytes"] == local.images[0]
            kinds.add(plan_variant(level, d).kind)
    assert {"hint", "perturb"} <= kinds


def test_a_foreign_offset_is_refused(synthetic):
    path, proc, cfg = synthetic
    ds = DivaDataset(str(path), proc.tokenizer, cfg, proc)
    sid = int(ds.dataframe[0]["extra_info"]["index"])
    d, _ = _draw(3, 1, sid, 5)
    wrong = d + 1 if d < 8 else d - 1
    with pytest.raises(ValueError, match="sampler and dataset disagree"):
        ds[encode_index(len(ds), DivaKey(0, True, wrong, 5, 1))]


# --------------------------------------------------------------------------- sampler (no fit)
def test_sampler_yields_pairs_and_updates_levels_from_both(synthetic, tmp_path):
    """The sampler built as verl's ``create_rl_sampler`` builds it, one hand-made step."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq
    from verl.trainer.main_ppo import create_rl_sampler

    from vade.diva import initial_levels, update_levels

    path, proc, cfg = synthetic
    ds = DivaDataset(str(path), proc.tokenizer, cfg, proc)
    ids = np.array([int(ds.dataframe[i]["extra_info"]["index"]) for i in range(len(ds))])
    correct = np.arange(9) % 9
    pq.write_table(pa.table({"sample_id": ids, "correct": correct, "rollouts": np.full(9, 8)}),
                   tmp_path / "initial.parquet")
    data_cfg = OmegaConf.merge(cfg, {
        "train_batch_size": 6, "shuffle": False, "seed": 0, "dataloader_num_workers": 0,
        "sampler": {"class_path": "pkg://vade.train.verl.diva_sampler",
                    "class_name": "DivaCurriculumSampler",
                    "vade": {"method": "vade", "run_id": "r", "seed": 3,
                             "store": str(tmp_path / "h.duckdb"),
                             "state_dir": str(tmp_path / "state"),
                             "initial_difficulty": str(tmp_path / "initial.parquet")},
                    "diva": {"method": "vade-diva"}}})
    sampler = create_rl_sampler(data_cfg, ds)
    assert type(sampler).__name__ == "DivaCurriculumSampler"
    assert sampler.batch_size == 3 and len(sampler) == 3 * 6
    levels0 = initial_levels(correct, 8)
    assert np.array_equal(sampler.levels, levels0)
    it = iter(sampler)
    idx = [next(it) for _ in range(6)]
    keys = [decode_index(9, i) for i in idx]
    assert [k.variant for k in keys] == [False] * 3 + [True] * 3
    assert [k.position for k in keys[:3]] == [k.position for k in keys[3:]]
    assert len({k.position for k in keys[:3]}) == 3
    for k in keys:
        assert k.level == levels0[k.position] and k.step == 1
        assert k.offset == _draw(3, 1, ids[k.position], k.level)[0]
    rows = [ds[i] for i in idx]
    assert [r["extra_info"]["index"] for r in rows[:3]] == [r["extra_info"]["index"]
                                                           for r in rows[3:]]
    # a batch as verl's update sees it: G = 4 per prompt, rows shuffled, acc per row
    rng = np.random.default_rng(0)
    infos, acc = [], []
    o_right = {0: 4, 1: 0, 2: 1}
    v_right = {0: 4, 1: 1, 2: 3}
    for j, r in enumerate(rows):
        right = (v_right if j >= 3 else o_right)[j % 3]
        for g in range(4):
            infos.append(r["extra_info"])
            acc.append(float(g < right))
    order = rng.permutation(len(acc))

    batch = SimpleNamespace(non_tensor_batch={"extra_info": np.array(infos, dtype=object)[order],
                                              "acc": np.array(acc)[order]}, batch=None)
    from vade.sampling import make_sampler
    from vade.train.difficulty import initial_alpha_beta

    twin = make_sampler("vade", 9, 3, seed=3, lambda1=0.2, lambda2=0.999,
                        alpha=initial_alpha_beta(tmp_path / "initial.parquet", ids)[0],
                        beta=initial_alpha_beta(tmp_path / "initial.parquet", ids)[1])
    sampler.update(batch)
    pos = np.array([k.position for k in keys[:3]])
    mean = np.array([(o_right[j] + v_right[j]) / 8 for j in range(3)])
    assert np.array_equal(sampler.levels[pos], update_levels(levels0[pos], mean))
    # the posterior saw the originals' groups only: a twin observing them alone agrees
    twin.observe(pos, np.array([o_right[j] for j in range(3)], float), np.full(3, 4.0))
    assert np.array_equal(sampler.inner.alpha, twin.alpha)
    assert np.array_equal(sampler.inner.beta, twin.beta)
    sampler.close()
    con = duckdb.connect(str(tmp_path / "h.duckdb"), read_only=True)
    events = con.execute("SELECT sample_id, correct, rollouts FROM events ORDER BY sample_id"
                         ).fetchall()
    step = con.execute("SELECT rollouts FROM steps WHERE step = 1").fetchone()[0]
    lv = con.execute("SELECT sample_id, level, variant_offset, mean_accuracy FROM levels "
                     "WHERE step = 1 ORDER BY sample_id").fetchall()
    n0 = con.execute("SELECT count(*) FROM levels WHERE step = 0").fetchone()[0]
    method = con.execute("SELECT method FROM runs").fetchone()[0]
    con.close()
    by_pos = {int(ids[p]): j for j, p in enumerate(pos)}
    assert sorted(events) == sorted((int(ids[p]), float(o_right[j]), 4.0)
                                    for j, p in enumerate(pos))
    assert step == 2 * 3 * 4 and n0 == 9 and method == "vade-diva"
    assert [(s, lvl, off) for s, lvl, off, _ in lv] == sorted(
        (int(ids[p]), int(sampler.levels[p]), int(keys[j].offset)) for j, p in enumerate(pos))
    assert all(m == pytest.approx(mean[by_pos[s]]) for s, _, _, m in lv)


# --------------------------------------------------------------------------- overrides
@pytest.mark.parametrize("method", ["diva", "vade-diva"])
@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
def test_diva_overrides_compose_against_verls_ppo_trainer(method, algorithm, tmp_path):
    """The set ``vade.train.verl.launch.plan`` emits for a DIVA cell composes with verl's real
    ``ppo_trainer``; the dataset and sampler classes load through verl's own loaders."""
    import verl
    from hydra import compose, initialize_config_dir
    from verl.utils.dataset.rl_dataset import get_dataset_class
    from verl.utils.import_utils import load_extern_object

    from vade.train.config import TrainConfig
    from vade.train.verl.diva_sampler import DivaCurriculumSampler
    from vade.train.verl.launch import plan
    from vade.train.verl.settings import PluginSettings

    config = {"name": "paper",
              "models": {"m": {"name_or_path": "Qwen/Qwen2.5-VL-3B-Instruct"}},
              "train": {"backend": "verl", "batch_size": 64, "ppo_mini_batch_size": 16},
              "diva": {"k": 0.2, "low_reward": 0.1}, "tracking": {"mlflow_uri": None}}
    run = TrainConfig.from_config(config, algorithm=algorithm, method=method, seed=2)
    spec, cmd, _ = plan(run, model="m", model_path="Qwen/Qwen2.5-VL-3B-Instruct",
                        data_dir=tmp_path / "data", difficulty=tmp_path / "initial.parquet",
                        out_dir=tmp_path / "run")
    assert cmd[1:3] == ["-m", "vade.train.verl.ppo_entry"]
    assert spec.run_id == f"m-{algorithm}-{method}-s2"
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose("ppo_trainer", overrides=cmd[3:])
    c = OmegaConf.to_container(cfg, resolve=True)
    assert c["data"]["train_batch_size"] == 128                       # B = 64 originals, 2B rows
    assert c["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] == 32
    assert c["algorithm"]["adv_estimator"] == "diva"
    assert c["algorithm"]["diva"] == {"k": 0.2, "low_reward": 0.1, "low_reward_scale": 0.1}
    assert c["data"]["sampler"]["diva"] == {"method": method}
    vade = PluginSettings.from_dict(c["data"]["sampler"]["vade"])
    assert vade.method == {"diva": "vanilla", "vade-diva": "vade"}[method]
    assert vade.initial_difficulty == str((tmp_path / "initial.parquet").resolve())
    assert vade.run_id == spec.run_id and vade.seed == 2
    assert get_dataset_class(cfg.data) is DivaDataset
    assert load_extern_object(cfg.data.sampler.class_path,
                              cfg.data.sampler.class_name) is DivaCurriculumSampler
    loss = c["actor_rollout_ref"]["actor"]["policy_loss"]["loss_mode"]
    assert loss == ("gspo" if algorithm == "gspo" else "vanilla")


def test_non_diva_cells_are_unchanged_and_bad_diva_settings_fail():
    from vade.train.config import TrainConfig
    from vade.train.verl.diva_overrides import apply_diva
    from vade.train.verl.overrides import RunSpec, build_overrides

    config = {"name": "p", "train": {"backend": "verl", "batch_size": 512,
                                     "ppo_mini_batch_size": 128}}
    cfg = TrainConfig.from_config(config, algorithm="grpo", method="vade")
    s = RunSpec(cfg=cfg, model="m", model_path="x", data_dir=Path("d"), out_dir=Path("o"),
                difficulty=Path("i.parquet"))
    ov = build_overrides(s)
    keys = [o.split("=", 1)[0] for o in ov]
    assert not [k for k in keys if "diva" in k or "custom_cls" in k]
    assert "algorithm.adv_estimator=grpo" in ov and "data.train_batch_size=512" in ov
    with pytest.raises(ValueError, match="config key 'diva.kk' is unknown"):
        TrainConfig.from_config({**config, "diva": {"kk": 1}}, method="diva")
    with pytest.raises(ValueError, match=r"'diva.low_reward_scale' must be a number in \[0, 1\], got 2.0"):
        TrainConfig.from_config({**config, "diva": {"low_reward_scale": 2.0}}, method="diva")
    with pytest.raises(ValueError, match="'vade' is not a DIVA method"):
        apply_diva(cfg, {}, {})


def test_paper_rows_take_their_texts_from_build_variants(tmp_path):
    """A non-synthetic row (geo3k-like, one image): hints and the rephrasing come from the
    ``variants.parquet`` ``vade build-variants`` writes (here hand-written), perturbations and
    the question-in-image from the row's own image; a row without texts is a clear error."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tiny_vlm import _png, tiny_processor

    from vade.diva import plan_variant

    q = "Find x in the triangle.\nA. 3\nB. 4\nC. 5\nD. 6"
    rows = [{"data_source": "geo3k", "prompt": [{"role": "user", "content": "<image>" + q}],
             "images": [{"bytes": _png(i), "path": None}], "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": "B"},
             "extra_info": {"split": "train", "index": 40 + i, "uid": f"geo3k:{i}",
                            "task": "geo3k", "domain": "math", "answer_type": "choice",
                            "question": q, "answer": "B"}} for i in range(2)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train.parquet")
    steps = ["The angles sum to 180.", "So x + 2x = 12.", "So x = 4, option B."]
    pq.write_table(pa.Table.from_pylist([{"index": 40, "uid": "geo3k:0", "steps": steps,
                                          "rephrasing": "What is x?\nA. 3\nB. 4\nC. 5\nD. 6",
                                          "model": "m", "prompt_version": "v1"}]),
                   tmp_path / "variants.parquet")
    proc = tiny_processor()
    cfg = OmegaConf.create({"prompt_key": "prompt", "image_key": "images",
                            "max_prompt_length": 4096, "filter_overlong_prompts": False,
                            "cache_dir": str(tmp_path / "cache"), "sampler": {"vade": {"seed": 5}}})
    ds = DivaDataset(str(tmp_path / "train.parquet"), proc.tokenizer, cfg, proc)
    assert ds.variant_texts_path() == tmp_path / "variants.parquet"

    def text(row):
        return "".join(p.get("text", "") for p in row["raw_prompt"][0]["content"]
                       if p["type"] == "text")

    def image(row):
        return next(p for p in row["raw_prompt"][0]["content"] if p["type"] == "image")["bytes"]

    found = {}
    for step in range(1, 200):
        for level in (1, 5, 9):
            d, _ = _draw(5, step, 40, level)
            kind = plan_variant(level, d).kind
            if kind in found:
                continue
            found[kind] = ds[encode_index(2, DivaKey(0, True, d, level, step))], level, d
        if len(found) == 4:
            break
    assert set(found) == {"hint", "rephrase", "perturb", "text_in_image"}
    row, level, d = found["hint"]
    shown = steps if d <= -7 else steps[:(-d + 1) // 2]
    assert text(row) == q + "\nHint: " + " ".join(shown) and image(row) == _png(0)
    row, _, _ = found["rephrase"]
    assert text(row) == "What is x?\nA. 3\nB. 4\nC. 5\nD. 6" and image(row) == _png(0)
    row, _, _ = found["perturb"]
    assert text(row) == q and image(row) != _png(0)
    row, _, _ = found["text_in_image"]
    assert text(row) == "Answer the question written in the image." and image(row) != _png(0)
    for row, *_ in found.values():
        assert row["reward_model"]["ground_truth"] == "B" and row["extra_info"]["index"] == 40
    d, _ = _draw(5, 1, 41, 5)
    with pytest.raises(ValueError, match="no variant texts"):
        ds[encode_index(2, DivaKey(1, True, d, 5, 1))]


def test_a_variant_longer_than_max_prompt_length_fails_by_name(synthetic):
    """verl's overlong filter saw only the originals; a longer variant is refused with its
    sample and offset named (a hint of all steps needs more room than its original)."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path, proc, cfg = synthetic
    plain = RLHFDataset(str(path), proc.tokenizer, cfg, proc)
    ds = DivaDataset(str(path), proc.tokenizer, cfg, proc)
    sid = int(plain.dataframe[0]["extra_info"]["index"])
    step = next(s for s in range(1, 500) if _draw(3, s, sid, 9)[0] <= -7)   # all hint steps
    d, _ = _draw(3, step, sid, 9)
    key = DivaKey(0, True, d, 9, step)
    original = ds.prompt_length(dict(plain.dataframe[0]))
    # the count is verl's: its filter at max - 1 drops exactly the rows of the longest length
    lengths = [ds.prompt_length(dict(plain.dataframe[i])) for i in range(len(plain))]
    filtered = RLHFDataset(str(path), proc.tokenizer, OmegaConf.merge(cfg, {
        "filter_overlong_prompts": True, "filter_overlong_prompts_workers": 1,
        "max_prompt_length": max(lengths) - 1}), proc)
    assert len(filtered) == sum(n < max(lengths) for n in lengths) < len(plain)
    long = ds.prompt_length(ds.diva_row(key))
    assert long > original
    tight = DivaDataset(str(path), proc.tokenizer, OmegaConf.merge(
        cfg, {"max_prompt_length": long - 1}), proc)
    with pytest.raises(ValueError, match=rf"sample {sid}: its DIVA variant \(offset {d}"):
        tight[encode_index(len(tight), key)]
    ok = DivaDataset(str(path), proc.tokenizer, OmegaConf.merge(
        cfg, {"max_prompt_length": long}), proc)
    assert ok[encode_index(len(ok), key)]["extra_info"]["diva_offset"] == d
