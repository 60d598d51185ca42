"""``vade train``: one RL run (GRPO/GSPO x vanilla/DAPO/VADE/ablations), local or on verl.

``--backend local`` is the single-process CPU trainer (``vade.train.local``); ``--backend verl``
hands the same config to ``vade.train.verl.launch`` (verl's trainer with the VADE sampler plugin).
CLI flags (what the Snakemake rule's wildcards fix) override the config's ``train`` keys. The
config is validated before anything is loaded; ``<out>/done.json`` is written last, atomically,
with the final metrics (the rule's output).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vade.config_io import add_config_arguments
from vade.methods import NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--backend", choices=("local", "verl"), default=None,
                        help="override train.backend")
    parser.add_argument("--algorithm", default=None, help="grpo | gspo (overrides train.algorithm)")
    parser.add_argument("--method", default=None,
                        help="a method of vade.methods (overrides train.method): "
                        + " | ".join(NAMES))
    parser.add_argument("--seed", type=int, default=None, help="override the config's seed")
    parser.add_argument("--data-dir", required=True, type=Path,
                        help="folder with train.parquet and val.parquet (data/<name>)")
    parser.add_argument("--model", required=True,
                        help="starting policy: save_pretrained folder or HF id")
    parser.add_argument("--difficulty", type=Path, default=None,
                        help="initial.parquet (sample_id, correct, rollouts); VADE-family methods")
    parser.add_argument("--out", required=True, type=Path,
                        help="run folder results/<name>/runs/<run_id>; its name is the run id")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from vade.config_io import load_config
    from vade.train.config import TrainConfig

    config = load_config(args)
    cfg = TrainConfig.from_config(config, backend=args.backend, algorithm=args.algorithm,
                                  method=args.method, seed=args.seed)
    if cfg.backend == "verl":
        try:
            from vade.train.verl import launch
        except ImportError as exc:
            raise ValueError(f"--backend verl needs vade.train.verl.launch, which cannot be "
                             f"imported here ({exc}); install the 'verl' extra or use "
                             "--backend local") from None
        return int(launch.run(args, cfg, config) or 0)

    from vade.train.local import RunPaths, train_local

    if not args.data_dir.is_dir():
        raise FileNotFoundError(f"--data-dir not found: {args.data_dir}")
    paths = RunPaths(data_dir=args.data_dir, model=str(args.model), out=args.out,
                     difficulty=args.difficulty)
    done = train_local(cfg, paths, progress=not args.no_progress)
    print(f"{paths.run_id}: {done['steps']} steps, {done['rollouts_cumulative']} rollouts, "
          f"mean effective ratio {done['effective_ratio_mean']:.3f}, "
          f"val acc {done['val_acc_final']}; wrote {args.out / 'done.json'}")
    return 0
