"""The file verl loads as its custom reward:
``custom_reward_function.path=<abs path of this file>``,
``custom_reward_function.name=compute_score``.

verl imports this file by path (``verl.utils.import_utils.load_module``), not as part of the
``vade`` package, so it only re-exports the real function. If ``vade`` is not importable in the
worker (not installed), the repository root two levels up is put on ``sys.path`` first.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from vade.rewards.api import compute_score
except ImportError:  # pragma: no cover - only when vade is not installed in the worker
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from vade.rewards.api import compute_score

__all__ = ["compute_score"]
