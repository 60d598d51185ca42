"""Items -> verl's multimodal parquet files, ``manifest.json`` and the ``samples`` DuckDB catalog.

The output folder is written whole into a temporary sibling and swapped in with ``os.replace``,
so a crash or an invalid row never leaves a half-written dataset behind (Snakemake would otherwise
see stale or partial outputs). The parquet schema is fixed here (explicit pyarrow types), so the
same items give byte-identical files, and ``extra_info.index`` is assigned in one place: files in
the order given, rows in order, so the train split's index equals its row position (the sampler's
sample id and DuckDB's ``sample_id``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from vade.data.items import Item
from vade.data.records import IMAGE_TOKEN
from vade.store.file_format import connect_for_writing

__all__ = ["SplitFile", "file_sha256", "verl_row", "verl_schema", "write_dataset"]


@dataclass(frozen=True)
class SplitFile:
    """One output parquet file: its path under the output folder, split name and items."""

    relpath: str
    split: str
    items: Sequence[Item]


def verl_schema(with_difficulty: bool) -> Any:
    extra = [("split", pa.string()), ("index", pa.int64()), ("uid", pa.string()),
             ("task", pa.string()), ("domain", pa.string()), ("answer_type", pa.string()),
             ("question", pa.string()), ("answer", pa.string())]
    if with_difficulty:
        extra.append(("difficulty", pa.float64()))
    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("images", pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct(extra)),
    ])


def verl_row(item: Item, index: int, split: str, template: str,
             with_difficulty: bool) -> dict[str, Any]:
    """One row: one ``<image>`` per image ahead of the templated question (verl asserts the count)."""
    text = template.replace("{question}", item.question)
    extra: dict[str, Any] = {
        "split": split, "index": index, "uid": item.uid, "task": item.task,
        "domain": item.domain, "answer_type": item.answer_type, "question": item.question,
        "answer": item.answer,
    }
    if with_difficulty:
        extra["difficulty"] = item.difficulty
    return {
        "data_source": item.task,
        "prompt": [{"role": "user", "content": IMAGE_TOKEN * len(item.images) + text}],
        "images": [{"bytes": b, "path": None} for b in item.images],
        "ability": item.domain,
        "reward_model": {"style": "rule", "ground_truth": item.answer},
        "extra_info": extra,
    }


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def files_sha256(files: list[Path], root: Path | None = None) -> str:
    """One digest of several files' names (relative to ``root``, else their base names) and
    contents: the identity of a folder-shaped input (a model, a local dataset copy)."""
    h = hashlib.sha256()
    for path in files:
        name = path.relative_to(root).as_posix() if root is not None else path.name
        h.update(f"{name}\0{file_sha256(path)}\n".encode())
    return h.hexdigest()


def _write_parquet(path: Path, rows: list[dict[str, Any]], with_difficulty: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=verl_schema(with_difficulty))
    # Small row groups keep verl/datasets' lazy reads cheap with image bytes inline.
    pq.write_table(table, path, compression="zstd", row_group_size=256)


def _write_catalog(path: Path, records: list[dict[str, Any]], with_difficulty: bool) -> None:
    cols = ["sample_id", "uid", "task", "domain", "split", "answer_type"]
    if with_difficulty:
        cols.append("difficulty")
    table = pa.Table.from_pylist([{c: r[c] for c in cols} for r in records])
    con = connect_for_writing(path)
    try:
        con.register("incoming", table)
        extra = ", difficulty DOUBLE" if with_difficulty else ""
        con.execute("CREATE TABLE samples (sample_id BIGINT PRIMARY KEY, uid VARCHAR NOT NULL, "
                    "task VARCHAR NOT NULL, domain VARCHAR NOT NULL, split VARCHAR NOT NULL, "
                    f"answer_type VARCHAR NOT NULL{extra})")
        con.execute(f"INSERT INTO samples SELECT {', '.join(cols)} FROM incoming ORDER BY sample_id")
        con.unregister("incoming")
    finally:
        con.close()


def _swap_in(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the finished ``tmp`` folder (two renames; the old copy is removed last)."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old / out.name)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_dataset(out_dir: str | Path, files: Sequence[SplitFile], *, template: str,
                  with_difficulty: bool, manifest: dict[str, Any],
                  extra_json: dict[str, Any] | None = None,
                  prompt_tokens: Callable[[list[Path]], dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """Write every file, the catalog, the manifest (``manifest`` is extended and returned) and
    ``extra_json`` (file name -> JSON value; each file's sha256 goes into the manifest).
    ``prompt_tokens`` gets the written train and val files and returns the manifest's
    ``prompt_tokens`` (``vade.data.prompt_tokens``), inside the folder's atomic write."""
    out = Path(out_dir).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; the dataset is an ordinary folder
    try:
        index = 0
        records: list[dict[str, Any]] = []
        uids: set[str] = set()
        file_info: dict[str, Any] = {}
        counts: dict[str, dict[str, int]] = {}
        for sf in files:
            rows = []
            for item in sf.items:
                if item.uid in uids:  # a builder bug, not a source row problem
                    raise ValueError(f"uid {item.uid!r} appears twice in the built dataset")
                uids.add(item.uid)
                rows.append(verl_row(item, index, sf.split, template, with_difficulty))
                records.append({"sample_id": index, "uid": item.uid, "task": item.task,
                                "domain": item.domain, "split": sf.split,
                                "answer_type": item.answer_type, "difficulty": item.difficulty})
                index += 1
            _write_parquet(tmp / sf.relpath, rows, with_difficulty)
            file_info[sf.relpath] = {"rows": len(rows), "split": sf.split,
                                     "sha256": file_sha256(tmp / sf.relpath)}
            per_task = counts.setdefault(sf.split, {})
            for task, n in sorted(Counter(i.task for i in sf.items).items()):
                per_task[task] = per_task.get(task, 0) + n
        _write_catalog(tmp / "samples.duckdb", records, with_difficulty)
        lengths = prompt_tokens([tmp / f.relpath for f in files if f.split in ("train", "val")]
                                ) if prompt_tokens else None
        for name, value in (extra_json or {}).items():
            with open(tmp / name, "w") as f:
                json.dump(value, f, indent=1, sort_keys=True)
                f.write("\n")
            file_info[name] = {"sha256": file_sha256(tmp / name)}
        manifest = dict(manifest)
        manifest["counts"] = counts
        manifest["total_rows"] = index
        manifest["files"] = file_info
        if lengths is not None:
            manifest["prompt_tokens"] = lengths
        manifest["catalog"] = {"path": "samples.duckdb", "table": "samples",
                               "note": "not hashed: DuckDB file bytes vary between writes; "
                                       "its rows mirror the parquet files"}
        with open(tmp / "manifest.json", "w") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
            f.write("\n")
        _swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
