"""The evaluation splits the training set must not overlap, and the exclusion keys built from them.

The paper: "ensuring no overlap between the training data and the evaluation benchmarks". The five
benchmarks are read from the same hub datasets the evaluation reads (``vade.eval.tasks``, lmms-eval
0.7.3), which ``vade prefetch`` stages into the cache every job reads offline; on a machine with
local copies they are read from ``data.paper.local_dir`` like the sources. MathVision's full test
split is included beside testmini (testmini is a subset of it, so one key set covers both).

Every image column (a ``datasets.Image`` feature: ``decoded_image`` for MathVista/MathVision,
``image`` elsewhere) gives image keys and the ``question`` column (``query`` where there is none)
a question key (``overlap`` says which questions are too generic to be keys). A benchmark image
that cannot be decoded is counted and skipped, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vade.data.items import InvalidRow, check_image
from vade.data.overlap import KeySet, question_key
from vade.data.sources import SourceSpec
from vade.data.sources.loading import load_source

__all__ = ["BENCHMARK_SPLITS", "benchmark_datasets", "benchmark_keys"]

# name -> (hub repository, config or None, split): the datasets of vade/eval/tasks/*.yaml
BENCHMARK_SPLITS: dict[str, tuple[str, str | None, str]] = {
    "mathvista_testmini": ("AI4Math/MathVista", None, "testmini"),
    "mathverse_testmini": ("CaraJ/MathVerse-lmmseval", "testmini", "testmini"),
    "mathvision_test": ("MathLLMs/MathVision", None, "test"),
    "mathvision_testmini": ("MathLLMs/MathVision", None, "testmini"),
    "chartqa_test": ("lmms-lab-encoder/ChartQA", None, "test"),
    "scienceqa_test": ("lmms-lab-encoder/ScienceQA", "ScienceQA-IMG", "test"),
}


def benchmark_spec(name: str) -> SourceSpec:
    """A ``SourceSpec`` for one benchmark split, so it loads through the sources' own loader."""
    repo, config, split = BENCHMARK_SPLITS[name]
    return SourceSpec(name, "benchmark", repo, config, split, "", "")


def benchmark_datasets(names: Sequence[str]) -> list[tuple[str, str | None]]:
    """(repo, config) of each named benchmark: what ``vade prefetch`` must stage for build-data."""
    return list(dict.fromkeys(BENCHMARK_SPLITS[n][:2] for n in names))


def _columns(ds: Any) -> tuple[list[str], str | None]:
    import datasets  # lazy: the cpu extra, seconds to load

    images = [n for n, f in ds.features.items() if isinstance(f, datasets.Image)]
    question = next((c for c in ("question", "query") if c in ds.column_names), None)
    return images, question


def benchmark_keys(names: Sequence[str], *, local_dir: str | None, cache_dir: str | None,
                   use_hub: bool, progress: Callable[[str, int], Any] | None = None,
                   check: Callable[[SourceSpec, dict[str, Any]], None] | None = None
                   ) -> tuple[KeySet, dict[str, dict[str, Any]]]:
    """The keys of every named split and, per split, what was read (rows, images, questions,
    images that failed to decode, short questions left out) and its provenance. ``check``
    sees each opened copy's provenance before any row is read (the pin check)."""
    keys = KeySet()
    report: dict[str, dict[str, Any]] = {}
    for name in names:
        spec = benchmark_spec(name)
        ds, provenance = load_source(spec, local_dir=local_dir, cache_dir=cache_dir,
                                     use_hub=use_hub)
        if check is not None:
            check(spec, provenance)
        image_cols, qcol = _columns(ds)
        if not image_cols and qcol is None:
            raise ValueError(f"benchmark {name} ({spec.label}) has no image column and no "
                             f"question column (columns {ds.column_names})")
        counts = {"rows": len(ds), "images": 0, "bad_images": 0, "questions": 0,
                  "short_questions": 0}
        rows = ds.select_columns([*image_cols, *([qcol] if qcol else [])])
        iterator = progress(name, len(ds)) if progress else None
        for row in rows:
            pictures = []
            for col in image_cols:
                if row[col] is None:
                    continue
                try:
                    pictures.append(keys.add_image(check_image(row[col]), name))
                    counts["images"] += 1
                except InvalidRow:
                    counts["bad_images"] += 1
            if qcol and isinstance(row[qcol], str) and row[qcol].strip():
                qkey = question_key(row[qcol])
                counts["questions" if qkey else "short_questions"] += 1
                keys.add_question(qkey, name, pictures)
            if iterator is not None:
                iterator.update(1)
        if iterator is not None:
            iterator.close()
        report[name] = {"repo": spec.repo, "config": spec.config, "split": spec.split,
                        "image_columns": image_cols, "question_column": qcol, **counts,
                        **provenance}
    generic = keys.drop_generic()
    for name, entry in report.items():
        entry["generic_questions"] = generic.get(name, 0)
    return keys, report
