"""``vade demo``: what runs end to end on this machine today (grows with the pipeline)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="reports/demo")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
