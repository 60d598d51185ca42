"""A sampler's sizes and saved state: the checks of both, and the part of ``state_dict`` that
the drawing samplers (VADE's and the peers') share (value checks of a config: ``vade.checks``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["check_sizes", "check_state", "saved_state"]


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


def saved_state(version: int, sampler: Any, **own: Any) -> dict[str, Any]:
    """``state_dict`` of a sampler that draws with scores: version, config and step, then its
    ``own`` entries (in order), then the last selection that the next ``observe`` reads."""
    sel, p, gain = sampler._last
    return {"version": version, "config": sampler.config, "step": sampler.step, **own,
            "last_selection": {"indices": sel.copy(), "p": p.copy(), "gain": gain.copy()}}
