"""Which code produced a result: recorded with every run so a number can be traced to a commit."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

from vade import __version__

__all__ = ["code_version"]


@lru_cache(maxsize=1)
def code_version() -> str:
    """``vade <version>+g<commit>[.dirty]`` inside a git checkout, else ``vade <version>``."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "vade"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"vade {__version__}"
    return f"vade {__version__}+g{commit}{'.dirty' if dirty else ''}"
