"""TrainConfig: defaults, overrides, and bad values failing with the key named."""

from __future__ import annotations

import pytest

from vade.train.config import TRAIN_METHODS, TrainConfig


def test_defaults_and_algorithm_blocks():
    cfg = TrainConfig.from_config({"name": "tiny", "seed": 3})
    assert (cfg.name, cfg.seed, cfg.method, cfg.algorithm) == ("tiny", 3, "vade", "grpo")
    assert cfg.loss_mode == "vanilla" and cfg.algo.clip_ratio_high == 0.2
    assert cfg.algo.kl_loss_coef == 0.01  # the paper's Table 4
    gspo = TrainConfig.from_config({"train": {"algorithm": "gspo", "gspo": {"clip_ratio_low": 1e-3}}})
    assert gspo.loss_mode == "gspo"
    assert (gspo.algo.clip_ratio_low, gspo.algo.clip_ratio_high) == (1e-3, 4e-4)
    assert gspo.algo.loss_agg_mode == "seq-mean-token-mean"
    assert cfg.mini_batch_size == 16 and cfg.rollout_budget == 3 * cfg.steps * 16 * 8
    assert set(TRAIN_METHODS) == {"vanilla", "dapo", "vade", "symmetric", "greedy", "last-update",
                                  "diva", "vade-diva", "mopps", "greso", "mmr1", "sec",
                                  "mopps-prior", "greso-skip", "mmr1-stale",
                                  "sec-passrate"}
    assert cfg.needs_difficulty and not TrainConfig(method="dapo").needs_difficulty
    # DIVA's levels start from the initial rollouts; the sampler under it chooses the originals
    assert TrainConfig(method="diva").needs_difficulty
    assert [TrainConfig(method=m).sampler_method for m in ("diva", "vade-diva", "dapo", "greedy")
            ] == ["vanilla", "vade", "vanilla", "greedy"]
    assert TrainConfig.from_config({"diva": {"k": 0.2}}).diva.k == 0.2
    with pytest.raises(ValueError, match=r"'diva.low_reward_scale' must be a number in \[0, 1\], got 2"):
        TrainConfig.from_config({"diva": {"low_reward_scale": 2}})


def test_cli_overrides_replace_config_values():
    cfg = TrainConfig.from_config({"train": {"method": "vade", "algorithm": "grpo"}, "seed": 1},
                                  method="dapo", algorithm="gspo", seed=7, backend=None)
    assert (cfg.method, cfg.algorithm, cfg.seed, cfg.backend) == ("dapo", "gspo", 7, "local")


@pytest.mark.parametrize("config,key", [
    ({"train": {"method": "ppo"}}, "train.method"),
    ({"train": {"rollouts_per_prompt": 1}}, "train.rollouts_per_prompt"),
    ({"train": {"batch_sise": 4}}, "train.batch_sise"),
    ({"train": {"algorithm": "dpo"}}, "train.algorithm"),
    ({"train": {"lr": 0}}, "train.lr"),
    ({"train": {"batch_size": 8, "ppo_mini_batch_size": 3}}, "train.ppo_mini_batch_size"),
    ({"train": {"grpo": {"loss_agg_mode": "sum"}}}, "train.grpo.loss_agg_mode"),
    ({"train": {"gspo": {"clip_ratio_c": 1.0}}}, "train.gspo.clip_ratio_c"),
    ({"train": {"grpo": {"kl_coef": 0.1}}}, "train.grpo.kl_coef"),
    ({"sampler": {"lambda1": 0.5, "lambda2": 0.4}}, "sampler.lambda1"),
    ({"dapo": {"max_rollout_factor": 0.5}}, "dapo.max_rollout_factor"),
    ({"tracking": {"enabled": 1}}, "tracking.enabled"),
    ({"seed": -1}, "seed"),
    ({"train": {"val_n": 4}}, "train.val_n"),
    ({"train": {"verl": [1]}}, "train.verl"),
])
def test_bad_values_name_the_key(config, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        TrainConfig.from_config(config)


def test_batch_larger_than_the_data_fails():
    cfg = TrainConfig(batch_size=32)
    cfg.check_data(32)
    with pytest.raises(ValueError, match="train.batch_size = 32 exceeds the 20 training rows"):
        cfg.check_data(20)
