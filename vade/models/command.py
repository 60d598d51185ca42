"""``vade build-model``: build and warm-start the tiny policy, or record a pretrained one.

    vade build-model --config config/tiny.yaml --warmstart data/tiny/warmstart.parquet \\
        --out results/tiny/models/base

Reads the ``model`` section and ``seed``; writes ``save_pretrained`` files plus
``vade_model.json`` (size, warm-start timing, held-out accuracy) into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os

from vade.config_io import add_config_arguments, load_config, section
from vade.config_schema import check
from vade.models.build import build_base_model
from vade.models.config import model_config_from_section


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--warmstart", metavar="PARQUET",
                        help="warm-start split (data/<name>/warmstart.parquet); tiny models only")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder (results/<name>/models/base)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--cache", metavar="DIR",
                        help="reuse a tiny build with the same config, seed, warm-start split "
                             "and code from DIR, and keep new ones there (default: "
                             "$VADE_MODEL_CACHE; neither: no cache)")


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    config = load_config(args)
    cfg = model_config_from_section(section(config, "model"))
    seed = config.get("seed", 0)
    check(seed, "seed")
    meta = build_base_model(cfg, seed, args.out, args.warmstart, progress=not args.no_progress,
                            cache=args.cache or os.environ.get("VADE_MODEL_CACHE") or None)
    summary = {k: v for k, v in meta.items() if k != "config"}
    print(json.dumps(summary, indent=2))
    return 0
