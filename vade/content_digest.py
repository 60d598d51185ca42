"""The identity of an input by its content: a SHA-256 over a file's bytes, or over a folder's file
names and bytes (a model's weights, tokenizer and config files).

Why content and not the path: resumable work (initial-difficulty chunks) written by one model must
not be reused after the folder's weights were replaced by another's, which a path string cannot
see (issue 49, item 1: a resume mixed two models' counts). Why a cache: the paper's 7B weights are
15 GB, about a minute of hashing on a cluster node; a file whose (size, mtime, inode) is unchanged
since it was last hashed keeps its digest, so a rerun hashes nothing and one run hashes each file
at most once. A rewrite in place changes the mtime, so it is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from vade.data.writer import file_sha256

__all__ = ["content_digest"]


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _load(cache: Path | None) -> dict[str, dict]:
    if cache is None or not cache.is_file():
        return {}
    try:
        value = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}    # an unreadable cache only costs a rehash
    return value if isinstance(value, dict) else {}


def _save(cache: Path, entries: dict[str, dict]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
    tmp.write_text(json.dumps(entries, sort_keys=True))
    os.replace(tmp, cache)


def content_digest(path: str | Path, cache: str | Path | None = None) -> str:
    """``sha256:<hex>`` of a file, or of a folder's relative file names and contents (hidden files
    and folders, such as a build's leftovers, are left out). ``cache``: a JSON file of earlier
    digests keyed by absolute path and (size, mtime, inode)."""
    path = Path(path)
    cache_file = Path(cache) if cache is not None else None
    entries = _load(cache_file)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
    else:
        files = [path]
    lines, changed = [], False
    for f in files:
        stamp, key = _stamp(f.stat()), str(f.resolve())
        known = entries.get(key)
        if not isinstance(known, dict) or known.get("stamp") != stamp:
            known = entries[key] = {"stamp": stamp, "sha256": file_sha256(f)}
            changed = True
        name = f.relative_to(path).as_posix() if path.is_dir() else ""
        lines.append(f"{name}\0{known['sha256']}\n")
    if changed and cache_file is not None:
        _save(cache_file, entries)
    if not path.is_dir():
        return f"sha256:{entries[str(path.resolve())]['sha256']}"
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
    return f"sha256:{h.hexdigest()}"
