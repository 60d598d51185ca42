"""Run histories written by the real ``RunStore``, for tests of what reads them (the per-run
tables of ``vade results``): a vanilla-like run whose trained groups and validation scores the
test chooses, so the numbers read back can be worked out by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from vade.sampling.observation import Observation
from vade.store import RunStore


def write_history(runs: Path, run_id: str, correct: Mapping[int, Sequence[int]], *,
                  indices: Mapping[int, Sequence[int]] | None = None, n_samples: int = 4,
                  val: Mapping[int, float] | None = None, rollouts: int = 8,
                  done: bool = True) -> Path:
    """``runs/<run_id>/history.duckdb``: at each step, the groups ``correct[step]`` (right
    rollouts of ``rollouts``) on items ``indices[step]`` (default 0, 1, ...); ``val``: the
    validation score logged at some steps (step 0 before the first); ``done``: write done.json
    (a complete run)."""
    run = runs / run_id
    run.mkdir(parents=True)
    method = run_id.rsplit("-s", 1)[0].split("-", 2)[2]
    val = dict(val or {})
    with RunStore(run / "history.duckdb", run_id) as store:
        store.start_run(method=method, sampler_config={"kind": "vanilla", "n_samples": n_samples,
                                                       "batch_size": len(correct[min(correct)])},
                        config={}, code_version="test")
        store.log_initial_state(None, None, n_samples=n_samples)
        if 0 in val:
            store.log_metrics(0, {"val/acc": val[0]})
        for step, right in correct.items():
            at = np.array(indices[step] if indices else range(len(right)))
            obs = Observation(step=step, indices=at, correct=np.array(right, float),
                              rollouts=np.full(len(right), float(rollouts)),
                              p_drawn=np.full(len(right), np.nan), gain=np.full(len(right), np.nan))
            store.log_step(obs, metrics={"val/acc": val[step]} if step in val else {})
    if done:
        (run / "done.json").write_text("{}")
    return run
