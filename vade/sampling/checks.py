"""Checks shared by samplers and the simulator: numbers in range, sizes, restored states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["check_number", "check_sizes", "check_state"]


def check_sizes(n_samples: int, batch_size: int) -> None:
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if batch_size > n_samples:
        raise ValueError(
            f"batch_size = {batch_size} exceeds n_samples = {n_samples}: "
            "a batch holds distinct samples"
        )


def check_state(state: Mapping[str, Any], version: int, config: Mapping[str, Any]) -> None:
    """Refuse a ``state_dict`` of another format or of a differently configured sampler."""
    if state.get("version") != version:
        raise ValueError(f"unsupported sampler state version {state.get('version')!r}")
    saved = state.get("config", {})
    for key, value in config.items():
        if saved.get(key) != value:
            raise ValueError(
                f"sampler state has {key} = {saved.get(key)!r}, but this sampler "
                f"was built with {key} = {value!r}"
            )


def check_number(name: str, value: Any, lo: float, hi: float, *, lo_open: bool = False,
                 integer: bool = False) -> None:
    """Raise ValueError naming ``name`` unless lo <= value <= hi (lo < value if ``lo_open``)."""
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(value, (int, np.integer)) if integer else isinstance(
        value, (int, float, np.integer, np.floating))
    if isinstance(value, bool) or not ok_type or not np.isfinite(value):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if value < lo or value > hi or (lo_open and value == lo):
        left = "(" if lo_open else "["
        raise ValueError(f"{name} = {value!r} is out of range {left}{lo}, {hi}]")
