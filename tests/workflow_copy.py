"""A clean copy of the repository in a temporary folder: what a fresh clone holds, nothing else.

Tests that run Snakemake (dry runs, the tiny pipeline, lint) work in such a copy, so their result
never depends on, and never changes, what a user's own runs left in the checkout (``make demo``
then ``make test`` in one clone). The copy holds the files git tracks or would track (the
working-tree version, so uncommitted edits and new files are tested too); without git (an
unpacked archive) it holds the top-level entries a clone has.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a clone holds when git is not there to say (pipeline outputs are never part of it).
TOP_LEVEL = (".ci", "Makefile", "README.md", "Snakefile", "config", "docs", "envs", "pyproject.toml",
             "requirements", "slurm", "tests", "vade", "workflow", "data/README.md",
             "reports/README.md")


def tracked_files(root: Path = ROOT) -> list[str] | None:
    """Paths git tracks or would track (relative, in the working tree); None without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=root, capture_output=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    files = [p for p in out.decode().split("\0") if p and (root / p).is_file()]
    return files or None


def clean_copy(dest: Path, root: Path = ROOT) -> Path:
    """Copy the repository's own files (no outputs, no venv, no caches) to ``dest``; returns it."""
    dest.mkdir(parents=True, exist_ok=True)
    files = tracked_files(root)
    if files is None:
        for entry in TOP_LEVEL:
            src = root / entry
            if src.is_dir():
                shutil.copytree(src, dest / entry, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            elif src.is_file():
                (dest / entry).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / entry)
        return dest
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    return dest
