"""The experiment grid: which training runs a config asks for, and how long each one trains.

One expansion of ``experiments.grid`` for every reader (the workflow's jobs, the bill, the
report's expected runs, the prefetch and preflight model lists), so they can never disagree on the
runs or their order. A grid block may set ``steps`` for its cells: a study can run DAPO on to its
plateau while the peers beside it keep the shared ``train.steps``, in one grid and one report;
and ``seeds`` (default: ``experiments.seeds``): the methods a claim rests on get more seeds.
Standard library only (and the method table): the Snakefile imports it before any environment
exists. ``parse_run_id`` reads a run id back into its parts (the report, the evaluation runner).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from vade.methods import NAMES

__all__ = ["Cell", "RunKey", "cells", "parse_run_id", "run_config"]


@dataclass(frozen=True)
class Cell:
    """One training run; ``steps`` is its block's override of ``train.steps`` (None: none)."""

    model: str
    algorithm: str
    method: str
    seed: int
    steps: int | None = None

    @property
    def run_id(self) -> str:
        return f"{self.model}-{self.algorithm}-{self.method}-s{self.seed}"


def cells(config: Mapping[str, Any]) -> list[Cell]:
    """Every run of the grid, in block order, each once.

    A run listed by two blocks is one run; if the blocks give it different ``steps`` the config
    is refused, naming the run and both blocks (which length was meant cannot be guessed)."""
    exp = config.get("experiments") or {}
    found: dict[tuple[str, str, str, int], tuple[Cell, int]] = {}
    for index, block in enumerate(exp.get("grid") or []):
        try:
            steps = block.get("steps")
            seeds = block.get("seeds") or exp.get("seeds") or [0]  # a block may add seeds
            product = [(m, a, meth, int(s)) for m in block["models"]
                       for a in block["algorithms"] for meth in block["methods"]
                       for s in seeds]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"experiments.grid[{index}] is malformed: missing or bad "
                             f"{exc}") from None
        for key in product:
            cell = Cell(*key, steps=steps)
            if key not in found:
                found[key] = (cell, index)
            elif found[key][0].steps != steps:
                first, at = found[key]
                raise ValueError(
                    f"experiments.grid[{at}] and experiments.grid[{index}] both list "
                    f"{cell.run_id} with different steps ({first.steps} and {steps}): "
                    "list each run in one block, or give both blocks the same steps")
    return [cell for cell, _ in found.values()]


def run_config(config: Mapping[str, Any], cell: Cell) -> dict[str, Any]:
    """The config one run trains with: ``train.steps`` replaced by its block's ``steps``."""
    if cell.steps is None:
        return dict(config)
    return {**config, "train": {**(config.get("train") or {}), "steps": cell.steps}}


_RUN_ID = re.compile(r"^(?P<model>.+)-(?P<algorithm>grpo|gspo)-(?P<method>"
                     + "|".join(re.escape(m) for m in NAMES) + r")-s(?P<seed>\d+)$")


@dataclass(frozen=True, order=True)
class RunKey:
    """A run id's parts: ``<model>-<algorithm>-<method>-s<seed>`` or ``<model>-base``."""

    model: str
    algorithm: str  # "" for a base model
    method: str     # "base" for a base model
    seed: int       # -1 for a base model
    run_id: str


def parse_run_id(run_id: str) -> RunKey:
    m = _RUN_ID.match(run_id)
    if m:
        return RunKey(m["model"], m["algorithm"], m["method"], int(m["seed"]), run_id)
    if run_id.endswith("-base") and len(run_id) > len("-base"):
        return RunKey(run_id[: -len("-base")], "", "base", -1, run_id)
    raise ValueError(f"run id {run_id!r} is neither <model>-<grpo|gspo>-<method>-s<seed> "
                     f"(method one of {NAMES}) nor <model>-base")
