"""Node-local scratch for what jobs write beside the shared cache: file locks and cache files.

Why: ``datasets`` takes a file lock beside each prepared dataset it loads, and lmms-eval may
write cache files there. On a network file system those locks are slow or fail, which is why
lmms-eval moves its datasets cache to node-local scratch by itself, but only when its cache is
not set explicitly, and then it finds nothing prepared there (the jobs run offline). So each
evaluation job gets a node-local mirror of the shared ``datasets/`` folder: its directories
recreated, its files linked (nothing is copied), and whatever is written lands on this node.
``vade preflight`` builds it before the job's command; ``job_env`` points lmms-eval at it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["local_datasets_cache", "mirror_tree"]


def local_datasets_cache(scratch_dir: str, shared_home: Path) -> str:
    """The mirror's path for a cache, as a template with ``${USER}`` (lmms-eval expands
    variables in ``LMMS_EVAL_DATASETS_CACHE``; so does :func:`mirror_tree`'s caller)."""
    tag = hashlib.sha256(str(shared_home).encode()).hexdigest()[:8]
    return f"{scratch_dir.rstrip('/')}/vade-datasets-${{USER}}-{tag}"


def mirror_tree(shared: Path, local: Path) -> int:
    """``local`` holding ``shared``'s directories and a link to each of its files (locks
    excluded); returns the links made. Idempotent: existing entries are kept."""
    made = 0
    for root, _, files in os.walk(shared):
        here = local / Path(root).relative_to(shared)
        here.mkdir(parents=True, exist_ok=True)
        for name in files:
            if name.endswith(".lock"):
                continue
            dst = here / name
            if not dst.exists() and not dst.is_symlink():
                dst.symlink_to(Path(root) / name)
                made += 1
    return made
