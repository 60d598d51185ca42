"""The override builder against verl 0.7.1's real Hydra configs (CPU, ~10 s).

Every override set the builder emits for the paper grid composes with ``ppo_trainer`` (DAPO's with
verl-recipe's ``dapo_trainer`` of the pinned commit, from tests/fixtures/verl/recipe_8f9e7ac or a
checkout), the values resolve, the loss mode is
a registered verl policy loss, the sampler plugin loads through verl's own loader, and Table 4's
numbers land where verl reads them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("verl")

import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from vade.train.config import TrainConfig
from vade.train.verl.config import VerlConfig
from vade.train.verl.launch import model_path, plan
from vade.train.verl.overrides import RunSpec, build_overrides, reward_entry_path
from vade.train.verl.settings import PluginSettings

MODELS = {"qwen2.5-vl-3b": "Qwen/Qwen2.5-VL-3B-Instruct",
          "qwen2.5-vl-7b": "Qwen/Qwen2.5-VL-7B-Instruct"}
METHODS = ("vanilla", "vade", "symmetric", "greedy", "last-update")


def verl_config_dir() -> str:
    import verl

    return str(Path(verl.__file__).parent / "trainer" / "config")


PAPER = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml")
                      .read_text())


def paper_cfg(algorithm="grpo", method="vade", seed=0, config=PAPER) -> TrainConfig:
    """The run as ``vade train`` parses it from config/config.yaml (the real paper config)."""
    return TrainConfig.from_config(config, algorithm=algorithm, method=method, seed=seed)


def spec(model="qwen2.5-vl-7b", algorithm="grpo", method="vade", seed=0, out="/tmp/r"):
    return RunSpec(cfg=paper_cfg(algorithm, method, seed), model=model,
                   model_path=MODELS[model], data_dir=Path("data/paper"),
                   out_dir=Path(out) / f"{model}-{algorithm}-{method}-s{seed}",
                   difficulty=Path("results/paper/difficulty/initial.parquet"))


@pytest.fixture(scope="module")
def composed():
    out = {}
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        for model in MODELS:
            for algorithm in ("grpo", "gspo"):
                for method in METHODS:
                    s = spec(model, algorithm, method)
                    ov = build_overrides(s, tracking_uri="sqlite:////tmp/mlflow.db")
                    cfg = compose("ppo_trainer", overrides=ov)
                    out[(model, algorithm, method)] = OmegaConf.to_container(cfg, resolve=True)
    return out


def test_every_paper_cell_composes_and_resolves(composed):
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    assert len(composed) == 2 * 2 * len(METHODS)
    for (model, algorithm, method), c in composed.items():
        actor = c["actor_rollout_ref"]["actor"]
        loss = actor["policy_loss"]["loss_mode"]
        assert loss == ("gspo" if algorithm == "gspo" else "vanilla")
        assert callable(get_policy_loss_fn(loss))
        assert c["algorithm"]["adv_estimator"] == "grpo"
        assert c["actor_rollout_ref"]["model"]["path"] == MODELS[model]
        vade = PluginSettings.from_dict(c["data"]["sampler"]["vade"])
        assert vade.method == method and vade.run_id == f"{model}-{algorithm}-{method}-s0"
        assert (vade.initial_difficulty is None) == (method == "vanilla")
        assert c["trainer"]["experiment_name"] == vade.run_id


def test_table4_values_land_where_verl_reads_them(composed):
    c = composed[("qwen2.5-vl-3b", "gspo", "vade")]
    data, actor = c["data"], c["actor_rollout_ref"]["actor"]
    rollout, trainer = c["actor_rollout_ref"]["rollout"], c["trainer"]
    assert (data["train_batch_size"], data["max_prompt_length"], data["max_response_length"]) \
        == (512, 8192, 2048)
    assert data["filter_overlong_prompts"] is True and data["dataloader_num_workers"] == 0
    assert rollout["n"] == 8 and rollout["name"] == "vllm"
    assert rollout["tensor_model_parallel_size"] == 2
    assert rollout["prompt_length"] == 8192 and rollout["response_length"] == 2048
    assert actor["optim"]["lr"] == 1e-6 and actor["ppo_mini_batch_size"] == 128
    # config/config.yaml: 2 per GPU, what fits 95% of an 80 GB GPU (vade.cluster.memory;
    # Table 4: 16)
    assert actor["ppo_micro_batch_size_per_gpu"] == 2
    assert actor["use_kl_loss"] is True and actor["kl_loss_coef"] == 0.01
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"]) == (3e-4, 4e-4)
    assert actor["loss_agg_mode"] == "seq-mean-token-mean"
    assert (trainer["n_gpus_per_node"], trainer["nnodes"]) == (4, 1)
    # 15 epochs of 16 batches: the step count, whatever verl's epoch bound
    assert trainer["total_training_steps"] == 240 and trainer["total_epochs"] >= 15
    assert (trainer["test_freq"], trainer["save_freq"], trainer["max_actor_ckpt_to_keep"]) \
        == (10, 20, 2)
    assert (actor["ppo_epochs"], actor["grad_clip"], actor["optim"]["weight_decay"]) \
        == (1, 1.0, 0.01)
    assert rollout["val_kwargs"]["temperature"] == 0 and rollout["val_kwargs"]["do_sample"] is False
    vade = PluginSettings.from_dict(c["data"]["sampler"]["vade"])
    assert (vade.sampler.lambda1, vade.sampler.lambda2, vade.sampler.snapshot_every,
            vade.keep_every) \
        == (0.2, 0.999, 50, 20)
    assert trainer["logger"] == ["console", "mlflow", "file"]
    assert trainer["project_name"] == "paper"
    assert trainer["default_local_dir"].endswith("qwen2.5-vl-3b-gspo-vade-s0/checkpoints")
    grpo = composed[("qwen2.5-vl-3b", "grpo", "vade")]["actor_rollout_ref"]["actor"]
    assert grpo["loss_agg_mode"] == "token-mean" and grpo["clip_ratio_low"] == 0.2
    assert grpo["clip_ratio_c"] == 3.0 and c["algorithm"]["norm_adv_by_std_in_grpo"] is True


def test_sampler_plugin_and_reward_load_through_verl(composed):
    from verl.experimental.dataset.sampler import AbstractCurriculumSampler
    from verl.utils.import_utils import load_extern_object

    c = composed[("qwen2.5-vl-7b", "grpo", "vade")]
    cls = load_extern_object(c["data"]["sampler"]["class_path"], c["data"]["sampler"]["class_name"])
    assert issubclass(cls, AbstractCurriculumSampler)
    reward = c["reward"]["custom_reward_function"]
    assert Path(reward["path"]) == reward_entry_path() and reward["name"] == "compute_score"
    if not reward_entry_path().is_file():
        pytest.skip("vade/rewards/verl_entry.py not written yet (rewards helper)")
    from verl.experimental.reward_loop import migrate_legacy_reward_impl
    from verl.trainer.ppo.reward import get_custom_reward_fn

    fn = get_custom_reward_fn(migrate_legacy_reward_impl(OmegaConf.create(c)))
    # called as verl's reward manager calls it: the real reward, right and wrong answers
    info = {"answer_type": "math"}
    right = fn("test", r"so \boxed{2\sqrt{3}}", r"\sqrt{12}", info)
    wrong = fn("test", r"so \boxed{3\sqrt{2}}", r"\sqrt{12}", info)
    choice = fn("test", r"\boxed{C}", "C", {"answer_type": "choice"})
    assert (right["score"], right["acc"], wrong["score"], wrong["acc"]) == (1.0, 1.0, 0.0, 0.0)
    assert choice["acc"] == 1.0


def test_unknown_key_and_bad_values_fail():
    ov = build_overrides(spec())
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        with pytest.raises(ConfigCompositionException):
            compose("ppo_trainer", overrides=ov + ["actor_rollout_ref.actor.optim.lrr=1e-6"])
    with pytest.raises(ValueError, match="train.ppo_mini_batch_size = 100 must divide"):
        paper_cfg(config={**PAPER, "train": {**PAPER["train"], "ppo_mini_batch_size": 100}})
    with pytest.raises(ValueError, match="config key 'train.verl.batch' is unknown"):
        VerlConfig.from_dict({"batch": 4})
    with pytest.raises(ValueError, match="config key 'train.verl.train_batch_size' is unknown"):
        VerlConfig.from_dict({"train_batch_size": 512})  # one name per concept: train.batch_size
    with pytest.raises(ValueError, match="tensor_model_parallel_size"):
        VerlConfig.from_dict({"tensor_model_parallel_size": 3})
    with pytest.raises(ValueError, match="= 8 must be divisible by the 16 GPUs"):
        paper_cfg(config={**PAPER, "train": {**PAPER["train"], "ppo_mini_batch_size": 1,
                                             "verl": {"n_gpus_per_node": 16}}})
    with pytest.raises(ValueError, match="dapo.max_rollout_factor"):
        paper_cfg(method="dapo", config={**PAPER, "dapo": {"max_rollout_factor": 0.5}})
    with pytest.raises(ValueError, match="lambda1 = 0.5 > lambda2 = 0.4"):
        paper_cfg(config={**PAPER, "sampler": {"lambda1": 0.5, "lambda2": 0.4}})
    with pytest.raises(ValueError, match="train.method = 'dapo2' is unknown"):
        spec(method="dapo2")


def _recipe_config_dir(tmp_path: Path) -> Path:
    """verl-recipe's dapo config: a checkout (VADE_VERL_RECIPE_DIR), else the copy of the pinned
    commit's file in tests/fixtures/verl/recipe_8f9e7ac."""
    from vade.train.verl.recipe import locate

    try:
        return locate() / "recipe" / "dapo" / "config"
    except FileNotFoundError:
        return (Path(__file__).parent / "fixtures" / "verl" / "recipe_8f9e7ac" / "recipe"
                / "dapo" / "config")


