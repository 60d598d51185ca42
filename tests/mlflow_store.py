"""A new, empty MLflow store for a test, copied from one made once per test process.

Why: MLflow makes a new ``sqlite:///`` store by running its schema migrations, about 1-2 s on
this machine, and many tests want a store of their own (a run folder's MLflow run, a report's
metrics). A byte copy of an empty store made once is the same database (tables, alembic version,
default experiment) and costs milliseconds. Everything the tests then do with it is MLflow's own.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_EMPTY: Path | None = None


def _empty_store() -> Path:
    global _EMPTY
    if _EMPTY is None:
        from mlflow.tracking import MlflowClient

        folder = Path(tempfile.mkdtemp(prefix="vade-mlflow-empty-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "empty.db"
        MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()  # migrates
        _EMPTY = path
    return _EMPTY


def fresh_store(path: Path) -> str:
    """The ``sqlite:///`` URI of an MLflow store at ``path``: an empty one when nothing is
    there yet, else the store already there (a test's second run reads its first one's)."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_empty_store(), path)
    return f"sqlite:///{path}"
