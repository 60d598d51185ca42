"""Checks of sampler shapes and restored states (value checks: ``vade.checks``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["check_sizes", "check_state"]


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
