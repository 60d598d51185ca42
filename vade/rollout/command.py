"""``vade init-difficulty``: G rollouts per training sample with the base model (Algorithm 1,
lines 1-4), verified rewards, initial alpha/beta for the sampler.

    vade init-difficulty --config config/tiny.yaml --data data/tiny/train.parquet \\
        --model results/tiny/models/base --out results/tiny/difficulty

Reads the ``difficulty`` section and ``seed``. Writes ``initial.parquet``, ``difficulty.duckdb``
(table ``initial_difficulty``) and ``summary.json``; prints the pass@G histogram.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from vade.config_io import add_config_arguments, load_config, section
from vade.config_schema import check
from vade.content_digest import content_digest
from vade.data.records import read_examples
from vade.models.build import resolve_model_path
from vade.rollout.difficulty import (
    difficulty_config_from_section,
    format_histogram,
    initial_difficulty,
    write_difficulty,
)
from vade.rollout.engine import make_engine


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--data", required=True, metavar="PARQUET",
                        help="training split (data/<name>/train.parquet)")
    parser.add_argument("--model", required=True, metavar="DIR",
                        help="base model folder from `vade build-model`")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder (results/<name>/difficulty)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def resume_key(model: str, data: str | Path, out: str | Path) -> dict[str, str]:
    """What written chunks depend on besides the config and seed: the model's and the data's
    content (weights, tokenizer and config files), not their paths. The digests are cached in
    ``<out>/.input-digests.json`` by (size, mtime, inode), so a rerun does not hash 15 GB of
    weights again. A model given by hub name (no local folder) is keyed by its name."""
    cache = Path(out) / ".input-digests.json"
    model_id = (content_digest(model, cache) if Path(model).exists() else f"name:{model}")
    return {"model": model_id, "data": content_digest(data, cache)}


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    config = load_config(args)
    cfg = difficulty_config_from_section(section(config, "difficulty", required=False))
    seed = config.get("seed", 0)
    check(seed, "seed")
    model_path = resolve_model_path(args.model)
    examples = read_examples(args.data)  # validates rows before the model loads
    engine = make_engine(cfg.engine, model_path, batch_size=cfg.batch_size,
                         threads=cfg.threads or None,
                         **({"tensor_parallel_size": cfg.tensor_parallel_size}
                            if cfg.engine == "vllm" else {}))
    if hasattr(engine, "groups"):
        print(f"{len(engine.groups)} engines of {cfg.tensor_parallel_size} GPU(s) each: "
              + " | ".join(",".join(g) for g in engine.groups), flush=True)
    chunks = Path(args.out) / "chunks"   # a killed job restarts after its last written chunk
    try:
        result = initial_difficulty(engine, examples, cfg, seed=seed,
                                    progress=not args.no_progress, resume_dir=chunks,
                                    resume_key=resume_key(model_path, args.data, args.out))
    finally:
        if hasattr(engine, "close"):
            engine.close()
    if result["chunks_resumed"]:
        print(f"resumed {result['chunks_resumed']} written chunk(s) from {chunks}")
    summary = write_difficulty(args.out, result, cfg=cfg,
                               extra={"model": str(args.model), "data": str(args.data),
                                      "seed": seed})
    shutil.rmtree(chunks, ignore_errors=True)
    print(format_histogram(summary[f"pass_at_{cfg.rollouts}_histogram"]))
    print(f"{summary['items']} prompts x {cfg.rollouts} rollouts in {summary['seconds']:.1f} s "
          f"({summary['prompts_per_second']:.1f} prompts/s), mean accuracy "
          f"{summary['mean_accuracy']:.3f}")
    return 0
