"""The one config reader and its range checks: errors name the key, booleans are not numbers."""

from __future__ import annotations

import argparse

import pytest

from vade.config_io import (check_bool, check_float, check_int, load_config, reject_unknown,
                             section)


def test_check_int_bounds_and_types():
    assert check_int("train.steps", 5, 1, 5) == 5
    for bad in (0, 6, True, 2.0, "3", None):
        with pytest.raises(ValueError, match=r"config key 'train\.steps' must be an integer "
                                             r"in \[1, 5\], got "):
            check_int("train.steps", bad, 1, 5)


def test_check_bool_takes_only_yaml_booleans():
    assert check_bool("data.paper.use_hub", False) is False
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match=r"config key 'data\.paper\.use_hub' must be true or "
                                             r"false, got "):
            check_bool("data.paper.use_hub", bad)


def test_check_float_open_and_closed_lower_bound():
    assert check_float("t", 2, 0, 2, open_lo=True) == 2.0 and isinstance(
        check_float("t", 2, 0, 2, open_lo=True), float)
    assert check_float("t", 0, 0, 2) == 0.0
    with pytest.raises(ValueError, match=r"'t' must be a number in \(0, 2\], got 0"):
        check_float("t", 0, 0, 2, open_lo=True)
    for bad in (2.5, -1e-9, False, "1"):
        with pytest.raises(ValueError, match=r"config key 't'"):
            check_float("t", bad, 0, 2)


def test_load_config_from_json_and_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\ntrain: {steps: 3}\n")
    from_yaml = load_config(argparse.Namespace(config=str(path), config_json=None))
    from_json = load_config(argparse.Namespace(config=None,
                                               config_json='{"name": "x", "train": {"steps": 3}}'))
    assert from_yaml == from_json == {"name": "x", "train": {"steps": 3}}
    with pytest.raises(ValueError, match="--config-json is not valid JSON"):
        load_config(argparse.Namespace(config=None, config_json="{name: x"))
    assert section(from_yaml, "train") == {"steps": 3}
    with pytest.raises(ValueError, match="unknown key 'train.step'"):
        reject_unknown({"step": 1}, {"steps"}, "train")
