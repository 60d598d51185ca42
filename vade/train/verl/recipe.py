"""Where verl-recipe (the DAPO trainer) comes from: a pinned commit, checked out as ``recipe``.

verl-recipe is not on PyPI and cannot be pip-installed: its ``pyproject.toml`` declares the
distribution name ``verl`` (it is meant to be a git submodule at ``verl/recipe``), so installing
it would overwrite verl itself. Its code is imported as the namespace package ``recipe``
(``recipe.dapo.main_dapo`` uses relative imports). So the GPU environment checks it out into
``<dir>/recipe`` at the pinned commit and puts ``<dir>`` on ``PYTHONPATH``; ``launch`` does the
latter. ``python -m vade.train.verl.recipe [DIR]`` performs the checkout (needs network: run it
on a login node once; compute nodes only read it).

Commit 8f9e7ac ("[dapo] fix: adapt to engine_workers and refactor to reuse main_ppo
TaskRunner", 2026-02-28) is the one that imports with verl 0.7.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["RECIPE_COMMIT", "RECIPE_REPO", "checkout", "default_dir", "locate"]

RECIPE_REPO = "https://github.com/verl-project/verl-recipe.git"
RECIPE_COMMIT = "8f9e7ac93acac57f6ef7e8dffa3de788d148a09a"
ENV_VAR = "VADE_VERL_RECIPE_DIR"


def default_dir() -> Path:
    """``$VADE_VERL_RECIPE_DIR``, else ``.verl-recipe`` in the working directory."""
    return Path(os.environ.get(ENV_VAR) or ".verl-recipe").resolve()


def locate(directory: Path | None = None) -> Path:
    """The directory to put on ``PYTHONPATH`` (it holds ``recipe/dapo/main_dapo.py``)."""
    base = Path(directory) if directory is not None else default_dir()
    if not (base / "recipe" / "dapo" / "main_dapo.py").is_file():
        raise FileNotFoundError(
            f"verl-recipe not found under {base}/recipe (needed for method dapo): run "
            f"`python -m vade.train.verl.recipe {base}` on a machine with network access, or "
            f"set {ENV_VAR}")
    return base


def checkout(directory: Path) -> Path:
    """Clone verl-recipe into ``directory/recipe`` at ``RECIPE_COMMIT`` (idempotent)."""
    target = Path(directory) / "recipe"
    if not (target / ".git").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--filter=blob:none", RECIPE_REPO, str(target)],
                       check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "--detach", RECIPE_COMMIT], check=True)
    return locate(Path(directory))


if __name__ == "__main__":  # pragma: no cover - network
    print(checkout(Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()))
