"""``vade plan``: the whole grid's GPU-hours per stage and in total, with every assumption named
(``vade.cluster.bill``). Exit status 2 when the config's GPU layout is refused
(``resources.<stage>.gpu`` below a tensor-parallel size), an evaluation job cannot finish in
its runtime, or ``train.verl.max_prompt_length`` is below the built data's longest prompt
(``vade.cluster.prompt_length``)."""

from __future__ import annotations

import argparse

from vade.cluster.bill import make_bill
from vade.config_io import add_config_arguments, load_config

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    print(make_bill(config, getattr(args, "config", None) or "<config>").text())
    return 0
