"""Build the paper's training set (Table 3) from its Hugging Face sources.

Per task: open the source (``sources.loading``), walk its rows in a seeded random order, parse
each visited row into an ``Item`` (``sources.<family>``), drop rows that overlap the evaluation
benchmarks, and stop at the configured count. Walking a permutation instead of parsing whole
sources keeps the build proportional to the rows used (geo170k(qa) has 68k rows, we take 1,778),
and it is exactly a seeded subsample of the usable rows. Only visited rows are validated, so the
invalid counts in the manifest are over visited rows. Then a stratified train/val split and one
atomic write (``writer``).
"""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path
from typing import Any

from vade.data.config import DataConfig
from vade.data.items import InvalidRow, Item
from vade.data.overlap import Exclusion, load_exclusions, overlap_reason
from vade.data.sources import TASKS, SourceSpec
from vade.data.sources.loading import load_source
from vade.data.splits import rng_for, stratified_split
from vade.data.writer import SplitFile, write_dataset

__all__ = ["build_paper", "collect_task"]


def _duplicate_positions(ds: Any) -> dict[int, int]:
    """position -> position of the first row with the same ``id`` (later occurrences only)."""
    if "id" not in ds.column_names:
        return {}
    first: dict[Any, int] = {}
    dups: dict[int, int] = {}
    for pos, value in enumerate(ds["id"]):
        if value in (None, ""):
            continue
        if value in first:
            dups[pos] = first[value]
        else:
            first[value] = pos
    return dups


def collect_task(spec: SourceSpec, ds: Any, count: int, *, seed: int, skip_invalid: bool,
                 exclusion: Exclusion, match: str, progress: bool = True
                 ) -> tuple[list[Item], dict[str, Counter]]:
    """Up to ``count`` usable items of one task and per-kind counters (invalid/filtered/excluded)."""
    from tqdm import tqdm

    family = importlib.import_module(f"vade.data.sources.{spec.family}")
    dups = _duplicate_positions(ds)
    stats: dict[str, Counter] = {"invalid": Counter(), "filtered": Counter(), "excluded": Counter()}
    items: list[Item] = []
    order = rng_for(seed, "subsample", spec.task).permutation(len(ds))
    bar = tqdm(total=count, desc=f"build-data {spec.task}", unit="row", disable=not progress,
               leave=False)
    try:
        for pos in order:
            if len(items) >= count:
                break
            pos = int(pos)
            row = ds[pos]
            rid = family.row_id(spec, row, pos)
            filtered = getattr(family, "is_filtered", lambda r: None)(row)
            if filtered:
                stats["filtered"][filtered] += 1
                continue
            try:
                if pos in dups:
                    raise InvalidRow("duplicate_id", f"id also on row position {dups[pos]}")
                item = family.parse_row(spec, row, rid)
            except InvalidRow as exc:
                if not skip_invalid:
                    raise ValueError(f"{spec.label} row {rid}: {exc} "
                                     f"(rerun with --skip-invalid to drop such rows)") from None
                stats["invalid"][exc.reason] += 1
                continue
            hit = overlap_reason(item, exclusion, match)
            if hit:
                stats["excluded"][hit] += 1
                continue
            items.append(item)
            bar.update(1)
    finally:
        bar.close()
    return items, stats


def build_paper(cfg: DataConfig, out_dir: str | Path, *, skip_invalid: bool = False,
                progress: bool = True) -> dict[str, Any]:
    """Build train/val parquet + manifest + catalog into ``out_dir``; returns the manifest."""
    from vade.provenance import code_version

    paper = cfg.paper
    assert paper is not None
    exclusion = load_exclusions(paper.exclude)
    groups: dict[str, list[Item]] = {}
    sources: dict[str, Any] = {}
    invalid: dict[str, dict[str, int]] = {}
    filtered: dict[str, dict[str, int]] = {}
    excluded: dict[str, dict[str, int]] = {}
    for task in sorted(paper.tasks):
        count = paper.tasks[task]
        if count == 0:
            continue
        spec = TASKS[task]
        ds, provenance = load_source(spec, local_dir=paper.local_dir, cache_dir=paper.cache_dir,
                                     use_hub=paper.use_hub)
        items, stats = collect_task(spec, ds, count, seed=cfg.seed, skip_invalid=skip_invalid,
                                    exclusion=exclusion, match=paper.overlap_match,
                                    progress=progress)
        if len(items) < count and not paper.allow_short:
            raise ValueError(f"task {task}: config data.paper.tasks.{task} asks for {count} rows "
                             f"but {spec.label} has only {len(items)} usable rows "
                             f"(of {len(ds)}; invalid {dict(stats['invalid'])}, excluded "
                             f"{dict(stats['excluded'])}); lower the count or set "
                             f"data.paper.allow_short: true")
        groups[task] = items
        sources[task] = {"repo": spec.repo, "config": spec.config, "split": spec.split,
                         "rows_in_source": len(ds), "requested": count, "used": len(items),
                         **provenance}
        for name, target in (("invalid", invalid), ("filtered", filtered),
                             ("excluded", excluded)):
            if stats[name]:
                target[task] = dict(sorted(stats[name].items()))
    train, val = stratified_split(groups, cfg.val_fraction, cfg.seed)
    reasons = Counter()
    for per_task in invalid.values():
        reasons.update(per_task)
    manifest = {
        "kind": "paper", "seed": cfg.seed, "code_version": code_version(),
        "config": cfg.to_dict(), "sources": sources,
        "invalid": dict(sorted(reasons.items())), "invalid_by_task": invalid,
        "filtered_by_task": filtered, "excluded_overlap": excluded,
        "exclusion_lists": list(paper.exclude),
        "exclusion_size": {"image_sha256": len(exclusion.image_hashes),
                           "questions": len(exclusion.questions)},
    }
    files = [SplitFile("train.parquet", "train", train), SplitFile("val.parquet", "val", val)]
    return write_dataset(out_dir, files, template=cfg.prompt_template, with_difficulty=False,
                         manifest=manifest)
