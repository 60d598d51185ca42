"""``vade prefetch --config C``: every hub asset the config names, staged into
``cluster.cache_dir`` with a manifest, on a node with network (or from ``cluster.local_assets``);
GPU jobs then run offline against it (``vade.cluster.prefetch``). The workflow runs it once, as
a local rule, before any GPU job."""

from __future__ import annotations

import argparse
import json
import os

from vade.cluster.prefetch import OFFLINE_VARS, prefetch
from vade.cluster.preflight_command import CONFIG_ENV
from vade.config_io import add_config_arguments, load_config

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, required=False)


def run(args: argparse.Namespace) -> int:
    config = load_config(args) or json.loads(os.environ.get(CONFIG_ENV) or "{}")
    if not config:
        raise ValueError(f"vade prefetch needs --config, --config-json or ${CONFIG_ENV}")
    for var in OFFLINE_VARS:  # the workflow sets them for the jobs; this one must download
        os.environ.pop(var, None)

    manifest = prefetch(config)
    total = sum(a["bytes"] for a in manifest["assets"])
    print(f"{len(manifest['assets'])} assets, {total / 1e9:.2f} GB in {manifest['cache_dir']}")
    return 0
