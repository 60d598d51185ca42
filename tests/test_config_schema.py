"""Types, ranges and choices live once, in ``workflow/schemas/config.schema.yaml`` (issue 46).

All real: the schema file (or a copy of it edited in ``tmp_path``), jsonschema, the typed config
classes and the ``vade`` CLI run in-process. Nothing is a stand-in.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from vade import config_schema
from vade.cli import main
from vade.config_io import read_yaml
from vade.data.benchmarks import BENCHMARK_SPLITS
from vade.data.config import (
    CHART_STYLES,
    DATA_KINDS,
    OVERLAP_MATCH,
    SHORTFALL,
    SYNTHETIC_DOMAINS,
    data_config_from_mapping,
)
from vade.data.sources import TASKS
from vade.eval.config import MATHVERSE_SUBSETS, MATHVISION_VARIANTS, EvaluateConfig
from vade.job.config import ClusterConfig
from vade.models.config import model_config_from_section
from vade.report.config import ReportConfig
from vade.report.cost import COST_AXES
from vade.rollout.difficulty import difficulty_config_from_section
from vade.rollout.engine import ENGINES
from vade.tracking import TrackingConfig
from vade.train.config import (
    AGG_MODES,
    BACKENDS,
    KL_TYPES,
    DapoConfig,
    DivaConfig,
    SamplerConfig,
    TrainConfig,
)

ROOT = Path(__file__).resolve().parents[1]
BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
# Bounds that a rule between keys refuses on its own too (so deleting the bound from the schema
# cannot show the value passing): a tensor-parallel size of 0 divides no GPU count; the tiny
# model's sizes are tied by divisibility and mrope_section's sum (vade/models/config.py).
_TIED = ("hidden_size", "num_heads", "num_kv_heads", "vision_hidden_size", "vision_heads",
         "patch_size", "spatial_merge_size", "min_pixels", "max_pixels")
RULED_TOO = {(("verl", "tensor_model_parallel_size"), "minimum")} | {
    (("tiny", key), bound) for key in _TIED for bound in BOUNDS} | {
    (("tiny", "mrope_section"), bound) for bound in BOUNDS}


def _tiny_with(path: str, value: Any) -> dict[str, Any]:
    config = read_yaml(ROOT / "config" / "tiny.yaml")
    *parents, last = path.split(".")
    node = config
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return config


@pytest.mark.parametrize("path, value, line", [
    ("sampler.lambda1", 1.5, "config key 'sampler.lambda1' must be a number in [0, 1], got 1.5"),
    ("train.lr", 0, "config key 'train.lr' must be a number in (0, 1], got 0"),
    ("difficulty.rollouts", 1,
     "config key 'difficulty.rollouts' must be an integer in [2, 1024], got 1"),
    ("dapo.max_rollout_factor", math.nan,
     "config key 'dapo.max_rollout_factor' must be a number, got nan"),
    ("train.verl.attention", "flash",
     "config key 'train.verl.attention' must be one of sdpa, flash_attention_2, got 'flash'"),
    ("evaluate.repeats", 0, "config key 'evaluate.repeats' must be an integer in [1, 64], got 0"),
    ("evaluate.judge.port", 70000,
     "config key 'evaluate.judge.port' must be an integer in [1, 65535], got 70000"),
    ("evaluate.seed", True, "config key 'evaluate.seed' must be an integer, got True"),
    ("train.steps", 4.0, "config key 'train.steps' must be an integer, got 4.0"),
    ("evaluate.max_new_tokens", "x",
     "config key 'evaluate.max_new_tokens' must be an integer or null, got 'x'"),
    ("data.paper", {"tasks": {"geo4k": 1}},
     ("config key 'data.paper.tasks.geo4k' is unknown (did you mean 'geo3k'? allowed: geo3k, "
      "geo170k_qa, clevr_math, geos, geoqa_plus, geometry3k, figureqa, tabmwp, ai2d, chartqa, "
      "scienceqa)")),
    ("evaluate.judge.watchdog.hang", 3,
     ("config key 'evaluate.judge.watchdog.hang' is unknown (did you mean 'hang_s'? allowed: "
      "call_timeout_s, hang_s, interval_s, liveness_failures, liveness_timeout_s, max_retries, "
      "min_calls, retry_delay_s, window_calls)")),
])
def test_a_bad_value_is_one_line_naming_key_value_and_range(path, value, line):
    """The whole config, as the workflow checks it when Snakemake starts (common.smk)."""
    with pytest.raises(ValueError) as err:
        config_schema.check(_tiny_with(path, value))
    assert str(err.value) == line


@pytest.mark.parametrize("argv, line", [
    (["evaluate", "--plan"], "config key 'evaluate.repeats' must be an integer in [1, 64], got 0"),
    (["train", "--data-dir", "d", "--model", "m", "--out", "o"],
     "config key 'train.lr' must be a number in (0, 1], got 0"),
    (["build-data", "--out", "o"],
     "config key 'data.synthetic.image_size' must be an integer in [28, 1024], got 8"),
    (["build-model", "--out", "o"],
     "config key 'model.tiny.num_layers' must be an integer in [1, 128], got 0"),
    (["init-difficulty", "--data", "d.parquet", "--model", "m", "--out", "o"],
     "config key 'difficulty.rollouts' must be an integer in [2, 1024], got 1"),
    (["report", "--out", "o"], "config key 'report.decimals' must be an integer in [0, 6], got 9"),
], ids=["evaluate", "train", "build-data", "build-model", "init-difficulty", "report"])
def test_a_verb_refuses_its_section_with_the_same_line(argv, line, capsys, tmp_path,
                                                       monkeypatch):
    """Each verb run by hand, outside Snakemake: the section in its ``--config-json`` is checked
    against the same schema, one line, before anything is read or written (before: each reader's
    own wording, e.g. ``evaluate.repeats = 0 is out of range [1, 64]``)."""
    config = {"evaluate": {"repeats": 0}, "train": {"backend": "local", "lr": 0},
              "data": {"synthetic": {"image_size": 8}}, "model": {"tiny": {"num_layers": 0}},
              "difficulty": {"rollouts": 1}, "report": {"decimals": 9}}
    section = {"build-data": "data", "build-model": "model",
               "init-difficulty": "difficulty"}.get(argv[0], argv[0])
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--config-json", json.dumps({section: config[section]})]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"vade {argv[0]}: error: {line}"]
    assert not list(tmp_path.iterdir())   # nothing written


def _bounded(node: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...] = ()):
    """(path, node) of every property of ``node`` with a numeric bound (objects and ``$ref``s
    walked; the nodes are the schema's own, so editing one edits the schema)."""
    for key, child in node.get("properties", {}).items():
        if "$ref" in child:
            child = defs[child["$ref"].removeprefix("#/$defs/")]
        if any(b in child for b in BOUNDS):
            yield (*path, key), child
        yield from _bounded(child, defs, (*path, key))


def _beyond(child: dict[str, Any], bound: str) -> float:
    """A value just past ``bound`` (one the schema with that bound refuses)."""
    step = 1 if "integer" in child["type"] else 0.5
    return {"minimum": child.get("minimum", 0) - step, "exclusiveMinimum":
            child.get("exclusiveMinimum"), "maximum": child.get("maximum", 0) + step,
            "exclusiveMaximum": child.get("exclusiveMaximum")}[bound]


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    return out


# The typed reader each verb uses for its section (the section's mapping in, a typed object out).
READERS = {
    "evaluate": EvaluateConfig.from_dict,
    "difficulty": difficulty_config_from_section,
    "cluster": lambda part: ClusterConfig.from_config({"cluster": part}),
    "report": ReportConfig.from_dict,
    "models": model_config_from_section,
    "data": lambda part: data_config_from_mapping({"data": part}),
}


def _read_section(section: str, path: tuple[str, ...], value: Any) -> None:
    """The typed reader a verb uses for ``section`` (``READERS``; vade train's for train,
    sampler, dapo and diva), given ``value`` at ``path`` and, where a rule between keys would
    refuse it too, a partner key that satisfies that rule (so only the bound itself is tried)."""
    part = _nested(path, value)
    if section == "data" and path[0] == "paper":   # a paper block names its tasks
        part["paper"].setdefault("tasks", {"geo3k": 1})
    if section in READERS:
        READERS[section](part)
        return
    if path in (("lambda1",), ("lambda2",)):   # lambda1 <= lambda2
        part = {"lambda1": value, "lambda2": value}
    elif path == ("val_n",):                     # several greedy answers are one answer
        part["val_temperature"] = 1.0
    elif path == ("verl", "n_gpus_per_node"):    # the tensor-parallel size divides the GPUs
        part["verl"]["tensor_model_parallel_size"] = 1
    elif path == ("verl", "tensor_model_parallel_size"):
        part["verl"]["nnodes"] = value
    TrainConfig.from_config({section: part})


@pytest.mark.parametrize("section, at_least", [
    ("evaluate", 50), ("sampler", 5), ("dapo", 3), ("diva", 6), ("train", 60),
    ("difficulty", 11), ("data", 23), ("models", 20),
    ("report", 9), ("cluster", 11)])
def test_every_bound_lives_in_the_schema_only(monkeypatch, section, at_least):
    """Each numeric bound of a section, deleted from a copy of the schema, no longer refuses a
    value past it: no hand-written check in the package repeats it. On main these values were
    refused by the hand-written range checks of vade/eval/config.py, vade/train/config.py,
    vade/rollout/difficulty.py, vade/data/config.py, vade/models/config.py,
    vade/report/config.py and vade/job/config.py. Left out: the
    bounds a rule between keys enforces as well (``RULED_TOO``)."""
    schema = yaml.safe_load(config_schema.SCHEMA_PATH.read_text())
    cases = []
    node = schema["properties"][section]
    if section == "models":   # each entry of models: what vade build-model reads as model
        node = node["additionalProperties"]
    for path, child in _bounded(node, schema["$defs"]):
        for bound in BOUNDS:
            if bound in child and (path, bound) not in RULED_TOO:
                cases.append((path, child, bound, _beyond(child, bound)))
    assert len(cases) >= at_least, cases   # every bound of the section, not a few
    # the package reads this copy, edited in place (a file round trip per case cost ~30 s)
    monkeypatch.setattr(config_schema, "schema", lambda: schema)
    for path, child, bound, value in cases:
        config_schema._validator.cache_clear()
        where = "model" if section == "models" else section
        with pytest.raises(ValueError, match=rf"^config key '{where}\.[\w.]+' must be"):
            _read_section(section, path, value)
        bound_value = child.pop(bound)
        config_schema._validator.cache_clear()
        _read_section(section, path, value)   # accepted: the schema alone refused it
        child[bound] = bound_value
    monkeypatch.undo()
    _clear_caches()


def _clear_caches() -> None:
    config_schema.schema.cache_clear()
    config_schema._validator.cache_clear()


def test_the_schema_enums_are_the_tables():
    """The choices the code implements and the schema's enums are the same lists."""
    evaluate = config_schema.subschema("evaluate")["properties"]
    assert evaluate["mathverse_subset"]["enum"] == list(MATHVERSE_SUBSETS)
    assert evaluate["mathvision_variant"]["enum"] == list(MATHVISION_VARIANTS)
    loss = config_schema.subschema("train.grpo")["properties"]
    assert loss["loss_agg_mode"]["enum"] == list(AGG_MODES)
    assert loss["kl_loss_type"]["enum"] == list(KL_TYPES)
    assert config_schema.subschema("train")["properties"]["backend"]["enum"] == list(BACKENDS)
    assert config_schema.subschema("difficulty")["properties"]["engine"]["enum"] == list(ENGINES)
    data = config_schema.subschema("data")["properties"]
    assert data["kind"]["enum"] == list(DATA_KINDS)
    synthetic, paper = data["synthetic"]["properties"], data["paper"]["properties"]
    assert synthetic["domains"]["items"]["enum"] == list(SYNTHETIC_DOMAINS)
    assert synthetic["chart_styles"]["items"]["enum"] == list(CHART_STYLES)
    assert paper["tasks"]["propertyNames"]["enum"] == list(TASKS)
    assert paper["exclude_benchmarks"]["items"]["enum"] == list(BENCHMARK_SPLITS)
    assert paper["overlap_match"]["enum"] == list(OVERLAP_MATCH)
    assert paper["shortfall"]["enum"] == list(SHORTFALL)
    assert config_schema.subschema("report")["properties"]["cost_axis"]["enum"] == list(COST_AXES)


def test_a_checked_mapping_is_built_with_floats_and_tuples():
    cfg = EvaluateConfig.from_dict({"temperature": 1, "judge": {"extra_args": ["--x"]},
                                    "plan": {"tokens_per_s": 5}})
    assert type(cfg.temperature) is float and cfg.temperature == 1.0
    assert cfg.judge.extra_args == ("--x",) and type(cfg.plan.tokens_per_s) is float


def test_a_default_is_read_from_the_schema_with_its_ref_beside_it():
    """``sampler.lambda1`` is ``{$ref: probability, default: 0.2}``: the default is the node's
    own key and the bounds come from the referenced definition, both in one node."""
    node = config_schema.subschema("sampler.lambda1")
    assert (node["default"], node["minimum"], node["maximum"]) == (0.2, 0, 1)
    assert config_schema.default("diva.low_reward") == 0.15
    with pytest.raises(KeyError, match="no default for 'train.steps'"):
        config_schema.default("train.steps")


@pytest.mark.parametrize("section, cls", [("sampler", SamplerConfig), ("dapo", DapoConfig),
                                          ("diva", DivaConfig), ("tracking", TrackingConfig)])
def test_config_class_defaults_are_the_schemas(section: str, cls: type):
    """What Snakemake fills in (the schema's ``default``) and what a verb run by hand gets (the
    class's field default) are one value: every schema default of the section is the field's."""
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    nodes = {k: config_schema.subschema(f"{section}.{k}")
             for k in config_schema.subschema(section)["properties"]}
    stated = {k: node["default"] for k, node in nodes.items() if "default" in node}
    assert stated, f"{section}: the schema states no default"
    for key, value in stated.items():
        assert fields[key] == value, f"{section}.{key}: class {fields[key]!r}, schema {value!r}"
