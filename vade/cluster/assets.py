"""Every hub asset a config names, and which stages read it.

Why one list: ``vade prefetch`` stages exactly these into the cache, ``vade preflight`` checks a
stage's share of them before a model loads, and both must agree. The five paper benchmarks'
hub datasets are not in our config but in lmms-eval's task YAMLs (read from lmms-eval 0.7.3 and
our ``vade/eval/tasks``): ``BENCHMARK_DATASETS`` maps each task to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vade.data.benchmarks import benchmark_datasets  # the no-overlap rule's splits
from vade.data.sources import TASKS
from vade.eval.config import EvaluateConfig
from vade.grid import cells as grid_cells
from vade.job.config import ClusterConfig
from vade.job.revisions import COMMIT, pinned_revisions

__all__ = ["BENCHMARK_DATASETS", "Asset", "assets_of", "missing_pins", "unknown_benchmarks"]

# task -> ((repo, config name or None), ...): lmms-eval 0.7.3's dataset_path / dataset_name
# (MathVerse's vision group reads one config for its three subtasks).
BENCHMARK_DATASETS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "mathvista_testmini_cot": (("AI4Math/MathVista", None),),
    "mathverse_testmini_vision": (("CaraJ/MathVerse-lmmseval", "testmini_version_split"),),
    "mathvision_reason_testmini": (("MathLLMs/MathVision", None),),
    # our tasks (vade/eval/tasks, the official scoring pipelines): the same datasets
    "vade_mathvista_testmini": (("AI4Math/MathVista", None),),
    "vade_mathverse_testmini": (("CaraJ/MathVerse-lmmseval", "testmini"),),
    "vade_mathverse_testmini_vision_only": (("CaraJ/MathVerse-lmmseval", "testmini_version_split"),),
    "vade_mathvision_testmini": (("MathLLMs/MathVision", None),),
    "vade_mathvision_testmini_rule": (("MathLLMs/MathVision", None),),
    "vade_scienceqa_img_reasoning": (("lmms-lab-encoder/ScienceQA", "ScienceQA-IMG"),),
    "vade_chartqa_reasoning": (("lmms-lab-encoder/ChartQA", None),),
}


@dataclass(frozen=True)
class Asset:
    """One hub repository: a model or a dataset, at a revision, with the stages that read it.

    ``configs``: dataset configs to prepare for ``datasets.load_dataset`` (offline it reads only
    prepared copies); ``patterns``: the files to fetch (None: the whole repository)."""

    id: str
    kind: str                          # model | dataset
    revision: str
    stages: tuple[str, ...]
    configs: tuple[str | None, ...] = ()
    patterns: tuple[str, ...] | None = None

    @property
    def repo_type(self) -> str:
        return self.kind


def _is_local(ref: str) -> bool:
    return Path(ref).exists() or ref.startswith((".", "/"))


def assets_of(config: Mapping[str, Any], *, locked: bool = True) -> list[Asset]:
    """The hub assets of a whole config, in a stable order (models, judge, sources,
    benchmarks); revisions from ``cluster.revisions`` and, with ``locked``, the revisions lock
    (``vade.job.revisions``; default ``main``). The workflow's prefetch rule takes its params
    unlocked, so that the lock written by the first prefetch does not rerun it (and with it
    every stage after it)."""
    revs = (pinned_revisions(config) if locked
            else dict(ClusterConfig.from_config(config).revisions))
    found: dict[str, dict[str, Any]] = {}

    def add(ident: str, kind: str, stage: str, configs: tuple = (), patterns=None) -> None:
        entry = found.setdefault(ident, {"kind": kind, "stages": [], "configs": [],
                                         "patterns": patterns})
        entry["stages"] = list(dict.fromkeys([*entry["stages"], stage]))
        entry["configs"] = list(dict.fromkeys([*entry["configs"], *configs]))
        if patterns and entry["patterns"] is not None:
            entry["patterns"] = list(dict.fromkeys([*entry["patterns"], *patterns]))

    models = config.get("models") or {}
    for m in dict.fromkeys(c.model for c in grid_cells(config)):
        spec = models.get(m) or {}
        ref = spec.get("name_or_path")
        if spec.get("kind") == "pretrained" and ref and not _is_local(ref):
            for stage in ("difficulty", "train", "evaluate"):
                add(ref, "model", stage)
    ev = EvaluateConfig.from_dict(config.get("evaluate") or {})
    if ev.kind == "paper":
        if ev.judge.mode == "serve" and any(b.judge for b in ev.benchmarks) and not _is_local(
                ev.judge.model):
            add(ev.judge.model, "model", "evaluate")
    data = config.get("data") or {}
    if data.get("kind") == "paper" and (data.get("paper") or {}).get("use_hub"):
        for task in (data["paper"].get("tasks") or {}):
            spec = TASKS[task]
            pattern = f"{spec.config}/*" if spec.config else "data/*"
            add(spec.repo, "dataset", "data", (spec.config,), [pattern, "README.md"])
        for repo, name in benchmark_datasets(data["paper"].get("exclude_benchmarks") or ()):
            add(repo, "dataset", "data", (name,))
    if ev.kind == "paper":
        for bench in ev.benchmarks:
            for repo, name in BENCHMARK_DATASETS.get(bench.task, ()):
                add(repo, "dataset", "evaluate", (name,))
    return [Asset(i, e["kind"], revs.get(i, "main"), tuple(e["stages"]), tuple(e["configs"]),
                  None if e["patterns"] is None else tuple(e["patterns"]))
            for i, e in found.items()]


def unknown_benchmarks(config: Mapping[str, Any]) -> list[str]:
    """Paper benchmark tasks whose hub dataset this module does not know (stage them by hand)."""
    ev = EvaluateConfig.from_dict(config.get("evaluate") or {})
    if ev.kind != "paper":
        return []
    return [b.task for b in ev.benchmarks if b.task not in BENCHMARK_DATASETS]


def missing_pins(config: Mapping[str, Any]) -> list[str]:
    """Dataset repositories ``vade build-data`` must read at a commit
    (``data.paper.require_pinned``) that neither ``cluster.revisions`` nor the revisions lock
    pins: the build would refuse them, after prefetch staged them."""
    data = config.get("data") or {}
    if data.get("kind") != "paper" or not (data.get("paper") or {}).get("require_pinned"):
        return []
    return [a.id for a in assets_of(config) if a.kind == "dataset" and "data" in a.stages
            and not COMMIT.match(a.revision)]
