"""Seeded randomness for builds: per-task streams, subsampling order and the stratified split.

Every random choice draws from ``rng_for(seed, *names)``: a stream keyed by the seed and stable
names (task, split), never by position in a list. Adding a task or changing one count therefore
leaves every other task's rows and split untouched, and the same seed gives the same dataset.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = ["rng_for", "stratified_split"]

T = TypeVar("T")


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator for (seed, names): independent streams, stable across Python runs."""
    words = [int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF]
    for name in names:
        digest = hashlib.sha256(name.encode()).digest()
        words.extend(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))
    return np.random.default_rng(np.random.SeedSequence(words))


def stratified_split(groups: dict[str, Sequence[T]], fraction: float, seed: int
                     ) -> tuple[list[T], list[T]]:
    """(train, val): ``floor(fraction * n + 0.5)`` of each group to val, then both orders shuffled.

    Stratifying by task keeps every task's share equal in both splits (a random split of a small
    task could leave it out of validation). Groups are visited in sorted order; each group's
    shuffle has its own stream, and the final interleaving one more, all keyed by ``seed``.
    """
    train: list[T] = []
    val: list[T] = []
    for name in sorted(groups):
        rows = list(groups[name])
        order = rng_for(seed, "split", name).permutation(len(rows))
        n_val = int(np.floor(fraction * len(rows) + 0.5))  # half up, not banker's
        val.extend(rows[i] for i in order[:n_val])
        train.extend(rows[i] for i in order[n_val:])
    train = [train[i] for i in rng_for(seed, "order", "train").permutation(len(train))]
    val = [val[i] for i in rng_for(seed, "order", "val").permutation(len(val))]
    return train, val
