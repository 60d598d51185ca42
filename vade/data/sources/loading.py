"""Open one source as a ``datasets.Dataset``: local files first, then a datasets cache, then the hub.

Offline machines (this one) cannot reach the hub, so the builder reads a local copy laid out like
the hub repository (what ``huggingface-cli download --local-dir`` produces):
``<local_dir>/<repo>/<config>/train-*.parquet`` (LLaVA-OneVision) or
``<local_dir>/<repo>/data/train-*.parquet`` (ChartQA, ScienceQA); a ``save_to_disk`` folder at
``<local_dir>/<repo>[/<config>]`` works too. When nothing is found the error says what to download
and where to put it. Images are read undecoded (``Image(decode=False)``) so the builder validates
and keeps the original bytes itself.

Provenance (recorded per source in the manifest): ``origin`` says where the rows were read
(``local_dir``, ``prefetch:hub``, ``prefetch:local:<folder>``, ``cache``, ``hub``), ``commit`` the
hub commit of that copy where it can be known (the prefetch manifest; the metadata
``huggingface-cli download --local-dir`` leaves in ``.cache/huggingface/download``; a hub-cache
snapshot path), ``revision`` the revision that was asked for, and ``content`` a sha256 over a
local copy's files (what the copy is, when no commit says it).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from vade.data.sources import SourceSpec
from vade.data.writer import files_sha256

__all__ = ["download_hint", "load_source", "local_root"]

_SNAPSHOT = re.compile(r"snapshots/([0-9a-f]{40})/")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def local_root(spec: SourceSpec, local_dir: str | Path) -> Path:
    root = Path(local_dir) / spec.repo
    return root / spec.config if spec.config else root


def download_hint(spec: SourceSpec, local_dir: str | None) -> str:
    where = local_dir or "<data.paper.local_dir>"
    include = f" --include '{spec.config}/*'" if spec.config else " --include 'data/*'"
    return (f"download it on a machine with network access: `huggingface-cli download {spec.repo} "
            f"--repo-type dataset{include} --local-dir {where}/{spec.repo}` and copy the folder "
            f"here (then set data.paper.local_dir), or point data.paper.cache_dir at a datasets "
            f"cache holding load_dataset({spec.repo!r}"
            + (f", {spec.config!r}" if spec.config else "") + f", split={spec.split!r})")


def _split_files(root: Path, split: str) -> list[Path]:
    """``<split>-00000-of-00001.parquet`` or ``<split>/*.parquet`` ("test" never reads "testmini")."""
    named = re.compile(rf"^{re.escape(split)}(?:[-_.]|$)")
    return sorted(p for p in root.rglob("*.parquet")
                  if ".cache" not in p.relative_to(root).parts
                  and (named.match(p.name) or p.parent.name == split))


def _undecoded(ds: Any) -> Any:
    """Image columns as {bytes, path} dicts (no PIL decode): the builder checks them itself."""
    import datasets  # lazy: the cpu extra, seconds to load

    for name, feature in ds.features.items():
        if isinstance(feature, datasets.Image) and feature.decode:
            ds = ds.cast_column(name, datasets.Image(decode=False))
    return ds


def _snapshot_commit(files: list[Path]) -> str | None:
    """The commit of a hub-cache snapshot the files resolve into (a copy made by symlinks)."""
    for f in files:
        m = _SNAPSHOT.search(str(f.resolve()))
        if m:
            return m.group(1)
    return None


def _local_dir_commit(repo_root: Path, files: list[Path]) -> str | None:
    """The hub commit ``huggingface-cli download --local-dir`` recorded for these files (one
    commit for all of them), or None when the copy was made some other way."""
    try:
        # lazy: the cpu extra (hub access)
        from huggingface_hub._local_folder import read_download_metadata
    except ImportError:  # pragma: no cover - huggingface_hub moved it
        return None
    commits = set()
    for f in files:
        meta = read_download_metadata(repo_root, f.relative_to(repo_root).as_posix())
        if meta is None or not _COMMIT.match(meta.commit_hash):
            return None
        commits.add(meta.commit_hash)
    return commits.pop() if len(commits) == 1 else None


def _prefetch_entry(repo: str) -> dict[str, Any] | None:
    """This repository's entry in the manifest ``vade prefetch`` wrote into the staged cache
    (``$HF_HOME/manifest.json``): the revision asked for, the commit staged and where from."""
    home = os.environ.get("HF_HOME")
    path = Path(home) / "manifest.json" if home else None
    if path is None or not path.is_file():
        return None
    try:
        assets = json.loads(path.read_text()).get("assets", [])
    except (json.JSONDecodeError, AttributeError):
        return None
    return next((a for a in assets if isinstance(a, dict) and a.get("id") == repo), None)


def _cache_provenance(spec: SourceSpec, ds: Any, use_hub: bool) -> dict[str, Any]:
    """Where a ``load_dataset`` copy came from: the prefetch manifest when the cache was staged
    by ``vade prefetch``, else the commit in the prepared copy's cache path."""
    entry = _prefetch_entry(spec.repo)
    if entry is not None:
        return {"origin": f"prefetch:{entry.get('origin', '?')}",
                "revision": entry.get("revision"), "commit": entry.get("commit")}
    import datasets  # lazy: the cpu extra, seconds to load

    files = [Path(f["filename"]) for f in getattr(ds, "cache_files", []) or []]
    commit = next((part for f in files for part in f.parts if _COMMIT.match(part)), None)
    online = use_hub and not datasets.config.HF_HUB_OFFLINE   # offline: a cached copy
    return {"origin": "hub" if online else "cache", "revision": None, "commit": commit}


def load_source(spec: SourceSpec, *, local_dir: str | None, cache_dir: str | None,
                use_hub: bool) -> tuple[Any, dict[str, Any]]:
    """(dataset with undecoded images, provenance dict for the manifest)."""
    import datasets  # lazy: the cpu extra, seconds to load

    tried: list[str] = []
    if local_dir:
        root = local_root(spec, local_dir)
        if root.is_dir():
            if (root / "state.json").is_file() or (root / "dataset_dict.json").is_file():
                ds = datasets.load_from_disk(str(root))
                if isinstance(ds, datasets.DatasetDict):
                    if spec.split not in ds:
                        raise FileNotFoundError(f"{spec.label}: {root} holds splits "
                                                f"{sorted(ds)}, not {spec.split!r}")
                    ds = ds[spec.split]
                files = sorted(root.rglob("*.arrow"))
                return _undecoded(ds), {"origin": "local_dir", "path": str(root), "revision": None,
                                        "commit": _snapshot_commit(files),
                                        "content": "sha256:" + files_sha256(files)}
            files = _split_files(root, spec.split)
            if files:
                ds = datasets.load_dataset("parquet", data_files=[str(f) for f in files],
                                           split="train", cache_dir=cache_dir)
                repo_root = Path(local_dir) / spec.repo
                return _undecoded(ds), {"origin": "local_dir", "path": str(root),
                                        "files": [str(f.relative_to(root)) for f in files],
                                        "revision": None,
                                        "commit": (_local_dir_commit(repo_root, files)
                                                   or _snapshot_commit(files)),
                                        "content": "sha256:" + files_sha256(files)}
            tried.append(f"{root} has no '{spec.split}*.parquet' file or save_to_disk folder")
        else:
            tried.append(f"no folder {root}")
    if cache_dir or use_hub:
        try:
            ds = datasets.load_dataset(spec.repo, spec.config, split=spec.split,
                                       cache_dir=cache_dir)
        except Exception as exc:  # noqa: BLE001  (offline/missing cache: several types)
            tried.append(f"load_dataset failed ({type(exc).__name__}: {str(exc)[:200]})")
        else:
            return _undecoded(ds), _cache_provenance(spec, ds, use_hub)
    tried_text = "; ".join(tried) or "no data.paper.local_dir or cache_dir configured"
    raise FileNotFoundError(f"source {spec.label} (task {spec.task}) not found: {tried_text}. "
                            + download_hint(spec, local_dir))
