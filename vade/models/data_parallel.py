"""Data parallelism over forked CPU processes, for the warm start.

Why: the tiny model's warm start is the demo's longest job and nothing else can run beside it
(every later stage needs its model), yet it is single-threaded (one torch thread: more threads
per process are several times slower as soon as the machine is shared). A second process that
takes half of every batch and sums gradients with it over gloo uses the idle core, at the cost
of one all-reduce of the gradients (a few MB) per step.

``DataParallel(n)`` forks ``n - 1`` copies of this process (same model, same optimizer state,
same RNG state, since they are forked), each with a rank; the caller's process is rank 0 and the
only one that leaves the ``with`` block: the others exit there (status 0, or 1 after printing
their error). A copy that fails makes rank 0 raise instead of waiting for it forever. The sum is
deterministic for a given number of processes, so a run is reproducible for (data, config, seed,
processes); a different number of processes gives the same function up to float rounding.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["DataParallel"]


class DataParallel:
    """``with DataParallel(n) as dp:`` ... ``dp.rank``, ``dp.size``, ``dp.sum_(tensors)``."""

    def __init__(self, size: int, *, timeout_s: float = 600.0) -> None:
        if size < 1:
            raise ValueError(f"DataParallel: size must be >= 1, got {size}")
        self.size = size
        self.rank = 0
        self.timeout_s = timeout_s
        self._children: list[int] = []
        self._group = None
        self._tmp: str | None = None

    def __enter__(self) -> Self:
        if self.size == 1:
            return self
        import torch  # lazy: torch (cpu/verl envs), seconds to load
        import torch.distributed as dist  # lazy: torch (cpu/verl envs), seconds to load

        self._tmp = tempfile.mkdtemp(prefix="vade-dp-")
        sys.stdout.flush()
        sys.stderr.flush()
        for rank in range(1, self.size):
            pid = os.fork()
            if pid == 0:  # the copy: its rank, no children of its own
                self.rank, self._children = rank, []
                break
            self._children.append(pid)
        torch.set_num_threads(1)
        store = dist.FileStore(os.path.join(self._tmp, "store"), self.size)
        self._group = dist.ProcessGroupGloo(store, self.rank, self.size,
                                            timedelta(seconds=self.timeout_s))
        return self

    def sum_(self, tensors: Sequence[torch.Tensor]) -> None:
        """Replace each tensor by its sum over the processes (one all-reduce for all of them)."""
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        if self.size == 1 or not tensors:
            return
        flat = torch.cat([t.reshape(-1) for t in tensors])
        self._group.allreduce([flat]).wait()
        offset = 0
        for t in tensors:
            t.copy_(flat[offset:offset + t.numel()].view_as(t))
            offset += t.numel()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.size == 1:
            return
        if self.rank:  # a copy never returns to the caller's code
            status = 0
            if exc is not None:
                traceback.print_exception(exc_type, exc, tb)
                status = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
        failed = []
        for pid in self._children:
            if exc is not None:  # the copies would wait for this process's next all-reduce
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            _, status = os.waitpid(pid, 0)
            if status:
                failed.append(pid)
        self._group = None
        shutil.rmtree(self._tmp, ignore_errors=True)
        if failed and exc is None:
            raise RuntimeError(f"data-parallel warm start: {len(failed)} of its {self.size} "
                               "processes failed (their error is printed above)")
