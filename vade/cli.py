"""The ``vade`` command: one verb per pipeline stage, each implemented in its own module.

Every Snakemake rule calls a verb here. A verb's module is imported only when that verb runs, so
``vade sql`` never pays for (or needs) torch, verl or lmms-eval. Each module provides
``add_arguments(parser)`` and ``run(args) -> int``, and keeps heavy imports inside ``run``: the
parser imports every command module to build its help.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
from collections.abc import Sequence

from vade import __version__
from vade.console import log_friendly_output

# verb -> (module, one-line help); nested verbs (``vade bench sampler``) live in their module.
COMMANDS: dict[str, tuple[str, str]] = {
    "sql": ("vade.store.sql_command", "run a read-only SQL query on run histories"),
    "build-data": ("vade.data.command", "build the training data (synthetic or the paper's set)"),
    "build-variants": ("vade.data.variant_texts",
                       "DIVA-GRPO hint steps and rephrasings of the paper's data, from an LLM"),
    "bench": ("vade.bench.command", "measure speed and memory (prints a table, writes JSON)"),
    "simulate": ("vade.simulate.command", "compare samplers on a simulated bandit"),
    "demo": ("vade.demo", "a short end-to-end demonstration on this machine"),
    "evaluate": ("vade.eval.command", "average@k of a checkpoint with lmms-eval"),
    "judge": ("vade.eval.judge_command", "serve or wait for the LLM judge endpoint"),
    "report": ("vade.report.command", "tables, figures and headline as Markdown + PNG"),
    "build-model": ("vade.models.command",
                    "build and warm-start the tiny policy, or point to a pretrained one"),
    "init-difficulty": ("vade.rollout.command",
                        "G rollouts per training sample: the sampler's initial alpha/beta"),
    "train": ("vade.train.command", "one RL run (GRPO/GSPO, vanilla/DAPO/VADE), local CPU or verl"),
    "preflight": ("vade.cluster.preflight_command",
                  "a GPU job's first seconds: env, GPUs, assets, disk, SLURM profile"),
    "prefetch": ("vade.cluster.prefetch_command",
                 "stage every hub asset of a config into one offline cache, with a manifest"),
    "plan": ("vade.cluster.plan_command",
             "the whole grid's GPU-hours per stage and in total, with its assumptions"),
}


class UserError(Exception):
    """An error in the user's input: printed as one line, exit status 2, no traceback."""


# What the machine refuses (a full disk or quota, a read-only or foreign folder, a failed write):
# one line naming the path, like bad input, not a traceback (issue 49, items 7 and 8)
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                         errno.EIO})


def disk_error_line(exc: OSError) -> str:
    """``cannot write <path>: <reason>; free space or make it writable, then rerun ...``"""
    where = f" {exc.filename}" if exc.filename else ""
    return (f"cannot write{where}: {exc.strerror or exc}; free space or make the folder "
            "writable, then rerun (what was written before is kept)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vade", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"vade {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module = importlib.import_module(args._module)
    try:
        with log_friendly_output():  # progress bars as lines when stderr is a log file
            return int(module.run(args) or 0)
    except (UserError, ValueError, FileNotFoundError) as exc:
        print(f"vade {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        print(f"vade {args.command}: error: {disk_error_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
