"""Stage every hub asset a config names into one cache that GPU jobs read offline.

Why: every evaluation job loaded a 145 GB judge and hub-only benchmark datasets by hub id, up to
32 jobs at once, and lmms-eval's task YAMLs ask for a login token (``token: True``). Here each
asset is fetched once, on a node with network, into ``cluster.cache_dir`` laid out as
Hugging Face's own cache (``hub/``), so jobs with ``HF_HOME`` at it and ``HF_HUB_OFFLINE=1`` load
the same hub ids with no network and no token. Datasets are also *prepared* (``datasets/``):
offline, ``datasets.load_dataset(id, name)`` reads only a prepared copy, never the hub files
(checked against datasets 4.2: ``CachedDatasetModuleFactory``). A site whose nodes never see the
hub gives ``cluster.local_assets``, one folder per asset id, which is staged the same way.
``manifest.json`` records id, revision, commit and files with bytes; preflight reads it. A hub
download's files are listed from huggingface_hub's own cache scan (``scan_cache_dir``: sizes,
and the blob name, which is the file's sha256 for LFS files), not re-read: a rerun over a
170 GB cache reads nothing. Local copies are hashed once, to name their snapshot, and again only
where a file's size or modification time changed (``vade.content_digest.HashManifest``).

Failures are one line (``PrefetchError``) naming the asset and the alternative: a cache that
cannot be written, a disk without room for what is about to be staged (checked first, from the
hub's file sizes), a hub that cannot be reached (``cluster.local_assets``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vade.cluster.assets import Asset, assets_of
from vade.content_digest import HashManifest
from vade.data.writer import file_sha256
from vade.eval.official import stage  # benchmarks' official prompt files, pinned (GitHub)
from vade.job.config import ClusterConfig
from vade.job.revisions import write_lock

__all__ = ["OFFLINE_VARS", "PrefetchError", "cache_records", "check_room", "check_writable",
           "file_records", "hub_bytes", "prefetch", "prepare_dataset"]

OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
LOCAL_HASHES = "local-assets.json"   # size, mtime and sha256 of each local file (hashes.py)
LOCAL_HINT = ("on a node that cannot reach the hub, put a copy of each asset in "
              "cluster.local_assets (one folder per asset id)")


class PrefetchError(ValueError):
    """Staging failed: one line naming the asset or the cache, and what to do (the CLI prints
    a ValueError as one line)."""


def check_writable(cache: Path) -> None:
    """The cache folder exists and takes a file (``datasets`` also writes lock files there)."""
    probe = cache / f".vade-write-test-{os.getpid()}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise PrefetchError(f"cluster.cache_dir {cache} is not writable ({exc.strerror or exc}): "
                            "point cluster.cache_dir at a folder this user can write") from None


def check_room(cache: Path, need: int, min_free_gb: float,
               free: Callable[[Path], int] | None = None) -> None:
    """Refuse before staging when the disk under ``cache`` lacks ``need`` bytes plus
    ``cluster.min_free_gb``."""
    have = (free or (lambda p: shutil.disk_usage(p).free))(cache)
    want = need + min_free_gb * 1e9
    if have < want:
        raise PrefetchError(f"cluster.cache_dir {cache} has {have / 1e9:.1f} GB free, prefetch "
                            f"stages {need / 1e9:.1f} GB (+ cluster.min_free_gb "
                            f"{min_free_gb:g}): free space there or move cluster.cache_dir")


def hub_bytes(asset: Asset) -> int:
    """Bytes of the files ``asset`` fetches, from the hub's listing (one call, no download)."""
    from huggingface_hub import HfApi  # lazy: the cpu extra (hub access)
    from huggingface_hub.utils import filter_repo_objects  # lazy: the cpu extra (hub access)

    api = HfApi()
    info = (api.model_info if asset.kind == "model" else api.dataset_info)(
        asset.id, revision=asset.revision, files_metadata=True)
    files = {s.rfilename: s.size or 0 for s in info.siblings or []}
    keep = filter_repo_objects(files, allow_patterns=list(asset.patterns) if asset.patterns
                               else None)
    return sum(files[f] for f in keep)


def cache_records(hub: Path, asset: Asset, commit: str) -> list[dict[str, Any]] | None:
    """path, bytes and blob (the cache's content key: sha256 for LFS files) of a downloaded
    snapshot, from ``huggingface_hub.scan_cache_dir``; None when the scan does not list it."""
    from huggingface_hub import scan_cache_dir  # lazy: the cpu extra (hub access)

    info = scan_cache_dir(hub)
    for repo in info.repos:
        if repo.repo_id != asset.id or repo.repo_type != asset.repo_type:
            continue
        for rev in repo.revisions:
            if rev.commit_hash == commit:
                return sorted(({"path": f.file_path.relative_to(rev.snapshot_path).as_posix(),
                                "bytes": f.size_on_disk, "blob": f.blob_path.name}
                               for f in rev.files), key=lambda r: r["path"])
    return None



