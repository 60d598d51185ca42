"""Preflight's cache checks: the shared cache takes the jobs' locks, and each evaluation job
reads it through a node-local mirror (``vade.job.scratch``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vade.cluster.assets import assets_of
from vade.cluster.prefetch import PrefetchError, check_writable
from vade.cluster.preflight_check import Check
from vade.job.config import ClusterConfig
from vade.job.scratch import mirror_tree

__all__ = ["check_cache_writable", "check_local_datasets"]


def check_cache_writable(config: Mapping[str, Any], stage: str) -> Check | None:
    """A stage that loads prepared datasets from the cache needs to write there: ``datasets``
    takes a file lock beside each prepared dataset (a read-only cache fails deep inside
    ``load_dataset``)."""
    if not any(a.kind == "dataset" and stage in a.stages for a in assets_of(config)):
        return None
    cache = Path(ClusterConfig.from_config(config).cache_dir)
    if not cache.is_dir():
        return None   # the asset checks name the missing cache
    try:
        check_writable(cache / "datasets")
    except PrefetchError as exc:
        return Check("cache writable", False, str(exc).split(": point")[0],
                     "make cluster.cache_dir writable for the jobs (datasets locks files there)")
    return Check("cache writable", True, f"{cache / 'datasets'} takes files (datasets' locks)")



def check_local_datasets(config: Mapping[str, Any],
                         environ: Mapping[str, str] | None = None) -> list[Check]:
    """Build this node's mirror of the staged datasets (``vade.job.scratch``) where
    ``LMMS_EVAL_DATASETS_CACHE`` points, so that locks stay on local disk."""
    env = os.environ if environ is None else environ
    target = env.get("LMMS_EVAL_DATASETS_CACHE")
    shared = Path(ClusterConfig.from_config(config).cache_dir) / "datasets"
    if not target or not shared.is_dir():
        return []
    local = Path(os.path.expandvars(target))
    if local.resolve() == shared.resolve():
        return [Check("datasets scratch", True, f"lmms-eval's datasets cache is the shared "
                                                f"{shared} (locks there)")]
    try:
        made = mirror_tree(shared, local)
    except OSError as exc:
        return [Check("datasets scratch", False, f"cannot build {local}: {exc}",
                      "set cluster.scratch_dir to a writable node-local folder")]
    return [Check("datasets scratch", True, f"{local}: node-local mirror of {shared} "
                                            f"({made} new links; locks stay on this node)")]
