"""The identity of an input by its content: a SHA-256 over a file's bytes, or over a folder's file
names and bytes (a model's weights, tokenizer and config files), with a manifest so that no file is
hashed twice while it is unchanged.

Why content and not the path: resumable work (initial-difficulty chunks) written by one model must
not be reused after the folder's weights were replaced by another's, which a path string cannot
see (issue 49, item 1: a resume mixed two models' counts). Why a manifest: the paper's 7B weights
are 15 GB, about a minute of hashing on a cluster node, and ``vade prefetch`` used to hash 170 GB
of local assets twice per run (issue 50, item 8). A file whose (size, mtime, inode) is unchanged
since it was last hashed keeps its digest, as make and rsync decide; a rewrite in place changes
the mtime, a replacement the inode, so either is hashed again. One class serves both:
``HashManifest`` (``vade prefetch``'s ``local-assets.json``, the rollouts' ``.input-digests.json``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from vade.data.writer import file_sha256

__all__ = ["HashManifest", "content_digest"]


class HashManifest:
    """``{absolute path: [bytes, mtime_ns, inode, sha256]}`` read from, and saved to, one JSON
    file (``path`` None: kept in memory only). An unreadable manifest only costs a rehash."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.hashed_bytes = 0   # what this instance read to hash (the tests count it)
        self.changed = False
        try:
            known = json.loads(self.path.read_text()) if self.path is not None else {}
        except (OSError, ValueError):
            known = {}
        self._known: dict[str, list[Any]] = known if isinstance(known, dict) else {}

    def sha256(self, file: Path) -> str:
        """The file's sha256, from the manifest while its size, mtime and inode are unchanged."""
        st = file.stat()
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        key = str(file.resolve())
        seen = self._known.get(key)
        if isinstance(seen, list) and len(seen) == 4 and seen[:3] == stamp:
            return seen[3]
        digest = file_sha256(file)
        self.hashed_bytes += st.st_size
        self._known[key] = [*stamp, digest]
        self.changed = True
        return digest

    def records(self, root: Path) -> list[dict[str, Any]]:
        """path (relative to ``root``), bytes and sha256 of every file under ``root``."""
        found = sorted(p for p in root.rglob("*") if p.is_file())
        return [{"path": p.relative_to(root).as_posix(), "bytes": p.stat().st_size,
                 "sha256": self.sha256(p)} for p in found]

    def save(self) -> None:
        """Write the manifest atomically (nothing to do in memory or when nothing was hashed)."""
        if self.path is None or not self.changed:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(self._known, sort_keys=True))
        os.replace(tmp, self.path)


def content_digest(path: str | Path, cache: str | Path | None = None) -> str:
    """``sha256:<hex>`` of a file, or of a folder's relative file names and contents (hidden files
    and folders, such as a build's leftovers, are left out). ``cache``: the ``HashManifest`` file
    of earlier digests."""
    path = Path(path)
    manifest = HashManifest(cache)
    if not path.is_dir():
        digest = manifest.sha256(path)
        manifest.save()
        return f"sha256:{digest}"
    files = sorted(p for p in path.rglob("*") if p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(path).parts))
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.relative_to(path).as_posix()}\0{manifest.sha256(f)}\n".encode())
    manifest.save()
    return f"sha256:{h.hexdigest()}"
