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


def test_a_key_given_twice_is_refused_naming_it_and_its_lines(tmp_path):
    """PyYAML keeps the last of two equal keys; the reader refuses them (top level and nested)."""
    path = tmp_path / "c.yaml"
    path.write_text("name: x\ntrain:\n  lr: 0.1\n  steps: 3\n  lr: 0.2\n")
    with pytest.raises(ValueError, match=r"c.yaml is not valid YAML: key 'lr' is given twice "
                                         r"\(lines 3 and 5\)"):
        load_config(argparse.Namespace(config=str(path), config_json=None))
    path.write_text("name: x\nseed: 1\nname: y\n")
    with pytest.raises(ValueError, match="key 'name' is given twice"):
        load_config(argparse.Namespace(config=str(path), config_json=None))


@pytest.mark.parametrize("text,message", [
    ("name: x\ntrain: null\n", "config section 'train' is empty"),
    ("name: x\ntrain:\n", "config section 'train' is empty"),
    ("name: x\n", "config has no 'train' section"),
    ("name: x\ntrain: {steps: 3}\n", "train.backend is required"),
    ("name: x\ntrain: {backend: local, steps: 1000000000000000000000000000000}\n",
     (r"config key 'train.steps' must be an integer in \[1, 1000000000\], "
      "got 1000000000000000000000000000000")),
    ("name: x\ntrain: {backend: local, steps: 1.0e+30}\n",
     "config key 'train.steps' must be an integer, got 1e[+]30"),
])
def test_vade_train_refuses_a_lost_train_block_and_huge_numbers(tmp_path, capsys, text, message):
    """``train: null`` used to train on built-in defaults; a 31-digit ``steps`` gave numpy's
    "ufunc 'isfinite' not supported". Each is one line, exit 2, before any data is read."""
    import re

    from vade.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    code = main(["train", "--config", str(cfg), "--data-dir", str(tmp_path / "none"),
                 "--model", "m", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "out").exists()
