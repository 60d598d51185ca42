"""How every ``vade`` verb receives its configuration: one reader, so rules and users agree.

A verb reads the sections it owns (``data``, ``model``, ``train`` ...) from one mapping. That
mapping comes from a YAML file (``--config config/tiny.yaml``, what a user types) or from a JSON
string (``--config-json``, what a Snakemake rule passes: exactly the sections held in its
``params:``, so the rule reruns when, and only when, those sections change). Each verb validates
its sections into a typed object once, here at the edge, and names the bad key when it fails
(the checks themselves: ``vade.checks``).

The top level is checked here, for every verb alike: a section name outside ``SECTIONS`` (the
properties of ``workflow/schemas/config.schema.yaml``, which Snakemake checks) is refused,
naming it and the closest known one. Without this a misspelled ``samplr:`` would be ignored by
the verb that owns ``sampler`` and it would run on defaults.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from vade.checks import check_name

__all__ = ["SECTIONS", "VERB_SECTIONS", "add_config_arguments", "check_sections", "load_config", "read_yaml",
           "section"]

# The pipeline config's top-level sections (= the schema's properties; a test keeps them equal).
SECTIONS = frozenset({"name", "seed", "data", "models", "difficulty", "train", "experiments",
                      "sampler", "dapo", "diva", "evaluate", "report", "simulate", "tracking",
                      "cluster", "resources"})
# Sections a workflow rule hands one verb, beside the pipeline's: ``model`` is one entry of
# ``models`` (``vade build-model``'s input).
VERB_SECTIONS = frozenset({"model"})


class _NotAccepted(yaml.constructor.ConstructorError):
    """Valid YAML that this loader refuses on purpose (a merge key)."""


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    value silently, so a pasted block would override an edited one unseen)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":   # a key of its own would hide it
                raise _NotAccepted(
                    None, None, f"merge key '<<' (line {key_node.start_mark.line + 1}) is valid "
                    "YAML 1.1, but this loader does not accept merge keys (a merged key could "
                    "not be checked for being given twice): write the keys out",
                    key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' is given twice (lines {seen[key]} and {line})",
                    key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    """A YAML file's value, strictly: a duplicate key or invalid YAML is a ValueError naming the
    file, the key and the lines."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    try:
        return yaml.load(path.read_text(), Loader=_StrictLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        what = "is not accepted" if isinstance(exc, _NotAccepted) else "is not valid YAML"
        raise ValueError(f"{path} {what}: {exc.problem}{where}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML: {' '.join(str(exc).split())}") from None


def add_config_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add the mutually exclusive ``--config FILE`` / ``--config-json JSON`` options."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--config", metavar="FILE", help="YAML config (e.g. config/tiny.yaml)")
    group.add_argument("--config-json", metavar="JSON",
                       help="config sections as a JSON object (what workflow rules pass)")


def load_config(args: argparse.Namespace) -> dict[str, Any]:
    """The mapping named by ``--config`` or ``--config-json``; an empty dict if neither."""
    if getattr(args, "config_json", None):
        try:
            value = json.loads(args.config_json)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--config-json is not valid JSON: {exc}") from None
        source = "--config-json"
    elif getattr(args, "config", None):
        value = read_yaml(args.config)
        source = str(args.config)
    else:
        return {}
    if value is None:
        return {}
    return check_sections(value, source)


def check_sections(value: Any, source: str) -> dict[str, Any]:
    """``value`` when it is a mapping whose keys are all known sections (``SECTIONS``, and
    ``VERB_SECTIONS``); else a
    ValueError naming ``source`` and the first unknown key (with the closest known name)."""
    if not isinstance(value, dict):
        raise ValueError(f"{source} must hold a mapping at the top level, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in SECTIONS | VERB_SECTIONS)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(SECTIONS | VERB_SECTIONS), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"{source}: unknown top-level section '{unknown[0]}' ({hint}known: "
                         f"{', '.join(sorted(SECTIONS))})")
    if "name" in value:   # a path component of every output: checked before anything loads
        check_name("name", value["name"])
    return value


def section(config: Mapping[str, Any], name: str, *, required: bool = True) -> dict[str, Any]:
    """``config[name]`` as a dict; a clear error when it is missing or not a mapping. A section
    written but left empty (``train:`` or ``train: null``) is an error when it is required: it
    usually means its block was lost (an indentation slip), not that defaults were wanted."""
    if name not in config:
        if required:
            raise ValueError(f"config has no '{name}' section (keys: {sorted(config)})")
        return {}
    value = config[name]
    if value is None:
        if required:
            raise ValueError(f"config section '{name}' is empty (null); give its keys")
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"config key '{name}' must be a mapping, got {type(value).__name__}")
    return dict(value)
