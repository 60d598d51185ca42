"""``vade train``: one RL run (GRPO/GSPO x vanilla/DAPO/VADE/ablations), local or on verl.

The config is parsed once into a ``TrainConfig``; ``train.backend`` names the module that runs it
(``vade.train.config.BACKENDS``: ``local`` -> ``vade.train.local.command``, the single-process CPU
trainer; ``verl`` -> ``vade.train.verl.launch``, verl's trainer with the VADE sampler plugin), each
with ``run(args, cfg, config)``.
CLI flags (what the Snakemake rule's wildcards fix) override the config's ``train`` keys. The
config is validated before anything is loaded; ``<out>/done.json`` is written last, atomically,
with the final metrics (the rule's output).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from vade.config_io import add_config_arguments, load_config, section
from vade.console import log_friendly_output
from vade.methods import NAMES
from vade.train.config import BACKENDS, TrainConfig
from vade.train.run_folder import RunLock


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--backend", choices=tuple(BACKENDS), default=None,
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
    parser.add_argument("--log", type=Path, default=None, metavar="FILE",
                        help="write this command's output to FILE, opened (and emptied) only "
                        "once the run folder's lock is held: a second process refused beside a "
                        "running one leaves that one's log alone (the workflow's rule uses it "
                        "instead of `> {log}`)")


def run(args: argparse.Namespace) -> int:
    """With ``--log``: take the run folder's lock, then send the output to the log (issue 49,
    item 6: ``> {log}`` in the rule emptied a running job's log before the second trainer was
    refused); the refusal goes to this process's own stderr."""
    if args.log is None:
        return _run(args)
    with RunLock(args.out, hand_down=True):
        _redirect_output(args.log)
        with log_friendly_output():
            return _run(args)


def _redirect_output(log: Path) -> None:
    """Point this process's stdout and stderr (file descriptors 1 and 2, so subprocesses too)
    at ``log``, emptied."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def _run(args: argparse.Namespace) -> int:

    config = load_config(args)
    train = section(config, "train")  # required: an empty or lost block must not mean defaults
    if args.backend is None and "backend" not in train:
        raise ValueError("train.backend is required (local or verl), or give --backend")
    cfg = TrainConfig.from_config(config, backend=args.backend, algorithm=args.algorithm,
                                  method=args.method, seed=args.seed)
    try:
        backend = importlib.import_module(BACKENDS[cfg.backend])
    except ImportError as exc:
        raise ValueError(f"train.backend = {cfg.backend} needs {BACKENDS[cfg.backend]}, which "
                         f"cannot be imported here ({exc}); install its extra (pyproject.toml) "
                         "or use --backend local") from None
    return int(backend.run(args, cfg, config) or 0)
