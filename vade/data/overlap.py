"""Benchmark exclusion: drop training rows whose image or question also appears in an evaluation set.

The benchmark side is given as local files (``data.paper.exclude``), so the build stays offline
and the exclusion is reproducible: a JSON file ``{"image_sha256": [...], "questions": [...]}`` or a
parquet file with any of the columns ``image_sha256`` (str), ``question`` (str) and ``image``
(encoded bytes or {bytes, path}; hashed here). ``write_exclusion_list`` makes the JSON form from
benchmark images and questions. Image hashes are ``vade.data.items.image_hash`` (decoded pixels);
questions are compared after ``normalise_question``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vade.data.items import Item, check_image, image_hash, normalise_question

__all__ = ["Exclusion", "load_exclusions", "overlap_reason", "write_exclusion_list"]


@dataclass(frozen=True)
class Exclusion:
    image_hashes: frozenset[str] = frozenset()
    questions: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.image_hashes or self.questions)


def _from_json(path: Path) -> tuple[set[str], set[str]]:
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"exclusion list {path} is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not set(value) <= {"image_sha256", "questions"}:
        raise ValueError(f"exclusion list {path} must be an object with keys 'image_sha256' "
                         f"and/or 'questions'")
    hashes = value.get("image_sha256", [])
    questions = value.get("questions", [])
    if not all(isinstance(h, str) for h in hashes) or not all(isinstance(q, str) for q in questions):
        raise ValueError(f"exclusion list {path}: 'image_sha256' and 'questions' must be string lists")
    return set(hashes), {normalise_question(q) for q in questions}


def _from_parquet(path: Path) -> tuple[set[str], set[str]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    cols = set(table.column_names)
    if not cols & {"image_sha256", "question", "image"}:
        raise ValueError(f"exclusion list {path} has none of the columns image_sha256, question, "
                         f"image (found {sorted(cols)})")
    hashes: set[str] = set()
    questions: set[str] = set()
    if "image_sha256" in cols:
        hashes.update(h for h in table.column("image_sha256").to_pylist() if h)
    if "image" in cols:
        for k, img in enumerate(table.column("image").to_pylist()):
            if img is not None:
                try:
                    hashes.add(image_hash(check_image(img)))
                except ValueError as exc:
                    raise ValueError(f"exclusion list {path} row {k}: {exc}") from None
    if "question" in cols:
        questions.update(normalise_question(q) for q in table.column("question").to_pylist() if q)
    return hashes, questions


def load_exclusions(paths: Sequence[str]) -> Exclusion:
    hashes: set[str] = set()
    questions: set[str] = set()
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise FileNotFoundError(f"benchmark exclusion list not found: {path} "
                                    f"(config data.paper.exclude)")
        h, q = _from_json(path) if path.suffix == ".json" else _from_parquet(path)
        hashes |= h
        questions |= q
    questions.discard("")
    return Exclusion(frozenset(hashes), frozenset(questions))


def write_exclusion_list(path: str | Path, *, images: Iterable[bytes] = (),
                         questions: Iterable[str] = ()) -> None:
    """Write the JSON form from benchmark image bytes and question texts (atomically)."""
    path = Path(path)
    value = {"image_sha256": sorted({image_hash(check_image(b)) for b in images}),
             "questions": sorted({q for q in questions if q})}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    os.replace(tmp, path)


def overlap_reason(item: Item, exclusion: Exclusion, match: str) -> str | None:
    """'image' / 'question' / 'image+question' when ``item`` overlaps under ``match``; else None."""
    if not exclusion:
        return None
    img = bool(exclusion.image_hashes) and any(image_hash(b) in exclusion.image_hashes
                                               for b in item.images)
    que = normalise_question(item.source_question or item.question) in exclusion.questions
    hit = {"image": img, "question": que, "either": img or que, "both": img and que}[match]
    if not hit:
        return None
    return "image+question" if img and que else ("image" if img else "question")
