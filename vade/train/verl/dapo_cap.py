"""The paper's global cap on DAPO's generation, counted in generation batches across attempts.

Why a wrapper around the dataloader. verl-recipe's DAPO loop draws one dataloader batch per
generation batch, and its only global bound is the epoch loop: on resume it recomputes
``current_epoch = global_steps // len(dataloader)``, counting *training* steps, while DAPO spends
several generation batches per step. A run resumed after preemption therefore replays epochs it
already spent and can generate several times its budget. The count that matters (generation
batches drawn) is kept here, next to the dataloader state it belongs to, and saved inside verl's
own ``data.pt`` (``state_dict``), so a checkpoint and its count can never disagree. Before each
batch the wrapper asks whether the budget can pay for one more batch; when it cannot, iteration
ends and the recipe's loop ends normally (at any epoch, fresh or resumed).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

__all__ = ["BudgetedLoader", "generation_budget"]

_USED = "vade_gen_batches_used"


def generation_budget(*, train_batch_size: int, gen_batch_size: int, n: int, base_steps: int,
                      factor: float) -> tuple[int, int]:
    """(rollout budget, generation batches it pays for).

    The budget is ``factor`` x the rollouts of a non-filtering run of ``base_steps`` steps
    (``train.steps``) of ``train_batch_size x n``; a generation batch costs
    ``gen_batch_size x n`` and is only drawn whole.
    """
    for name, value in (("train_batch_size", train_batch_size),
                        ("gen_batch_size", gen_batch_size), ("n", n),
                        ("base_steps", base_steps)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not factor >= 1.0:
        raise ValueError(f"max_rollout_factor must be >= 1, got {factor!r}")
    budget = math.floor(float(factor) * int(base_steps) * int(train_batch_size) * int(n) + 1e-9)
    return budget, budget // (int(gen_batch_size) * int(n))


class BudgetedLoader:
    """verl's train dataloader, stopped once ``limit`` generation batches have been drawn.

    ``used`` counts batches handed out over the whole run (restored from the checkpoint);
    ``None`` after loading a checkpoint written without the count (the trainer then counts from
    the run's history). Everything else (``sampler``, ``dataset``, ...) is the wrapped loader's.
    """

    def __init__(self, loader: Any, limit: int) -> None:
        if int(limit) < 0:
            raise ValueError(f"generation batch limit must be >= 0, got {limit}")
        self.loader = loader
        self.limit = int(limit)
        self.used: int | None = 0

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not yet set (copy/pickle): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __len__(self) -> int:
        return len(self.loader)

    @property
    def exhausted(self) -> bool:
        return self.used is not None and self.used >= self.limit

    def __iter__(self) -> Iterator[Any]:
        if self.used is None:
            raise RuntimeError("generation batches used is unknown: set it after loading a "
                               "checkpoint without the count")
        if self.exhausted:
            return
        inner = iter(self.loader)
        while not self.exhausted:  # checked before drawing: a batch is only drawn if paid for
            try:
                batch = next(inner)
            except StopIteration:
                return
            self.used += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        return {_USED: self.used, "loader": self.loader.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if isinstance(state, dict) and _USED in state:
            self.loader.load_state_dict(state["loader"])
            self.used = None if state[_USED] is None else int(state[_USED])
        else:  # a checkpoint from before the cap was counted here
            self.loader.load_state_dict(state)
            self.used = None
