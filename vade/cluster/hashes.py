"""Local assets hashed once: a manifest of each file's size, modification time and sha256.

Why: ``cluster.local_assets`` names a snapshot by the digest of its files, and every
``vade prefetch`` hashed every source file and then the staged copy again: about 340 GB read per
run for the paper's 170 GB of assets, to learn nothing new. Here a file is hashed again only when
its size or modification time (nanoseconds) changed since the manifest recorded it, as make and
rsync decide; the manifest (``<cluster.cache_dir>/local-assets.json``) is rewritten atomically
after each staging. The staged copy is not hashed at all: it is made from those records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vade.data.writer import file_sha256

__all__ = ["HashManifest"]


class HashManifest:
    """``{absolute path: [bytes, mtime_ns, sha256]}`` read from and saved to one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.hashed_bytes = 0   # what this instance read to hash (the tests count it)
        try:
            self._known: dict[str, list[Any]] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self._known = {}    # none yet, or unreadable: everything is hashed once

    def sha256(self, file: Path) -> str:
        """The file's sha256, from the manifest while its size and mtime are unchanged."""
        st = file.stat()
        key = str(file.resolve())
        seen = self._known.get(key)
        if seen and seen[0] == st.st_size and seen[1] == st.st_mtime_ns:
            return seen[2]
        digest = file_sha256(file)
        self.hashed_bytes += st.st_size
        self._known[key] = [st.st_size, st.st_mtime_ns, digest]
        return digest

    def records(self, root: Path) -> list[dict[str, Any]]:
        """path (relative to ``root``), bytes and sha256 of every file under ``root``."""
        found = sorted(p for p in root.rglob("*") if p.is_file())
        return [{"path": p.relative_to(root).as_posix(), "bytes": p.stat().st_size,
                 "sha256": self.sha256(p)} for p in found]

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".partial")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(self._known, sort_keys=True))
        os.replace(tmp, self.path)
