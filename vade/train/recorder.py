"""One run's record: its DuckDB history (``vade.store.RunStore``) and its MLflow mirror.

Every trainer -- the local one, verl's curriculum sampler, the DAPO entry -- writes the same two
places, and they must agree: DuckDB is the record the report reads, MLflow the live view of it.
This module is where that pairing lives, so the step metrics have one definition and tracking
fails the same way everywhere: an MLflow error is logged and switches tracking off for the rest
of the run; it never stops training, because the DuckDB history alone is complete.

How the MLflow run is opened depends on who owns it:

* the local trainer owns its run: it opens it up front (``vade.tracking.open_tracker``, mode
  ``new`` or ``resume``) and ends it with the run's status;
* under verl, verl's own MLflow logger owns the run (same experiment, run name = run id): it only
  exists once verl has logged, so ``reopen_by_name`` opens it at the first step's metrics, and
  ``RunRecorder.close`` leaves its status alone.

Nothing here imports torch or verl.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from vade.sampling.observation import Observation
from vade.tracking import NullTracker, Tracker

if TYPE_CHECKING:  # DuckDB is imported by whoever opens the store
    from vade.store import RunStore

__all__ = ["RunRecorder", "reopen_by_name", "step_metrics"]

log = logging.getLogger(__name__)


def step_metrics(obs: Observation, *, rollouts: float, sampler_seconds: float
                 ) -> dict[str, float]:
    """The ``vade/*`` metrics every backend logs for a step, so curves compare across them.

    ``rollouts`` is what the step generated, which a filtering method (DAPO) makes larger than
    what it observed.
    """
    return {"vade/effective_ratio": obs.effective_ratio,
            "vade/mean_accuracy": obs.mean_accuracy,
            "vade/rollouts": float(rollouts),
            "vade/n_selected": float(obs.indices.size),
            "vade/sampler_seconds": sampler_seconds}


def reopen_by_name(uri: str | None, experiment: str | None, run_name: str
                   ) -> Callable[[], NullTracker] | None:
    """Under verl: open verl's MLflow run of the same name when the first metrics come. By then
    verl has created it, and ``vade.tracking`` reopens it instead of creating a twin. ``None``
    (no tracking) without a URI."""
    if not uri:
        return None

    def open_verl_run() -> NullTracker:
        return Tracker(uri, experiment or "vade", run_name)

    return open_verl_run


class RunRecorder:
    """A run's ``RunStore`` (``store``) and its guarded MLflow tracker.

    ``tracker`` is an open tracker, a zero-argument function that opens one at the first metrics
    (``reopen_by_name``), or ``None`` (no tracking).
    """

    def __init__(self, store: RunStore,
                 tracker: NullTracker | Callable[[], NullTracker] | None = None) -> None:
        self.store = store
        self.tracker: NullTracker | None = tracker if isinstance(tracker, NullTracker) else None
        self._open = None if isinstance(tracker, NullTracker) else tracker
        self.tracking = tracker is not None

    @property
    def run_id(self) -> str | None:
        """The MLflow run's id, once one is open."""
        return None if self.tracker is None else self.tracker.run_id

    def _guard(self, work: Callable[[NullTracker], Any], *, open_run: bool) -> None:
        if not self.tracking or (self.tracker is None and not open_run):
            return
        try:
            if self.tracker is None:
                self.tracker = self._open()  # type: ignore[misc]
            work(self.tracker)
        except Exception as exc:  # noqa: BLE001 - tracking must not stop training
            log.warning("MLflow logging disabled after error: %s", exc)
            self.tracking = False

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """MLflow only (DuckDB rows go through ``store``); opens a ``reopen_by_name`` run."""
        self._guard(lambda t: t.log_metrics(metrics, step), open_run=True)

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Params of an open run (a run is never opened just for them)."""
        self._guard(lambda t: t.log_params(params), open_run=False)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        """Tags of an open run (a run is never opened just to tag it)."""
        self._guard(lambda t: t.set_tags(tags), open_run=False)

    def log_step(self, obs: Observation, metrics: Mapping[str, float], *,
                 sampler_seconds: float | None = None, rollouts_generated: int | None = None,
                 state: Any = None, store_metrics: Mapping[str, float] | None = None) -> None:
        """Step ``obs.step`` into DuckDB (replacing a replayed step's rows), then MLflow.

        The DuckDB ``metrics`` rows are ``store_metrics`` when given, else ``metrics``.
        """
        self.store.log_step(obs, sampler_seconds=sampler_seconds,
                            rollouts_generated=rollouts_generated,
                            metrics=metrics if store_metrics is None else store_metrics,
                            state=state)
        self.log_metrics(metrics, int(obs.step))

    def close(self, status: str | None = None) -> None:
        """Close the history; end the MLflow run with ``status`` only when this process owns it
        (the local trainer), never verl's (``status`` None)."""
        try:
            if status is not None:
                self._guard(lambda t: t.close(status), open_run=False)
        finally:
            self.store.close()
