"""A warm-started tiny model, reused when nothing it depends on changed.

Why: the warm start is the longest single job of the CPU demo, and every config that shares the
demo's model section, seed and warm-start split (``config/tiny-study*.yaml``) would train the
same weights again (their warm-start rows are the same; only the rows' positions differ). The
build is deterministic for (model config, seed, warm-start rows, code, library versions), so its
folder is kept under that key in a cache folder (``vade build-model --cache``, or
``VADE_MODEL_CACHE``) and copied from there when the key is seen again. A changed config, row,
file of ``vade/models`` or torch/transformers version is a new key: nothing stale is reused. The copied folder's metadata says where it came from (``cache``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example

__all__ = ["build_key", "cached", "examples_digest"]

CODE = Path(__file__).resolve().parent  # vade/models: everything the build runs of this package


def examples_digest(examples: Sequence[Example]) -> str:
    """What the build reads of the warm-start rows: everything but a row's position in its file
    (``index``, which only error messages show; it shifts with the sizes of the other splits)."""
    h = hashlib.sha256()
    for ex in examples:
        fields = {k: v for k, v in vars(ex).items() if k not in ("index", "images")}
        fields["extra_info"] = {k: v for k, v in ex.extra_info.items() if k != "index"}
        h.update(json.dumps(fields, sort_keys=True, default=str).encode())
        for image in ex.images:
            h.update(hashlib.sha256(image).digest())
    return h.hexdigest()


def build_key(config: dict[str, Any], seed: int, examples: Sequence[Example]) -> str:
    """The key of a build: its config, seed, warm-start rows, code and library versions."""
    h = hashlib.sha256()
    h.update(json.dumps({"config": config, "seed": seed, "torch": version("torch"),
                         "transformers": version("transformers")}, sort_keys=True).encode())
    h.update(examples_digest(examples).encode())
    for src in sorted(CODE.glob("*.py")):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()[:32]


def cached(cache_dir: str | Path, key: str, out: Path, meta_files: tuple[str, ...],
           build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``out`` copied from the cache entry ``key`` when there is one; else ``build()`` (which
    writes ``out`` and returns its metadata), then ``out`` kept as that entry. Returns the
    metadata of the folder now in ``out``; ``meta_files`` hold it (JSON), the first is read."""
    entry = Path(cache_dir) / key
    if (entry / meta_files[0]).is_file():
        tmp = out.with_name(f".{out.name}.cache-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(entry, tmp)
        meta = json.loads((tmp / meta_files[0]).read_text())
        meta["cache"] = {"key": key, "reused": str(entry)}
        for name in meta_files:
            (tmp / name).write_text(json.dumps(meta, indent=2))
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
        return meta
    meta = build()
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f".{key}.tmp-{os.getpid()}")  # whole entries only: copy, then rename
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(out, tmp)
    try:
        os.replace(tmp, entry)
    except OSError:  # another build of the same key got there first: the same files
        shutil.rmtree(tmp, ignore_errors=True)
    return meta
