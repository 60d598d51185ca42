"""The one config reader: a YAML file or the JSON a rule passes give the same mapping."""

from __future__ import annotations

import argparse

import pytest

from vade.checks import reject_unknown
from vade.config_io import load_config, section


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
