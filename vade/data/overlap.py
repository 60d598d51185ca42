"""Benchmark exclusion: drop training rows whose picture or question also appears in an evaluation set.

The paper's one stated selection rule is "no overlap between the training data and the evaluation
benchmarks". Keys come from the benchmarks' evaluation splits (``vade.data.benchmarks``) and from
local files (``data.paper.exclude``); every key remembers where it came from, so the manifest can
say which benchmark a dropped row matched. Three kinds of key:

* ``image_sha256``: sha256 of the decoded pixels (``items.image_hash``), an exact copy in any
  container;
* ``image_dhash``: the perceptual hash (``phash``), a re-encoded or rescaled copy, matched within
  ``max_distance`` bits;
* ``questions``: the question stem (no "Question:" prefix, no answer options, no instruction),
  normalised (``items.normalise_question``). Generic questions recur across unrelated pictures
  ("Find x.", "What is the value of the largest bar?"), so two rules keep them out: a stem shorter
  than ``MIN_QUESTION_WORDS`` words is not a key, and a benchmark question asked of more than
  ``MAX_QUESTION_PICTURES`` different pictures is dropped as generic. And a question asked of a
  known picture matches a training row only when the row's picture is not clearly another one
  (within ``2 * max_distance`` bits): Geometry3K asks "Find y so that the quadrilateral is a
  parallelogram." of three different diagrams, which are three problems, not one.

File form (JSON): ``{"image_sha256": [...], "image_dhash": [...], "questions": [...]}``; or parquet
with any of the columns ``image_sha256``, ``image_dhash``, ``question``, ``image`` (bytes or
{bytes, path}; hashed on load).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from vade.data.items import Item, check_image, image_hash, normalise_question
from vade.data.phash import DHashIndex, dhash, hamming
from vade.data.sources.answers import strip_instructions

__all__ = ["MAX_QUESTION_PICTURES", "MIN_QUESTION_WORDS", "Exclusion", "KeySet", "Match", "keys_from_files",
           "question_key", "write_exclusion_list"]

MIN_QUESTION_WORDS = 8
MAX_QUESTION_PICTURES = 5     # MathVerse asks one problem of up to five renderings
_KINDS = ("image_sha256", "image_dhash", "questions")
_OPTIONS_START = re.compile(r"(?im)^\s*(?:choices|options)\s*:|^\s*\(?[A-H]\s*[.):：]\s")
_QUESTION_PREFIX = re.compile(r"(?i)^\s*question\s*[:：]\s*")


def question_key(text: str) -> str | None:
    """The normalised stem of a question, or None when it is too short to identify one problem."""
    stem = strip_instructions(text)
    m = _OPTIONS_START.search(stem)
    if m:
        stem = stem[:m.start()]
    stem = _QUESTION_PREFIX.sub("", stem.strip())
    key = normalise_question(stem)
    return key if len(key.split()) >= MIN_QUESTION_WORDS else None


@dataclass
class KeySet:
    """Keys being collected: key -> the benchmarks (or files) it came from."""

    keys: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: {k: {} for k in _KINDS})
    pictures: dict[str, set[str]] = field(default_factory=dict)   # question -> picture hashes

    def add(self, kind: str, key: str | None, origin: str) -> None:
        if key:
            self.keys[kind].setdefault(key, set()).add(origin)

    def add_image(self, data: bytes, origin: str) -> str:
        """Add a picture's keys; returns its perceptual hash (to pair it with its question)."""
        self.add("image_sha256", image_hash(data), origin)
        h = dhash(data)
        self.add("image_dhash", h, origin)
        return h

    def add_question(self, key: str | None, origin: str, pictures: Iterable[str]) -> None:
        """A benchmark question and the pictures it is asked of."""
        if key:
            self.add("questions", key, origin)
            self.pictures.setdefault(key, set()).update(pictures)

    def drop_generic(self) -> Counter:
        """Remove questions asked of more than ``MAX_QUESTION_PICTURES`` pictures; returns how
        many were dropped per origin."""
        dropped: Counter = Counter()
        for q, pictures in self.pictures.items():
            if len(pictures) > MAX_QUESTION_PICTURES:
                dropped.update(self.keys["questions"].pop(q, set()))
        return dropped

    def update(self, other: KeySet) -> None:
        for kind in _KINDS:
            for key, origins in other.keys[kind].items():
                self.keys[kind].setdefault(key, set()).update(origins)
        for key, pictures in other.pictures.items():
            self.pictures.setdefault(key, set()).update(pictures)

    def to_json(self) -> dict[str, dict[str, list[str]]]:
        """What the build records (``exclusion_keys.json``): every key with its origins."""
        return {kind: {k: sorted(o) for k, o in sorted(self.keys[kind].items())}
                for kind in _KINDS}

    def sizes(self) -> dict[str, int]:
        return {kind: len(self.keys[kind]) for kind in _KINDS}


