"""The revisions lock: the hub commit each asset resolved to, written once, read ever after.

Why: ``data.paper.require_pinned`` refuses a build whose datasets are not pinned to hub commits,
but a commit can only be learned where the hub is reachable, and the shipped paper config was
written where it is not (``cluster.revisions: {}``). So, as a package manager's lock file does,
the first ``vade prefetch`` resolves each repository's revision (``main`` unless
``cluster.revisions`` names one) and records the commit it got in the file named by
``cluster.revisions_lock`` (the user commits it); every later prefetch downloads, and every
``vade build-data`` reads, exactly those commits. A commit written in ``cluster.revisions``
wins over the lock (and prefetch rewrites the lock's entry to it); a branch or tag there is only
what the first resolution starts from.

``vade plan``, the workflow's dry run and ``vade preflight`` name the repositories still without
a commit (``vade.cluster.assets.missing_pins``) and the one command that writes them (``resolve_command``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from vade.job.config import ClusterConfig

__all__ = ["COMMIT", "pinned_revisions", "read_lock", "resolve_command", "write_lock"]

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HEADER = ("# Hub commits `vade prefetch` resolved, one per repository (cluster.revisions_lock).\n"
           "# Commit this file: every later prefetch and build-data reads exactly these. Delete an\n"
           "# entry (or the file) and run `vade prefetch` again to resolve it anew.\n")


def read_lock(path: str | Path | None) -> dict[str, str]:
    """Repository id -> commit from the lock file; empty when there is none yet."""
    if path is None or not Path(path).is_file():
        return {}
    data = yaml.safe_load(Path(path).read_text()) or {}
    bad = [k for k, v in data.items() if not (isinstance(k, str) and isinstance(v, str)
                                               and COMMIT.match(v))] \
        if isinstance(data, dict) else ["(not a mapping)"]
    if bad:
        raise ValueError(f"cluster.revisions_lock {path}: entry {bad[0]!r} is not "
                         "'<repo id>: <40-hex commit>'; fix it or delete the line and run "
                         "`vade prefetch` again")
    return dict(data)


def write_lock(path: str | Path, resolved: Mapping[str, str]) -> dict[str, str]:
    """Merge ``resolved`` (id -> commit) into the lock file, atomically; the merged map."""
    path = Path(path)
    merged = {**read_lock(path), **{k: v for k, v in resolved.items() if COMMIT.match(v)}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(_HEADER + yaml.safe_dump(dict(sorted(merged.items())), sort_keys=True))
    os.replace(tmp, path)
    return merged


def pinned_revisions(config: Mapping[str, Any]) -> dict[str, str]:
    """The revision each asset id is read at: a commit in ``cluster.revisions``, else the lock's
    commit, else the revision ``cluster.revisions`` names (absent ids: ``main``)."""
    cluster = ClusterConfig.from_config(config)
    out = {**cluster.revisions, **read_lock(cluster.revisions_lock)}
    out.update({k: v for k, v in cluster.revisions.items() if COMMIT.match(v)})
    return out


def resolve_command(config: Mapping[str, Any], config_path: str = "<config>") -> str:
    """The one command that writes the missing pins, and where."""
    lock = ClusterConfig.from_config(config).revisions_lock
    where = (f"records the commit of each in {lock} (commit that file)" if lock else
             "stages them, but nothing records the commits: set cluster.revisions_lock "
             "(e.g. config/revisions.lock.yaml) first")
    return f"`vade prefetch --config {config_path}` on a node with network {where}"