@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
def test_dapo_composes_with_the_recipe_config(tmp_path, algorithm):
    config_dir = _recipe_config_dir(tmp_path)
    s = spec(algorithm=algorithm, method="dapo")
    ov = build_overrides(s)
    assert not any(o.startswith(("data.sampler", "+data.sampler")) for o in ov)
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        c = OmegaConf.to_container(compose("dapo_trainer", overrides=ov), resolve=True)
    fg = c["algorithm"]["filter_groups"]
    assert (fg["enable"], fg["metric"], fg["max_num_gen_batches"]) == (True, "acc", 0)
    assert c["trainer"]["total_epochs"] == 720 and c["data"]["gen_batch_size"] == 512
    assert c["reward"]["reward_manager"]["name"] == "naive"
    assert c["vade_dapo"]["base_steps"] == 240 and c["vade_dapo"]["max_rollout_factor"] == 3.0


def test_launch_plan_reads_the_project_config(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the default store, not the tests'
    config = {"name": "paper",
              "models": {"qwen2.5-vl-3b": {"name_or_path": MODELS["qwen2.5-vl-3b"]}},
              "train": {"backend": "verl", "steps": 2},
              "sampler": {"lambda1": 0.3, "lambda2": 0.99, "snapshot_every": 5},
              "dapo": {"max_rollout_factor": 3}, "tracking": {"mlflow_uri": None}}
    path = model_path(config, "qwen2.5-vl-3b")
    assert path == MODELS["qwen2.5-vl-3b"]
    cfg = TrainConfig.from_config(config, algorithm="grpo", method="vade", seed=1)
    s, cmd, env = plan(cfg, model="qwen2.5-vl-3b", model_path=path, data_dir=tmp_path / "data",
                       difficulty=tmp_path / "initial.parquet", out_dir=tmp_path / "run")
    assert cmd[1:3] == ["-m", "vade.train.verl.ppo_entry"] and s.run_id == "qwen2.5-vl-3b-grpo-vade-s1"
    assert "trainer.total_training_steps=2" in cmd and "+data.sampler.vade.lambda1=0.3" in cmd
    db = Path("results/paper/mlflow.db").resolve()
    assert env["MLFLOW_TRACKING_URI"] == f"sqlite:///{db}"
    cfg = TrainConfig.from_config(config, algorithm="gspo", method="dapo", seed=0)
    _, cmd, _ = plan(cfg, model="qwen2.5-vl-3b", model_path=path, data_dir=tmp_path,
                     difficulty=None, out_dir=tmp_path / "run")
    assert cmd[1:3] == ["-m", "vade.train.verl.dapo_entry"] and "trainer.total_epochs=6" in cmd
    assert "+vade_dapo.base_steps=2" in cmd


def test_the_loss_comes_from_the_algorithm_block_shared_with_the_local_trainer(tmp_path):
    """train.gspo / train.grpo set verl's actor loss; the verl block no longer has loss keys."""
    from vade.train.config import TrainConfig

    config = {"name": "paper",
              "models": {"qwen2.5-vl-3b": {"name_or_path": MODELS["qwen2.5-vl-3b"]}},
              "train": {"backend": "verl", "gspo": {"kl_loss_coef": 0.0, "clip_ratio_high": 5e-4},
                        "grpo": {"norm_adv_by_std_in_grpo": False}}}

    def overrides(algorithm: str) -> list[str]:
        cfg = TrainConfig.from_config(config, algorithm=algorithm, method="vade")
        return plan(cfg, model="qwen2.5-vl-3b", model_path=MODELS["qwen2.5-vl-3b"],
                    data_dir=tmp_path, difficulty=None, out_dir=tmp_path / "run")[1]

    gspo, grpo = overrides("gspo"), overrides("grpo")
    local = TrainConfig.from_config(config, algorithm="gspo", method="vade")
    assert local.algo.kl_loss_coef == 0.0 and local.algo.clip_ratio_high == 5e-4
    assert "actor_rollout_ref.actor.use_kl_loss=false" in gspo
    assert "actor_rollout_ref.actor.clip_ratio_high=0.0005" in gspo
    assert "actor_rollout_ref.actor.clip_ratio_low=0.0003" in gspo  # GSPO's default kept
    assert "algorithm.norm_adv_by_std_in_grpo=true" in gspo
    assert "algorithm.norm_adv_by_std_in_grpo=false" in grpo
    assert "actor_rollout_ref.actor.use_kl_loss=true" in grpo
    with pytest.raises(ValueError, match="config key 'train.verl.kl_loss_coef' is unknown"):
        VerlConfig.from_dict({"kl_loss_coef": 0.01})


def test_hydras_run_folder_is_inside_the_run(tmp_path):
    """verl's entry is a Hydra app: without ``hydra.run.dir`` every launch wrote
    ``outputs/<date>/<time>/`` (configs and the entry's log) into the launcher's working folder,
    the checkout under Snakemake (seen when verl's real workers ran, tests/engines)."""
    s = spec(out=str(tmp_path))
    ov = build_overrides(s)
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        cfg = compose("ppo_trainer", overrides=ov, return_hydra_config=True)
    assert Path(cfg.hydra.run.dir) == s.out_dir.resolve() / "hydra"
