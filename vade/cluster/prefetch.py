"""Stage every hub asset a config names into one cache that GPU jobs read offline.

Why: every evaluation job loaded a 145 GB judge and hub-only benchmark datasets by hub id, up to
32 jobs at once, and lmms-eval's task YAMLs ask for a login token (``token: True``). Here each
asset is fetched once, on a node with network, into ``cluster.cache_dir`` laid out as
Hugging Face's own cache (``hub/``), so jobs with ``HF_HOME`` at it and ``HF_HUB_OFFLINE=1`` load
the same hub ids with no network and no token. Datasets are also *prepared* (``datasets/``):
offline, ``datasets.load_dataset(id, name)`` reads only a prepared copy, never the hub files
(checked against datasets 4.2: ``CachedDatasetModuleFactory``). A site whose nodes never see the
hub gives ``cluster.local_assets``, one folder per asset id, which is staged the same way.
``manifest.json`` records id, revision, commit, files with bytes and sha256; preflight reads it.
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
from vade.cluster.config import ClusterConfig
from vade.data.writer import file_sha256

__all__ = ["OFFLINE_VARS", "file_records", "prefetch", "prepare_dataset"]

OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")



def file_records(root: Path) -> list[dict[str, Any]]:
    """path (relative), bytes and sha256 of every file under ``root`` (symlinks followed: the
    hub cache links snapshot files to blobs)."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return [{"path": p.relative_to(root).as_posix(), "bytes": p.stat().st_size,
             "sha256": file_sha256(p)} for p in files]


def _repo_dir(hub: Path, asset: Asset) -> Path:
    from huggingface_hub.file_download import repo_folder_name

    return hub / repo_folder_name(repo_id=asset.id, repo_type=asset.repo_type)


def _local_snapshot(asset: Asset, src: Path, hub: Path) -> Path:
    """A local copy placed as the hub cache would hold it (``refs/<revision>`` -> a snapshot
    named by the content's digest), so jobs resolve the hub id offline exactly as after a
    download."""
    if not src.is_dir():
        raise FileNotFoundError(f"cluster.local_assets has no folder {src} for {asset.kind} "
                                f"{asset.id} (one folder per asset id)")
    records = file_records(src)
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
    return snap


def _config_files(snapshot: Path, name: str | None):
    """The data files of one dataset config: the card's ``configs:`` (what the hub uses), else
    a ``<name>/`` folder or the repository's own split layout."""
    from datasets.data_files import DataFilesDict, get_data_patterns, sanitize_patterns

    readme = snapshot / "README.md"
    if readme.is_file():
        from datasets.utils.metadata import MetadataConfigs
        from huggingface_hub import DatasetCard

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


def prefetch(config: Mapping[str, Any], *, download: Callable[..., str] | None = None,
             log: Callable[[str], None] = print) -> dict[str, Any]:
    """Stage every asset of ``config`` (``assets_of``); write and return the manifest.

    ``download`` is huggingface_hub's ``snapshot_download`` (tests pass a stand-in)."""
    cluster = ClusterConfig.from_config(config)
    cache = Path(cluster.cache_dir)
    hub, dcache = cache / "hub", cache / "datasets"
    hub.mkdir(parents=True, exist_ok=True)
    if download is None and cluster.local_assets is None:
        from huggingface_hub import snapshot_download as download
    entries = []
    for asset in assets_of(config):
        if cluster.local_assets is not None:
            snap = _local_snapshot(asset, Path(cluster.local_assets) / asset.id, hub)
            origin = f"local:{Path(cluster.local_assets) / asset.id}"
        else:
            snap = Path(download(repo_id=asset.id, repo_type=asset.repo_type,
                                 revision=asset.revision, cache_dir=str(hub),
                                 allow_patterns=list(asset.patterns) if asset.patterns else None))
            origin = "hub"
        commit = snap.name
        records = file_records(snap)
        prepared = prepare_dataset(asset, snap, commit, dcache) if asset.kind == "dataset" else []
        entries.append({"id": asset.id, "kind": asset.kind, "revision": asset.revision,
                        "commit": commit, "origin": origin, "stages": list(asset.stages),
                        "path": snap.relative_to(cache).as_posix(), "files": records,
                        "bytes": sum(r["bytes"] for r in records), "prepared": prepared})
        log(f"staged {asset.kind} {asset.id}@{commit[:12]}: {len(records)} files, "
            f"{entries[-1]['bytes'] / 1e9:.3f} GB ({origin})"
            + (f", prepared configs {prepared}" if prepared else ""))
    from vade.eval.official import stage  # benchmarks' official prompt files, pinned (GitHub)

    official = stage(config, cache, local=cluster.local_assets, log=log)
    manifest = {"cache_dir": str(cache), "assets": entries, "official": official}
    tmp = cache / "manifest.json.partial"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, cache / "manifest.json")
    return manifest
