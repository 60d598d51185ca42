"""Checkpoints of the local trainer: everything a resumed run needs to continue bit for bit.

A checkpoint holds the policy weights, the optimizer state, the sampler's ``state_dict`` (its
posterior and RNGs), the python/numpy/torch RNG states, the step and the cumulative rollouts.
The generation engine needs no state of its own: its seed for step t, generation batch k is
derived from (run seed, t, k), so a resumed step draws the same rollouts.

Files are ``step_<t>.pt``, written to a temporary name and renamed (``os.replace`` is atomic on
POSIX), so a kill during the write leaves the previous checkpoint intact and never a truncated
one under the final name. The newest ``keep`` checkpoints are kept.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["capture_rng", "latest_checkpoint", "load_checkpoint", "restore_rng",
           "save_checkpoint"]

_NAME = re.compile(r"^step_(\d+)\.pt$")


def capture_rng() -> dict[str, Any]:
    """The global RNG states a training step may touch (python, numpy legacy, torch CPU)."""
    import torch

    return {"python": random.getstate(), "numpy": np.random.get_state(),
            "torch": torch.get_rng_state()}


def restore_rng(state: dict[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def _checkpoints(directory: Path) -> list[tuple[int, Path]]:
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _NAME.match(p.name))]
    return sorted(found)


def latest_checkpoint(directory: str | Path) -> Path | None:
    """The newest complete checkpoint in ``directory`` (temporary files are ignored), or None."""
    found = _checkpoints(Path(directory))
    return found[-1][1] if found else None


def save_checkpoint(directory: str | Path, step: int, state: dict[str, Any],
                    keep: int = 2) -> Path:
    """Write ``state`` as ``step_<step>.pt`` atomically; prune all but the newest ``keep``."""
    import torch

    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step_{int(step):08d}.pt"
    tmp = directory / f".{final.name}.tmp-{os.getpid()}"
    torch.save({**state, "step": int(step)}, tmp)
    os.replace(tmp, final)
    for _, old in _checkpoints(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return final


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (our own file: full unpickling)."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a corrupt file names itself
        raise ValueError(f"checkpoint {path} cannot be read: {exc}") from exc
