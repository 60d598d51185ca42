"""The simulator's configuration: one YAML file, validated once, with errors naming the key.

Layout (``config/simulate.yaml`` holds the documented defaults)::

    dynamics: {n_samples, group_size, learning_rate, ...}   # DynamicsParams
    run: {batch_size, steps, dapo_cap, initial_rollouts}     # RunSettings
    seeds: 3                                                 # seeds 0 .. seeds-1
    methods: [vanilla, dapo, vade, ...]
    options: {vade: {lambda1: 0.2}, mopps: {decay: 0.5}}     # per-method sampler options
    target_fraction: 0.995                                   # of DAPO's best mean pass rate
    sweep: {method: vade, lambda1: [...], lambda2: [...], seeds: 1}

Every key is optional; a missing key takes the default of the dataclass below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from vade.checks import check_number
from vade.config_io import read_yaml
from vade.sampling import SAMPLER_OPTIONS, make_sampler
from vade.sampling.peers import PEERS
from vade.simulate.dynamics import DynamicsParams
from vade.simulate.runner import METHODS, VADE_FAMILY, RunSettings, method_options

__all__ = ["SimConfig", "SweepConfig", "load_config"]

# the sweep's methods: the VADE family rows whose decay is the two-scale one (vade.methods)
TWO_SCALE = tuple(m for m in VADE_FAMILY
                  if (SAMPLER_OPTIONS[m] or {}).get("decay", "two-scale") == "two-scale")

_TOP_KEYS = ("dynamics", "run", "seeds", "methods", "options", "target_fraction", "sweep")


def _check_keys(values: Any, known: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(values, Mapping):
        raise ValueError(f"{where} must be a mapping, got {type(values).__name__}")
    for key in values:
        if key not in known:
            raise ValueError(f"unknown key {where}.{key} (known: {', '.join(known)})")
    return values


def _number_list(values: Any, where: str, lo: float, hi: float) -> tuple[float, ...]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{where} must be a non-empty list of numbers")
    for k, v in enumerate(values):
        check_number(f"{where}[{k}]", v, lo, hi)
    return tuple(float(v) for v in values)


def _check_values(method: str, opts: Mapping[str, Any]) -> None:
    """Build a 2-sample sampler with these options, so a bad value fails now, named."""
    try:
        if method in VADE_FAMILY:
            make_sampler(method, 2, 1, **opts)
        elif method in PEERS:
            extra = ({"categories": np.zeros(2, dtype=np.int64)}
                     if method.startswith("sec") else {})
            PEERS[method](2, 1, **extra, **opts)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"options.{method}: {exc}") from exc


@dataclass(frozen=True)
class SweepConfig:
    """The lambda1 x lambda2 grid, run with ``method`` (a VADE-family method) on ``seeds``."""

    method: str = "vade"
    lambda1: tuple[float, ...] = (0.0, 0.1, 0.2, 0.4, 0.7)
    lambda2: tuple[float, ...] = (0.99, 0.995, 0.999, 0.9999, 1.0)
    seeds: int = 1

    def __post_init__(self) -> None:
        if self.method not in TWO_SCALE:
            raise ValueError(f"sweep.method must be one of {', '.join(TWO_SCALE)} (methods with "
                             f"two-scale decay), got {self.method!r}")
        _number_list(self.lambda1, "sweep.lambda1", 0.0, 1.0)
        _number_list(self.lambda2, "sweep.lambda2", 0.0, 1.0)
        if max(self.lambda1) > min(self.lambda2):
            raise ValueError(f"sweep.lambda1 has {max(self.lambda1)} > the smallest sweep.lambda2 "
                             f"{min(self.lambda2)}: two-scale decay needs lambda1 <= lambda2")
        check_number("sweep.seeds", self.seeds, 1, 1000, integer=True)

    @classmethod
    def from_dict(cls, values: Any) -> "SweepConfig":
        v = dict(_check_keys(values, ("method", "lambda1", "lambda2", "seeds"), "sweep"))
        for key in ("lambda1", "lambda2"):
            if key in v:
                v[key] = _number_list(v[key], f"sweep.{key}", 0.0, 1.0)
        return cls(**v)


@dataclass(frozen=True)
class SimConfig:
    """Everything one ``vade simulate`` run needs."""

    dynamics: DynamicsParams = field(default_factory=DynamicsParams)
    run: RunSettings = field(default_factory=RunSettings)
    seeds: int = 3
    methods: tuple[str, ...] = METHODS
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    target_fraction: float = 0.995
    sweep: SweepConfig = field(default_factory=SweepConfig)

    def __post_init__(self) -> None:
        check_number("seeds", self.seeds, 1, 1000, integer=True)
        check_number("target_fraction", self.target_fraction, 0.0, 1.0, lo_open=True)
        if not self.methods:
            raise ValueError("methods must list at least one method")
        for k, m in enumerate(self.methods):
            if m not in METHODS:
                raise ValueError(f"methods[{k}] = {m!r} is unknown (known: {', '.join(METHODS)})")
        if len(set(self.methods)) != len(self.methods):
            raise ValueError("methods lists a method twice")
        for method, opts in self.options.items():
            if method not in METHODS:
                raise ValueError(f"unknown key options.{method} (a method name is expected)")
            _check_keys(opts, method_options(method), f"options.{method}")
            _check_values(method, opts)
        if self.run.batch_size > self.dynamics.n_samples:
            raise ValueError(f"run.batch_size = {self.run.batch_size} exceeds "
                             f"dynamics.n_samples = {self.dynamics.n_samples}")

    @classmethod
    def from_dict(cls, values: Any) -> "SimConfig":
        v = dict(_check_keys(values or {}, _TOP_KEYS, "config"))
        sections = {
            "dynamics": lambda x: DynamicsParams.from_dict(dict(_check_keys(
                x, tuple(DynamicsParams.__dataclass_fields__), "dynamics"))),
            "run": lambda x: RunSettings(**_check_keys(
                x, tuple(RunSettings.__dataclass_fields__), "run")),
            "sweep": SweepConfig.from_dict,
        }
        for key, build in sections.items():
            if key in v:
                try:
                    v[key] = build(v[key])
                except ValueError as exc:
                    msg = str(exc)
                    raise ValueError(msg if msg.startswith(("unknown key", key)) else
                                     f"{key}.{msg}") from exc
        if "methods" in v:
            if not isinstance(v["methods"], (list, tuple)):
                raise ValueError("methods must be a list of method names")
            v["methods"] = tuple(v["methods"])
        if "options" in v:
            v["options"] = {k: dict(o or {}) for k, o in _check_keys(
                v["options"], METHODS, "options").items()}
        return cls(**v)

    def to_dict(self) -> dict[str, Any]:
        return {"dynamics": self.dynamics.to_dict(), "run": self.run.to_dict(),
                "seeds": self.seeds, "methods": list(self.methods),
                "options": {k: dict(o) for k, o in self.options.items()},
                "target_fraction": self.target_fraction,
                "sweep": {"method": self.sweep.method, "lambda1": list(self.sweep.lambda1),
                          "lambda2": list(self.sweep.lambda2), "seeds": self.sweep.seeds}}

    def quick(self) -> "SimConfig":
        """Smoke-test scale: a quarter of N and B, 2 seeds, a 3 x 3 sweep. Same shapes, noisier."""
        n = max(1, self.dynamics.n_samples // 4)
        b = max(1, min(n, self.run.batch_size // 4))
        l1, l2 = self.sweep.lambda1, self.sweep.lambda2
        return replace(
            self,
            dynamics=replace(self.dynamics, n_samples=n,
                             n_categories=min(self.dynamics.n_categories, n)),
            run=replace(self.run, batch_size=b),
            seeds=min(self.seeds, 2),
            sweep=replace(self.sweep, lambda1=(l1[0], l1[len(l1) // 2], l1[-1]),
                          lambda2=(l2[0], l2[len(l2) // 2], l2[-1]), seeds=1),
        )


def load_config(path: str | Path | None) -> SimConfig:
    """Read and validate a YAML config; ``None`` gives the built-in defaults."""
    if path is None:
        return SimConfig()

    p = Path(path)
    values = read_yaml(p)
    try:
        return SimConfig.from_dict(values)
    except TypeError as exc:  # a wrong type that slipped past the key checks
        raise ValueError(f"{p}: {exc}") from exc
