"""How every ``vade`` verb receives its configuration: one reader, so rules and users agree.

A verb reads the sections it owns (``data``, ``model``, ``train`` ...) from one mapping. That
mapping comes from a YAML file (``--config config/tiny.yaml``, what a user types) or from a JSON
string (``--config-json``, what a Snakemake rule passes: exactly the sections held in its
``params:``, so the rule reruns when, and only when, those sections change). Each verb validates
its sections into a typed object once, here at the edge, and names the bad key when it fails
(the checks themselves: ``vade.checks``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["add_config_arguments", "load_config", "section"]


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
        path = Path(args.config)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        try:
            value = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ValueError(f"{path} is not valid YAML: {exc}") from None
        source = str(path)
    else:
        return {}
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{source} must hold a mapping at the top level, got {type(value).__name__}")
    return value


def section(config: Mapping[str, Any], name: str, *, required: bool = True) -> dict[str, Any]:
    """``config[name]`` as a dict; a clear error when it is missing or not a mapping."""
    if name not in config:
        if required:
            raise ValueError(f"config has no '{name}' section (keys: {sorted(config)})")
        return {}
    value = config[name]
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"config key '{name}' must be a mapping, got {type(value).__name__}")
    return dict(value)
