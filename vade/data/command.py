"""``vade build-data``: build the configured dataset (synthetic or the paper's) into one folder.

Reads the ``data`` section, the top-level ``seed``, the revision pins and the ``models``
section (whose processors count the prompts' tokens: ``vade.data.prompt_tokens``); the output
folder is an explicit argument (Snakemake passes ``data/<name>``). The folder appears whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vade.config_io import add_config_arguments, load_config
from vade.data.config import data_config_from_mapping
from vade.data.paper import build_paper
from vade.data.probe import format_probe, probe_sources
from vade.data.prompt_tokens import prompt_token_entries
from vade.data.synthetic import build_synthetic
from vade.job.config import ClusterConfig
from vade.job.revisions import pinned_revisions

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--out", metavar="DIR",
                        help="output folder (e.g. data/tiny); replaced atomically (required "
                             "unless --probe)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="paper: accept a source whatever its parse rate (invalid rows are "
                             "always dropped and counted in the manifest)")
    parser.add_argument("--probe", type=int, metavar="N",
                        help="paper: parse the first N rows of every source and report the parse "
                             "rate and failures per source; builds nothing (exit 1 if a source "
                             "is below data.paper.min_parse_rate)")
    parser.add_argument("--probe-json", metavar="FILE", help="also write the probe report here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def prompt_counter(config: Mapping[str, Any]
                   ) -> Callable[[list[Path]], dict[str, Any]] | None:
    """What records each model's prompt lengths (``vade.data.prompt_tokens``), from the
    config's ``models`` section; None without one. The processor is looked up in the hub
    cache the job was given (``HF_HOME``, as the workflow sets it), else in
    ``cluster.cache_dir`` (``vade build-data --config`` by hand), at the pinned revisions."""
    models = config.get("models") or {}
    if not models:
        return None
    cache = None if os.environ.get("HF_HOME") else ClusterConfig.from_config(config).cache_dir
    revisions = pinned_revisions(config)
    return lambda files: prompt_token_entries(files, models, revisions, cache)


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    cfg = data_config_from_mapping(config)
    if args.probe is not None:
        return _probe(cfg, args)
    if not args.out:
        raise ValueError("vade build-data needs --out DIR (or --probe N)")
    start = time.perf_counter()
    if cfg.kind == "synthetic":
        manifest = build_synthetic(cfg, args.out, progress=not args.no_progress,
                                   prompt_tokens=prompt_counter(config))
    else:
        manifest = build_paper(cfg, args.out, skip_invalid=args.skip_invalid,
                               progress=not args.no_progress, prompt_tokens=prompt_counter(config))
    seconds = time.perf_counter() - start
    per_split = {s: sum(c.values()) for s, c in manifest["counts"].items()}
    print(f"vade build-data: {manifest['total_rows']} rows {per_split} -> {args.out} "
          f"in {seconds:.1f} s" + (f"; dropped invalid rows {manifest['invalid']}"
                                   if manifest.get("invalid") else ""))
    for model, e in (manifest.get("prompt_tokens") or {}).items():
        print(f"prompt tokens with {model}'s processor: " + (
            f"longest {e['max']:,}, 99th percentile {e['p99']:,}, mean {e['mean']:,} "
            f"({e['rows']:,} train and val rows)" if e.get("max") is not None else
            f"not counted: {e['reason']}"))
    return 0


def _probe(cfg: Any, args: argparse.Namespace) -> int:
    if cfg.kind != "paper":
        raise ValueError("vade build-data --probe reads the paper's sources: data.kind must be "
                         "'paper'")
    if args.probe < 1:
        raise ValueError(f"--probe must be a positive row count, got {args.probe}")
    result = probe_sources(cfg, args.probe)
    print(format_probe(result))
    if args.probe_json:
        with open(args.probe_json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    low = [t for t, r in result["tasks"].items() if not r["ok"]]
    if low:
        print(f"vade build-data --probe: below data.paper.min_parse_rate "
              f"{cfg.paper.min_parse_rate:.0%}: {', '.join(low)}")
    return 1 if low else 0
