"""``vade build-data``: build the configured dataset (synthetic or the paper's) into one folder.

Reads only the ``data`` section and the top-level ``seed``; the output folder is an explicit
argument (Snakemake passes ``data/<name>``). The folder appears whole or not at all.
"""

from __future__ import annotations

import argparse
import time

from vade.config_io import add_config_arguments, load_config

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder (e.g. data/tiny); replaced atomically")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="drop invalid source rows (counted per reason in the manifest) "
                             "instead of failing on the first one")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from vade.data.config import data_config_from_mapping

    cfg = data_config_from_mapping(load_config(args))
    start = time.perf_counter()
    if cfg.kind == "synthetic":
        from vade.data.synthetic import build_synthetic

        manifest = build_synthetic(cfg, args.out, progress=not args.no_progress)
    else:
        from vade.data.paper import build_paper

        manifest = build_paper(cfg, args.out, skip_invalid=args.skip_invalid,
                               progress=not args.no_progress)
    seconds = time.perf_counter() - start
    per_split = {s: sum(c.values()) for s, c in manifest["counts"].items()}
    print(f"vade build-data: {manifest['total_rows']} rows {per_split} -> {args.out} "
          f"in {seconds:.1f} s" + (f"; dropped invalid rows {manifest['invalid']}"
                                   if manifest.get("invalid") else ""))
    return 0
