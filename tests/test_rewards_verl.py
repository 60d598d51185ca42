"""verl 0.7.1 loads ``vade/rewards/verl_entry.py`` as its custom reward and gets our scores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vade.rewards import VERL_ENTRY, compute_score

pytest.importorskip("verl")
omegaconf = pytest.importorskip("omegaconf")


def _call(fn, **kw):
    return fn(data_source=kw.get("data_source", "geo3k"), solution_str=kw["solution"],
              ground_truth=kw["gold"], extra_info=kw.get("extra_info", {}))


def test_entry_file_is_where_the_package_says():
    assert Path(VERL_ENTRY).is_file() and Path(VERL_ENTRY).name == "verl_entry.py"
    assert os.path.isabs(VERL_ENTRY)


def test_get_custom_reward_fn_resolves_the_entry_from_a_config_dict():
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = omegaconf.OmegaConf.create({"reward": {"custom_reward_function": {
        "path": VERL_ENTRY, "name": "compute_score", "reward_kwargs": {}}}})
    fn = get_custom_reward_fn(cfg)
    assert fn is not None
    assert _call(fn, solution=r"\boxed{2\sqrt{3}}", gold=r"\sqrt{12}") == {"score": 1.0, "acc": 1.0}
    assert _call(fn, solution=r"\boxed{3}", gold="4") == {"score": 0.0, "acc": 0.0}
    assert _call(fn, data_source="chartqa", solution="The answer is 104.9",
                 gold="100")["acc"] == 1.0
    # same function as the package's (the entry file only re-exports it)
    assert _call(fn, solution="Answer: 7", gold="7") == compute_score("geo3k", "Answer: 7", "7", {})


def test_reward_kwargs_reach_the_function():
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = omegaconf.OmegaConf.create({"reward": {"custom_reward_function": {
        "path": VERL_ENTRY, "name": "compute_score", "reward_kwargs": {"format_weight": 0.25}}}})
    fn = get_custom_reward_fn(cfg)
    assert _call(fn, solution="Answer: 7", gold="7") == {"score": 0.75, "acc": 1.0}
    bad = omegaconf.OmegaConf.create({"reward": {"custom_reward_function": {
        "path": VERL_ENTRY, "name": "compute_score", "reward_kwargs": {"fmt": 0.25}}}})
    with pytest.raises(ValueError, match="unknown reward keyword 'fmt'"):
        _call(get_custom_reward_fn(bad), solution="Answer: 7", gold="7")


def test_legacy_top_level_key_through_verls_own_config_and_migration():
    """What ``python -m verl.trainer.main_ppo custom_reward_function.path=...`` does: compose the
    real ppo_trainer.yaml, migrate the legacy key (main_ppo does), then load."""
    import verl
    from hydra import compose, initialize_config_dir
    from verl.experimental.reward_loop import migrate_legacy_reward_impl
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose("ppo_trainer", overrides=[f"custom_reward_function.path={VERL_ENTRY}",
                                                "custom_reward_function.name=compute_score"])
    cfg = migrate_legacy_reward_impl(cfg)
    fn = get_custom_reward_fn(cfg)
    assert _call(fn, data_source="figureqa", solution="Yes.", gold="Yes")["acc"] == 1.0
    assert _call(fn, data_source="figureqa", solution="No.", gold="Yes")["acc"] == 0.0
