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


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "x" * 10_000_000, ""])
@pytest.mark.parametrize("verb", sorted(REQUIRED))
def test_a_name_that_is_not_one_safe_folder_is_refused_by_every_verb(verb, name, tmp_path,
                                                                      capsys):
    """Before: ``name: ".."`` planned ``data/../train.parquet``; a 10 MB name was refused only
    after the model loaded, in a 10 MB error line. Now the config loader refuses both in one
    short line, before any input is read."""
    args = [str(tmp_path / a) if i % 2 else a for i, a in enumerate(REQUIRED[verb])]
    rc = main([verb, "--config-json", json.dumps({"name": name}), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and len(err[0]) < 400, err[0][:400]
    assert "config key 'name' must be a name usable as one folder" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_the_schema_bounds_the_name_as_the_loader_does():
    import jsonschema

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    name_schema = schema["properties"]["name"]
    for bad in ("..", ".", ".x", "a/b", "x" * 65, ""):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, name_schema)
    for good in ("tiny", "tiny-study.v2", "x" * 64, "_a"):
        jsonschema.validate(good, name_schema)
        assert TrainConfig.from_config({"name": good, "train": {}}).name == good


def test_a_yaml_merge_key_is_named_as_valid_yaml_the_loader_does_not_accept(tmp_path, capsys):
    """Before: "not valid YAML" for YAML 1.1's merge key, which is valid."""
    path = tmp_path / "merge.yaml"
    path.write_text("name: x\nbase: &b {lr: 0.1}\ntrain:\n  <<: *b\n  steps: 2\n")
    rc = main(["train", "--config", str(path), "--data-dir", str(tmp_path / "d"), "--model", "m",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert (f"vade train: error: {path} is not accepted: merge key '<<' (line 4) is valid YAML "
            "1.1, but this loader does not accept merge keys") in err[0]