@dataclass(frozen=True)
class Match:
    reason: str          # image / question / image+question
    origins: tuple[str, ...]
    detail: str


class Exclusion:
    """The keys in a form fast to test each training row against."""

    def __init__(self, keys: KeySet | None = None, max_distance: int = 24) -> None:
        self.keys = keys or KeySet()
        self._sha = self.keys.keys["image_sha256"]
        self._dh = self.keys.keys["image_dhash"]
        self._index = DHashIndex(self._dh, max_distance)
        self._questions = self.keys.keys["questions"]
        self._pictures = self.keys.pictures
        self._different = 2 * max_distance

    def __bool__(self) -> bool:
        return any(self.keys.keys[k] for k in _KINDS)

    def _image(self, data: bytes) -> tuple[set[str], str] | None:
        exact = self._sha.get(image_hash(data))
        if exact:
            return exact, "same pixels"
        near = self._index.nearest(dhash(data))
        if near:
            return self._dh[near[0]], f"dhash distance {near[1]}"
        return None

    def match(self, item: Item, mode: str) -> Match | None:
        """How ``item`` overlaps under ``mode`` (image / question / either / both), or None."""
        if not self:
            return None
        img = None
        for data in item.images:
            img = self._image(data)
            if img:
                break
        qkey = question_key(item.source_question or item.question)
        que = self._questions.get(qkey) if qkey else None
        if que and not img and self._pictures.get(qkey) and item.images:
            own = dhash(item.images[0])
            if min(hamming(own, p) for p in self._pictures[qkey]) > self._different:
                que = None   # the same words asked of another picture: another problem
        hit = {"image": bool(img), "question": bool(que), "either": bool(img or que),
               "both": bool(img and que)}[mode]
        if not hit:
            return None
        origins: set[str] = set()
        details = []
        if img:
            origins |= img[0]
            details.append(img[1])
        if que:
            origins |= que
            details.append("same question")
        reason = "image+question" if img and que else ("image" if img else "question")
        return Match(reason, tuple(sorted(origins)), ", ".join(details))


def _from_json(path: Path, keys: KeySet) -> None:
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"exclusion list {path} is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not set(value) <= set(_KINDS):
        raise ValueError(f"exclusion list {path} must be an object with keys among {list(_KINDS)}")
    for kind in _KINDS:
        entries = value.get(kind, [])
        if isinstance(entries, Mapping):
            entries = list(entries)
        if not all(isinstance(e, str) for e in entries):
            raise ValueError(f"exclusion list {path}: '{kind}' must be a list of strings")
        for e in entries:
            keys.add(kind, question_key(e) if kind == "questions" else e, path.name)


def _from_parquet(path: Path, keys: KeySet) -> None:
    table = pq.read_table(path)
    cols = set(table.column_names)
    if not cols & {"image_sha256", "image_dhash", "question", "image"}:
        raise ValueError(f"exclusion list {path} has none of the columns image_sha256, "
                         f"image_dhash, question, image (found {sorted(cols)})")
    for col in ("image_sha256", "image_dhash"):
        if col in cols:
            for h in table.column(col).to_pylist():
                keys.add(col, h, path.name)
    if "image" in cols:
        for k, img in enumerate(table.column("image").to_pylist()):
            if img is not None:
                try:
                    keys.add_image(check_image(img), path.name)
                except ValueError as exc:
                    raise ValueError(f"exclusion list {path} row {k}: {exc}") from None
    if "question" in cols:
        for q in table.column("question").to_pylist():
            if q:
                keys.add("questions", question_key(q), path.name)


def keys_from_files(paths: Sequence[str]) -> KeySet:
    """The keys of the local exclusion files (``data.paper.exclude``)."""
    keys = KeySet()
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise FileNotFoundError(f"benchmark exclusion list not found: {path} "
                                    f"(config data.paper.exclude)")
        (_from_json if path.suffix == ".json" else _from_parquet)(path, keys)
    return keys


def write_exclusion_list(path: str | Path, *, images: Iterable[bytes] = (),
                         questions: Iterable[str] = ()) -> None:
    """Write the JSON form from benchmark image bytes and question texts (atomically)."""
    path = Path(path)
    keys = KeySet()
    for b in images:
        keys.add_image(check_image(b), path.name)
    value = {"image_sha256": sorted(keys.keys["image_sha256"]),
             "image_dhash": sorted(keys.keys["image_dhash"]),
             "questions": sorted({q for q in questions if q})}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    os.replace(tmp, path)
