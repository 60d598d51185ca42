"""The ``vade`` command: one verb per pipeline stage, each implemented in its own module.

Every Snakemake rule calls a verb here. A verb's module is imported only when that verb runs, so
``vade sql`` never pays for (or needs) torch, verl or lmms-eval. Each module provides
``add_arguments(parser)`` and ``run(args) -> int``; heavy third-party imports (torch, vLLM) stay
inside functions. The parser imports the module of the verb being run only (``build_parser``).
"""

from __future__ import annotations

import argparse
import difflib
import errno
import importlib
import sys
from collections.abc import Sequence

from vade import __version__
from vade.console import log_friendly_output

# verb -> (module, one-line help), in pipeline order (the stages a Snakemake run calls), then the
# tools; nested verbs (``vade bench sampler``) live in their module.
COMMANDS: dict[str, tuple[str, str]] = {
    "build-data": ("vade.data.command", "build the training data (synthetic or the paper's set)"),
    "build-model": ("vade.models.command",
                    "build and warm-start the tiny policy, or point to a pretrained one"),
    "init-difficulty": ("vade.rollout.command",
                        "G rollouts per training sample: the sampler's initial alpha/beta"),
    "train": ("vade.train.command", "one RL run (GRPO/GSPO, vanilla/DAPO/VADE), local CPU or verl"),
    "evaluate": ("vade.eval.command", "average@k of a checkpoint with lmms-eval"),
    "report": ("vade.report.command",
               "tables, figures and headline as HTML (figures embedded), Markdown and PNG"),
    "simulate": ("vade.simulate.command", "compare samplers on a simulated bandit"),
    "build-variants": ("vade.data.variant_texts",
                       "tool: DIVA-GRPO hint steps and rephrasings of the paper's data (LLM)"),
    "judge": ("vade.eval.judge_command", "tool: serve or wait for the LLM judge endpoint"),
    "results": ("vade.report.results_command",
                "tool: a study's per-run table (docs/data) and the results blocks computed from it"),
    "demo": ("vade.demo", "tool: the samplers on a simulated environment (a minute, no torch)"),
    "sql": ("vade.store.sql_command", "tool: run a read-only SQL query on run histories"),
    "bench": ("vade.bench.command", "tool: measure speed and memory (prints a table, writes JSON)"),
    "plan": ("vade.cluster.plan_command",
             "tool: the whole grid's GPU-hours per stage and in total, with its assumptions"),
    "prefetch": ("vade.cluster.prefetch_command",
                 "tool: stage every hub asset of a config into one offline cache + manifest"),
    "preflight": ("vade.cluster.preflight_command",
                  "tool: a GPU job's first seconds: env, GPUs, assets, disk, SLURM profile"),
}
DESCRIPTION = ("The vade command: one verb per pipeline stage (build-data ... simulate, in the "
               "order a run calls them), then the tools.")


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every verb, or with ``only`` the arguments of that verb alone (the others
    keep their one-line help): ``vade sql`` and ``vade --help`` import no other verb's module."""
    parser = argparse.ArgumentParser(prog="vade", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"vade {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        if only is None or only == name:
            importlib.import_module(module).add_arguments(p)
    return parser


def _innermost(parser: argparse.ArgumentParser,
               args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (nested) verb that ``args`` chose: ``vade bench sampler`` -> sampler's.
    argparse keeps sub-parsers in its private ``_actions``; there is no public way to them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _innermost(action.choices[chosen], args)
    return parser


def _unrecognized(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """argparse's message for arguments ``parser`` does not know, with the closest option
    (``--methd``: did you mean --method?)."""
    known = [o for action in parser._actions for o in action.option_strings]
    hints = [close[0] for x in extra if x.startswith("-")
             and (close := difflib.get_close_matches(x.split("=")[0], known, n=1))]
    return (f"unrecognized arguments: {' '.join(extra)}"
            + (f" (did you mean {', '.join(hints)}?)" if hints else ""))


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=next((w for w in words if w in COMMANDS), ""))
    args, extra = parser.parse_known_args(words)
    if extra:  # the verb's usage, not the top level's: the verb is what the user got wrong
        verb = _innermost(parser, args)
        verb.error(_unrecognized(verb, extra))
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