def file_records(root: Path) -> list[dict[str, Any]]:
    """path (relative), bytes and sha256 of every file under ``root`` (symlinks followed: the
    hub cache links snapshot files to blobs)."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return [{"path": p.relative_to(root).as_posix(), "bytes": p.stat().st_size,
             "sha256": file_sha256(p)} for p in files]


def _repo_dir(hub: Path, asset: Asset) -> Path:
    from huggingface_hub.file_download import repo_folder_name  # lazy: the cpu extra (hub access)

    return hub / repo_folder_name(repo_id=asset.id, repo_type=asset.repo_type)


def _local_snapshot(asset: Asset, src: Path, hub: Path,
                    hashes: HashManifest) -> tuple[Path, list[dict[str, Any]]]:
    """A local copy placed as the hub cache would hold it (``refs/<revision>`` -> a snapshot
    named by the content's digest), so jobs resolve the hub id offline exactly as after a
    download; and its files' records (hashed only where ``hashes`` has not seen the file at its
    size and mtime; the staged copy is made from them, so it is not hashed again)."""
    if not src.is_dir():
        raise FileNotFoundError(f"cluster.local_assets has no folder {src} for {asset.kind} "
                                f"{asset.id} (one folder per asset id)")
    records = hashes.records(src)
    if not records:
        raise FileNotFoundError(f"{src} (local copy of {asset.id}) holds no file")
    digest = hashlib.sha256("".join(f"{r['path']}:{r['sha256']}\n" for r in records).encode())
    commit = digest.hexdigest()[:40]
    repo = _repo_dir(hub, asset)
    snap = repo / "snapshots" / commit
    if not snap.is_dir():
        tmp = snap.with_name(commit + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        tmp.rename(snap)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / asset.revision).write_text(commit)
    return snap, records


def _config_files(snapshot: Path, name: str | None):
    """The data files of one dataset config: the card's ``configs:`` (what the hub uses), else
    a ``<name>/`` folder or the repository's own split layout."""
    # lazy: the cpu extra, seconds to load
    from datasets.data_files import DataFilesDict, get_data_patterns, sanitize_patterns

    readme = snapshot / "README.md"
    if readme.is_file():
        from datasets.utils.metadata import MetadataConfigs  # lazy: the cpu extra, seconds to load
        from huggingface_hub import DatasetCard  # lazy: the cpu extra (hub access)

        configs = MetadataConfigs.from_dataset_card_data(DatasetCard.load(readme).data)
        key = name or configs.get_default_config_name() or "default"
        if key in configs:
            return DataFilesDict.from_patterns(sanitize_patterns(configs[key]["data_files"]),
                                               base_path=str(snapshot))
    base = snapshot / name if name and (snapshot / name).is_dir() else snapshot
    return DataFilesDict.from_patterns(get_data_patterns(str(base)), base_path=str(base))


def prepare_dataset(asset: Asset, snapshot: Path, commit: str, datasets_cache: Path) -> list:
    """Prepare each config of a staged dataset in the datasets cache under its hub id, as
    ``load_dataset(id, name)`` online would, so that it loads offline (and with no token)."""
    # lazy: the cpu extra, seconds to load
    from datasets.packaged_modules.parquet.parquet import Parquet, ParquetConfig

    done = []
    for name in asset.configs:
        files = _config_files(snapshot, name)
        bad = [f for split in files.values() for f in split if not str(f).endswith(".parquet")]
        if bad or not files:
            raise ValueError(f"dataset {asset.id} config {name!r}: "
                             + (f"{bad[0]} is not parquet" if bad else "no data files found")
                             + f" in {snapshot}; prepare it with datasets.load_dataset by hand")
        config_name = name or "default"
        builder_cls = type("StagedParquet", (Parquet,), {
            "BUILDER_CONFIGS": [ParquetConfig(name=config_name, data_files=files)]})
        builder = builder_cls(cache_dir=str(datasets_cache), dataset_name=asset.id.split("/")[-1],
                              repo_id=asset.id, hash=commit, config_name=config_name)
        builder.download_and_prepare()
        done.append(name)
    return done


