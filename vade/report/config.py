"""Config section ``report``, validated once at the edge against the schema (bad keys and values
are named, ``vade.config_schema``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from vade.config_schema import build, check
from vade.eval.config import PAPER_BENCHMARKS
from vade.grid import cells
from vade.methods import check_compared

__all__ = ["ReportConfig", "expected_runs", "table_columns"]


@dataclass(frozen=True)
class ReportConfig:
    """What the report shows and how.

    val_metric / grad_norm_metric: names in the runs' ``metrics`` table (or MLflow) for the
    validation score and the actor gradient norm (verl logs ``actor/grad_norm``; its per-source
    ``val-core/<source>/acc/mean@n`` are pooled into ``val/acc`` by ``vade.train.verl.launch``,
    so the default serves both backends).
    headline_fraction: the share of DAPO's peak validation score VADE must reach (paper: 0.995).
    paper_comparison: print the paper's numbers beside ours (set it in the paper's config).
    heatmap_samples: how many items the posterior heatmap shows (drawn with ``seed``).
    heatmap_run: the run whose posteriors the heatmap shows (default: the first VADE run).
    difficulty_buckets: inner edges on initial accuracy r/G; 0 and 1 are buckets of their own.
    benchmarks: column order of the benchmark tables (default: the order found, paper's first).
    cost_axis: what a method's rollouts count on every rollout axis (Figure 4, the headline, the
    peers' rollouts to target and equal-rollout comparison): ``all`` (default) every rollout it
    consumed: its generated rollouts (DAPO's and GRESO's filtered groups and MMR1's re-scoring
    included) and the initial difficulty rollouts of the methods that start from them
    (``vade.report.cost``); ``generated`` the histories' own counts only. The
    headline shows VADE's ratio both ways regardless.
    plateau_checks: steps at which DAPO's plateau rule is checked, in order, on the curve as it
    stood there (the first where it holds gives the plateau; empty: the whole curve only). Set
    it before the runs (the study's overlay does): it is the stopping rule, not a tuning knob.
    rollout_grid: the common rollout cadence of the pre-registered rollouts-to-target estimator
    (``vade.report.estimators``): every validation curve is interpolated onto multiples of it
    and smoothed over 3 of them. Fixed before the rerun at 3,840: twice VADE's and vanilla's
    cadence in the tiny study (15 steps x 128 rollouts), within DAPO's 3,000-6,000; a grid point
    between two validations is their weighted mean, never an extra independent draw.
    family: the pre-registered primary family (``vade.report.numbers``): ``dapo`` for VADE /
    DAPO rollouts to target, then each method VADE is compared with at equal rollouts; Holm's
    correction runs over all of them, a test without 2 seeds at p = 1. Unset: the tests the
    runs allow.
    """

    val_metric: str = "val/acc"
    grad_norm_metric: str = "actor/grad_norm"
    headline_fraction: float = 0.995
    paper_comparison: bool = False
    heatmap_samples: int = 40
    heatmap_run: str | None = None
    difficulty_buckets: tuple[float, ...] = (0.25, 0.5, 0.75)
    benchmarks: tuple[str, ...] | None = None
    seed: int = 0
    decimals: int = 2
    cost_axis: str = "all"
    plateau_checks: tuple[int, ...] = ()
    rollout_grid: float = 3840.0
    family: tuple[str, ...] | None = None

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ReportConfig:
        """The ``report`` section: types and ranges checked against the schema
        (``vade.config_schema``); here, what a schema cannot say."""
        check(values, "report")
        edges = values.get("difficulty_buckets", cls.difficulty_buckets)
        if not all(a < b for a, b in pairwise(edges)):
            raise ValueError("config key 'report.difficulty_buckets' must increase, got "
                             f"{list(edges)}")
        check_compared(values.get("family") or (), "config key 'report.family'")
        return build(cls, {**values, **({"plateau_checks": sorted(values["plateau_checks"])}
                                        if "plateau_checks" in values else {})})


def table_columns(config: Mapping[str, Any], cfg: ReportConfig) -> tuple[str, ...] | None:
    """The benchmark columns: ``report.benchmarks``, else, for the paper's evaluation
    (``evaluate.kind: paper``), its benchmarks (the paper's five by default), so that one never
    evaluated anywhere is a column of ``missing`` (and AVG missing), not silently dropped; else
    None (the benchmarks found, e.g. the synthetic domains)."""
    if cfg.benchmarks:
        return cfg.benchmarks
    ev = config.get("evaluate") or {}
    if ev.get("kind") != "paper":
        return None
    if ev.get("benchmarks"):
        return tuple(b["name"] for b in ev["benchmarks"])

    return tuple(b.name for b in PAPER_BENCHMARKS)


def expected_runs(config: Mapping[str, Any]) -> tuple[str, ...]:
    """Run ids an ``experiments`` section asks for (same order as the workflow), plus the base
    model of each model; empty when the config has no ``experiments`` section."""
    if not config.get("experiments"):
        return ()
    grid = cells(config)
    ids = [c.run_id for c in grid]
    models = [c.model for c in grid]
    ids += [f"{m}-base" for m in models]
    return tuple(dict.fromkeys(ids))
