"""Build the paper's training set (Table 3) from its Hugging Face sources.

Per task: open the source (``sources.loading``), walk its rows in a seeded random order, parse
each visited row (``rows.SourceRows``), drop rows that overlap the evaluation benchmarks
(``overlap``, keys from ``benchmarks``), and stop at the configured count. Walking a permutation
instead of parsing whole sources keeps the build proportional to the rows used (geo170k(qa) has
68k rows, we take 1,778), and it is exactly a seeded subsample of the usable rows. Then a
stratified train/val split and one atomic write (``writer``).

No single row fails the build: an invalid row is dropped and counted per reason. What fails it,
naming the source, is a source that parses below ``data.paper.min_parse_rate`` (its format is not
the one the parser knows), a source not pinned to a hub commit under ``require_pinned``, and a task
left short under ``shortfall: fail``. Under ``shortfall: take`` (the default) a task short of its
count keeps what is left, and the manifest and the command's output say so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from vade.data.benchmarks import benchmark_keys
from vade.data.config import DataConfig, PaperConfig
from vade.data.items import Item
from vade.data.overlap import Exclusion, KeySet, keys_from_files
from vade.data.pins import check_copy, check_pins
from vade.data.rows import EXAMPLES, RowTally, SourceRows
from vade.data.sources import TASKS, SourceSpec
from vade.data.sources.loading import load_source
from vade.data.splits import rng_for, stratified_split
from vade.data.writer import SplitFile, write_dataset
from vade.provenance import code_version

__all__ = ["build_exclusion", "build_paper", "collect_task"]


def collect_task(spec: SourceSpec, ds: Any, count: int, *, seed: int, exclusion: Exclusion,
                 match: str, progress: bool = True
                 ) -> tuple[list[Item], RowTally, dict[str, Any]]:
    """Up to ``count`` usable items of one task, the tally of visited rows and the overlap
    report (rows excluded per reason and per benchmark, with examples)."""
    rows = SourceRows(spec, ds)
    reasons: Counter = Counter()
    origins: Counter = Counter()
    examples: list[str] = []
    items: list[Item] = []
    order = rng_for(seed, "subsample", spec.task).permutation(len(ds))
    bar = tqdm(total=count, desc=f"build-data {spec.task}", unit="row", disable=not progress,
               leave=False)
    try:
        for pos in order:
            if len(items) >= count:
                break
            item = rows.parse(int(pos))
            if item is None:
                continue
            hit = exclusion.match(item, match)
            if hit:
                reasons[hit.reason] += 1
                origins.update(hit.origins)
                if len(examples) < EXAMPLES:
                    examples.append(f"{item.row_id}: {hit.reason} ({hit.detail}; "
                                    f"{', '.join(hit.origins)})")
                continue
            items.append(item)
            bar.update(1)
    finally:
        bar.close()
    overlap = {"rows": sum(reasons.values()), "by_reason": dict(sorted(reasons.items())),
               "by_benchmark": dict(sorted(origins.items())), "examples": examples}
    return items, rows.tally, overlap


def build_exclusion(paper: PaperConfig, progress: bool = True
                    ) -> tuple[Exclusion, dict[str, Any]]:
    """The exclusion keys of the configured files and benchmark splits, and what was read."""
    keys = KeySet()
    keys.update(keys_from_files(paper.exclude))
    report: dict[str, Any] = {}
    if paper.exclude_benchmarks:
        bench, report = benchmark_keys(
            paper.exclude_benchmarks, local_dir=paper.local_dir, cache_dir=paper.cache_dir,
            use_hub=paper.use_hub, check=lambda spec, prov: check_copy(paper, spec, prov),
            progress=lambda name, n: tqdm(total=n, desc=f"exclusion keys {name}", unit="row",
                                          disable=not progress, leave=False))
        keys.update(bench)
    return Exclusion(keys, paper.overlap_max_distance), report


def _low_parse(spec: SourceSpec, tally: RowTally, threshold: float) -> str | None:
    rate = tally.parse_rate
    if rate is None or rate >= threshold:
        return None
    shown = "; ".join(f"{reason} x{tally.invalid[reason]}: " + " | ".join(ex)
                      for reason, ex in sorted(tally.examples.items()))
    return (f"{spec.label} (task {spec.task}) parses {rate:.1%} of {tally.visited} visited rows, "
            f"below data.paper.min_parse_rate {threshold:.0%}: {shown}")


def build_paper(cfg: DataConfig, out_dir: str | Path, *, skip_invalid: bool = False,
                progress: bool = True, log: Callable[[str], None] = print,
                prompt_tokens: Callable[[list[Path]], dict[str, Any]] | None = None
                ) -> dict[str, Any]:
    """Build train/val parquet + manifest + catalog + exclusion keys into ``out_dir``.

    ``skip_invalid`` accepts any parse rate (rows are always dropped and counted);
    ``prompt_tokens`` records the prompts' lengths (``vade.data.writer.write_dataset``)."""
    paper = cfg.paper
    assert paper is not None
    tasks = [t for t in sorted(paper.tasks) if paper.tasks[t]]
    check_pins(paper, [TASKS[t] for t in tasks])
    exclusion, bench_report = build_exclusion(paper, progress)
    threshold = 0.0 if skip_invalid else paper.min_parse_rate
    groups: dict[str, list[Item]] = {}
    sources: dict[str, Any] = {}
    problems: list[str] = []
    shortfall: dict[str, dict[str, int]] = {}
    for task in tasks:
        count = paper.tasks[task]
        spec = TASKS[task]
        ds, provenance = load_source(spec, local_dir=paper.local_dir, cache_dir=paper.cache_dir,
                                     use_hub=paper.use_hub)
        check_copy(paper, spec, provenance)
        items, tally, overlap = collect_task(spec, ds, count, seed=cfg.seed, exclusion=exclusion,
                                             match=paper.overlap_match, progress=progress)
        low = _low_parse(spec, tally, threshold)
        if low:
            problems.append(low)
        if len(items) < count:
            shortfall[task] = {"requested": count, "taken": len(items),
                               "short": count - len(items)}
            if paper.shortfall == "fail":
                problems.append(f"task {task}: data.paper.tasks.{task} asks for {count} rows but "
                                f"{spec.label} has {len(items)} usable (of {len(ds)}; invalid "
                                f"{dict(tally.invalid)}, overlap {overlap['rows']}); lower the "
                                f"count or set data.paper.shortfall: take")
            else:
                log(f"vade build-data: task {task} takes {len(items)} of {count} rows: {spec.label}"
                    f" has no more usable rows (of {len(ds)}: {sum(tally.invalid.values())} "
                    f"invalid, {overlap['rows']} overlap the benchmarks)")
        groups[task] = items
        sources[task] = {"repo": spec.repo, "config": spec.config, "split": spec.split,
                         "rows_in_source": len(ds), "requested": count, "taken": len(items),
                         "excluded_overlap": overlap["rows"],
                         "dropped_invalid": sum(tally.invalid.values()),
                         "parse": tally.to_dict(), "overlap": overlap, **provenance}
    if problems:
        raise ValueError("vade build-data refused:\n  " + "\n  ".join(problems))
    train, val = stratified_split(groups, cfg.val_fraction, cfg.seed)
    invalid: Counter = Counter()
    for s in sources.values():
        invalid.update(s["parse"]["invalid"])
    keys_json = exclusion.keys.to_json()
    manifest = {
        "kind": "paper", "seed": cfg.seed, "code_version": code_version(),
        "config": cfg.to_dict(), "sources": sources,
        "invalid": dict(sorted(invalid.items())),
        "excluded_overlap": {t: s["overlap"]["by_reason"] for t, s in sources.items()
                             if s["overlap"]["rows"]},
        "shortfall": shortfall,
        "exclusion": {"files": list(paper.exclude), "benchmarks": bench_report,
                      "keys_file": "exclusion_keys.json", "sizes": exclusion.keys.sizes(),
                      "match": paper.overlap_match,
                      "max_distance": paper.overlap_max_distance},
    }
    files = [SplitFile("train.parquet", "train", train), SplitFile("val.parquet", "val", val)]
    return write_dataset(out_dir, files, template=cfg.prompt_template, with_difficulty=False,
                         manifest=manifest, extra_json={"exclusion_keys.json": keys_json}, prompt_tokens=prompt_tokens)
