"""The sampler's own state files: one per training step, written after that step's update.

Why they exist: verl 0.7.1 saves a checkpoint (``data.pt`` with the dataloader's and hence the
sampler's ``state_dict``) BEFORE it calls ``sampler.update(batch)`` in the same step. A run resumed
from the checkpoint of step k would therefore restart from a posterior that lacks step k's
observations, although the policy in that checkpoint was trained on them. After every update the
sampler writes ``step_<k>.pkl`` here; on resume ``load_state_dict`` looks for the file of the
checkpoint's pending step and continues from the posterior after it.

Files are written to a temporary name and renamed (never half-written). Retention keeps the
newest ``KEEP_LATEST`` files plus every ``keep_every``-th step (set to verl's ``save_freq``, the
steps a checkpoint can exist for); ``keep_every = 0`` keeps all. They are pickles of plain
numpy/dict state the sampler wrote itself (never load files from elsewhere).
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any

__all__ = ["KEEP_LATEST", "StateFiles", "discard_after"]

KEEP_LATEST = 2
_NAME = re.compile(r"^step_(\d+)\.pkl$")


class StateFiles:
    def __init__(self, directory: str | Path, keep_every: int = 0) -> None:
        self.dir = Path(directory)
        self.keep_every = int(keep_every)

    def path(self, step: int) -> Path:
        return self.dir / f"step_{int(step):08d}.pkl"

    def steps(self) -> list[int]:
        if not self.dir.is_dir():
            return []
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := _NAME.match(p.name)))

    def write(self, step: int, state: dict[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        final = self.path(step)
        tmp = final.with_name(final.name + f".tmp{os.getpid()}")
        with open(tmp, "wb") as fh:
            pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        self._prune(step)
        return final

    def read(self, step: int) -> dict[str, Any] | None:
        path = self.path(step)
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            return pickle.load(fh)

    def _prune(self, newest: int) -> None:
        steps = self.steps()
        latest = set(steps[-KEEP_LATEST:])
        for step in steps:
            if step in latest or step > newest:
                continue
            if self.keep_every > 0 and step % self.keep_every != 0:
                self.path(step).unlink(missing_ok=True)


def discard_after(files: StateFiles, step: int) -> None:
    """Delete files of steps after ``step`` (left by an attempt that ran past the checkpoint)."""
    for later in files.steps():
        if later > step:
            files.path(later).unlink(missing_ok=True)