def _stage(asset: Asset, cluster: ClusterConfig, hub: Path, dcache: Path,
           download: Callable[..., str] | None) -> dict[str, Any]:
    """One asset into the cache: its manifest entry."""
    cache = Path(cluster.cache_dir)
    records: list[dict[str, Any]] | None
    if cluster.local_assets is not None:
        hashes = HashManifest(cache / LOCAL_HASHES)
        snap, records = _local_snapshot(asset, Path(cluster.local_assets) / asset.id, hub,
                                        hashes)
        hashes.save()
        origin = f"local:{Path(cluster.local_assets) / asset.id}"
    else:
        try:
            snap = Path(download(repo_id=asset.id, repo_type=asset.repo_type,
                                 revision=asset.revision, cache_dir=str(hub),
                                 allow_patterns=list(asset.patterns) if asset.patterns
                                 else None))
        except Exception as exc:  # noqa: BLE001  (any hub failure: one line naming the asset)
            raise PrefetchError(f"{asset.kind} {asset.id}@{asset.revision} could not be "
                                f"downloaded ({type(exc).__name__}: {str(exc)[:200]}); "
                                f"{LOCAL_HINT}") from None
        origin = "hub"
        records = cache_records(hub, asset, snap.name)
    commit = snap.name
    if records is None:
        records = file_records(snap)
    prepared = prepare_dataset(asset, snap, commit, dcache) if asset.kind == "dataset" else []
    return {"id": asset.id, "kind": asset.kind, "revision": asset.revision,
            "commit": commit, "origin": origin, "stages": list(asset.stages),
            "path": snap.relative_to(cache).as_posix(), "files": records,
            "bytes": sum(r["bytes"] for r in records), "prepared": prepared}


def prefetch(config: Mapping[str, Any], *, download: Callable[..., str] | None = None,
             log: Callable[[str], None] = print,
             sizes: Callable[[Asset], int] | None = None,
             free: Callable[[Path], int] | None = None) -> dict[str, Any]:
    """Stage every asset of ``config`` (``assets_of``); write and return the manifest.

    ``download`` is huggingface_hub's ``snapshot_download``, ``sizes`` an asset's bytes
    (default: the hub's listing, or the local folder's), ``free`` the free bytes under a path
    (tests pass stand-ins for the hub and the disk)."""
    cluster = ClusterConfig.from_config(config)
    cache = Path(cluster.cache_dir)
    hub, dcache = cache / "hub", cache / "datasets"
    check_writable(hub)
    local = cluster.local_assets
    if download is None and local is None:
        # lazy: the cpu extra (hub access)
        from huggingface_hub import snapshot_download as download

        sizes = sizes or hub_bytes
    assets = assets_of(config)
    if local is not None:
        sizes = sizes or (lambda a: sum(p.stat().st_size for p in
                                        (Path(local) / a.id).rglob("*") if p.is_file()))
    if sizes is not None:
        need = 0
        for asset in assets:
            try:
                n = sizes(asset)
            except FileNotFoundError:
                n = 0   # a missing local folder is named when it is staged
            except Exception as exc:  # noqa: BLE001  (the hub's answer, one line)
                raise PrefetchError(f"{asset.kind} {asset.id}@{asset.revision}: listing its "
                                    f"files on the hub failed ({type(exc).__name__}: "
                                    f"{str(exc)[:200]}); {LOCAL_HINT}") from None
            repo = _repo_dir(hub, asset)   # a rerun: what is staged already needs no room
            present = sum(f.stat().st_size for f in repo.rglob("*")
                          if f.is_file() and not f.is_symlink()) if repo.is_dir() else 0
            need += max(0, n - present) * (2 if asset.kind == "dataset" else 1)  # + prepared
        check_room(cache, need, cluster.min_free_gb, free)
    entries = []
    for asset in assets:
        try:
            entries.append(_stage(asset, cluster, hub, dcache, download))
        except (PrefetchError, FileNotFoundError):
            raise
        except (OSError, shutil.Error) as exc:
            free_gb = shutil.disk_usage(cache).free / 1e9
            why = (exc.args[0][0][2] if isinstance(exc, shutil.Error) and exc.args
                   and isinstance(exc.args[0], list) and exc.args[0] else str(exc))
            raise PrefetchError(f"staging {asset.kind} {asset.id} into cluster.cache_dir {cache} "
                                f"failed ({str(why)[:200]}); {free_gb:.1f} GB free there"
                                ) from None
        e = entries[-1]
        log(f"staged {asset.kind} {asset.id}@{e['commit'][:12]}: {len(e['files'])} files, "
            f"{e['bytes'] / 1e9:.3f} GB ({e['origin']})"
            + (f", prepared configs {e['prepared']}" if e["prepared"] else ""))
    if cluster.revisions_lock:   # resolve once, pin after: hub commits only (a local copy's
        # snapshot name is its content digest, not a hub commit)
        resolved = {e["id"]: e["commit"] for e in entries if e["origin"] == "hub"}
        if resolved:
            write_lock(cluster.revisions_lock, resolved)
            log(f"recorded {len(resolved)} resolved commit(s) in {cluster.revisions_lock} "
                "(cluster.revisions_lock): commit that file; build-data and every later "
                "prefetch read them")
    official = stage(config, cache, local=cluster.local_assets, log=log)
    manifest = {"cache_dir": str(cache), "assets": entries, "official": official}
    tmp = cache / "manifest.json.partial"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, cache / "manifest.json")
    return manifest
