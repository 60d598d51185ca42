"""Every config entry point refuses an unknown top-level section, naming it.

Real: the CLI parser, ``config_io.load_config`` and ``TrainConfig.from_config``; nothing is
stood in for (the refusal comes before any data or model is read).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vade.cli import main
from vade.config_io import SECTIONS
from vade.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]


def test_sections_equal_the_schema():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert set(schema["properties"]) == SECTIONS


def test_train_cli_refuses_a_misspelled_section(tmp_path, capsys):
    """``samplr:`` for ``sampler:`` trained with the default lambda1 before; now one line names
    it, before the data folder is even looked at."""
    config = yaml.safe_load((ROOT / "config" / "tiny.yaml").read_text())
    config["samplr"] = config.pop("sampler")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config))
    rc = main(["train", "--config", str(path), "--data-dir", str(tmp_path / "none"),
               "--model", "none", "--out", str(tmp_path / "run" / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "unknown top-level section 'samplr'" in err[0] and "'sampler'" in err[0]
    assert not (tmp_path / "run").exists()


REQUIRED = {"build-data": ["--out", "o"], "init-difficulty": ["--data", "d", "--model", "m",
                                                                "--out", "o"],
            "build-model": ["--out", "o"], "report": ["--out", "o"],
            "train": ["--data-dir", "d", "--model", "m", "--out", "o"]}


@pytest.mark.parametrize("verb", sorted(REQUIRED))
def test_every_verb_refuses_it_from_json(verb, tmp_path, capsys):
    args = [str(tmp_path / a) if i % 2 else a for i, a in enumerate(REQUIRED[verb])]
    rc = main([verb, "--config-json", json.dumps({"name": "x", "trian": {}}), *args])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown top-level section 'trian'" in err, err
    assert list(tmp_path.iterdir()) == []


def test_python_entry_refuses_it():
    with pytest.raises(ValueError, match="unknown top-level section 'samplr'"):
        TrainConfig.from_config({"name": "x", "train": {}, "samplr": {"lambda1": 0.5}})
