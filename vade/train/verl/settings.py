"""What the sampler plugin reads from verl's ``data`` config: the ``data.sampler.vade`` block.

verl 0.7.1's ``data.sampler`` holds only ``class_path`` and ``class_name``, and its config is in
struct mode: a new key must be *appended*, ``+data.sampler.vade.method=vade`` (a plain
``data.sampler.vade.method=`` fails at Hydra composition). ``create_rl_sampler`` passes the whole
``config.data`` as ``data_config``, so the block arrives with the sampler; no environment variable
or side file is needed, and the values are printed with the rest of verl's resolved config. The
override builder (``vade.train.verl.overrides``) writes the block; users never type it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from vade import methods
from vade.checks import check_number, reject_unknown
from vade.config_schema import build, check
from vade.train.config import SamplerConfig

__all__ = ["BLOCK", "PluginSettings"]

BLOCK = "vade"  # data.sampler.<BLOCK>


@dataclass(frozen=True)
class PluginSettings:
    """``data.sampler.vade``. Paths are absolute (Ray workers may run in another directory).

    The ``sampler`` section's keys arrive flat (``lambda1``, ``lambda2``, ``snapshot_every``,
    as the override builder wrote them from ``SamplerConfig``) and are read back into that same
    class: one set of defaults and checks for both backends."""

    method: str
    run_id: str
    store: str                      # the run's DuckDB file (history.duckdb)
    state_dir: str                  # per-step sampler state files (next to the DuckDB file)
    seed: int = 0
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    keep_every: int = 0             # verl's save_freq: which state files retention keeps
    initial_difficulty: str | None = None   # initial.parquet (sample_id, correct, rollouts)
    tracking_uri: str | None = None          # MLflow; None disables MLflow logging here
    experiment: str | None = None

    @classmethod
    def from_data_config(cls, data_config: Any) -> PluginSettings:
        sampler = _get(data_config, "sampler") or {}
        block = _get(sampler, BLOCK)
        if block is None:
            raise ValueError(
                "data.sampler.vade is missing: VadeCurriculumSampler needs its settings "
                "(append them with +data.sampler.vade.<key>=...; vade.train.verl.overrides does)")
        return cls.from_dict(_plain(block))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> PluginSettings:
        values = dict(values)
        spec_keys = {f.name for f in fields(SamplerConfig)}
        names = {f.name for f in fields(cls)} - {"sampler"} | spec_keys
        reject_unknown(values, names, "data.sampler.vade")
        for key in ("method", "run_id", "store", "state_dir"):
            if not values.get(key):
                raise ValueError(f"data.sampler.vade.{key} is required")
        spec_values = {k: values.pop(k) for k in spec_keys if k in values}
        check(spec_values, "sampler", where="data.sampler.vade")
        try:
            spec = build(SamplerConfig, spec_values)
        except ValueError as exc:
            raise ValueError(f"data.sampler.vade.{exc}") from None
        out = cls(**values, sampler=spec)
        row = methods.get(out.method)
        if row.shaping is not None:
            raise ValueError(f"data.sampler.vade.method = {out.method!r}: the curriculum sampler "
                             "runs methods that are a sampler alone "
                             f"({', '.join(methods.names_where(shaping=None))})")
        check_number("data.sampler.vade.seed", out.seed, 0, 2**63 - 1, integer=True)
        check_number("data.sampler.vade.keep_every", out.keep_every, 0, 1 << 30, integer=True)
        return out


def _get(container: Any, key: str) -> Any:
    if container is None:
        return None
    if isinstance(container, Mapping) or hasattr(container, "get"):
        return container.get(key)
    return getattr(container, key, None)


def _plain(block: Any) -> dict[str, Any]:
    """An OmegaConf node or a dict as a plain dict (Hydra turns ``null`` into None already)."""
    try:
        # lazy: verl's OmegaConf: the train-verl env only
        from omegaconf import DictConfig, OmegaConf

        if isinstance(block, DictConfig):
            return dict(OmegaConf.to_container(block, resolve=True))
    except ImportError:  # pragma: no cover - omegaconf comes with verl
        pass
    return dict(block)
