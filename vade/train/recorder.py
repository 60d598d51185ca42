"""One run's record: its DuckDB history (``vade.store.RunStore``) and its MLflow mirror.

Every trainer -- the local one, verl's curriculum sampler, the DAPO entry -- writes the same two
places, and they must agree: DuckDB is the record the report reads, MLflow the live view of it.
This module is where that pairing lives, so the step metrics have one definition and tracking
fails the same way everywhere: an MLflow error never stops training, because the DuckDB history
alone is complete. What could not be sent is kept in order and sent again, at most every
``RETRY_S`` seconds (a retry costs MLflow's bounded HTTP retries, ``vade.tracking``) and once more
at ``close``, so a server that goes away and comes back during a run loses nothing (issue 49:
before, the first error switched tracking off and 130 points never reached MLflow). What is
still unsent when the process ends is in DuckDB, and the next run of the folder backfills it
(``vade.train.local.start``). One line says when sending stops and one when it resumes.

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
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from vade.sampling.observation import Observation
from vade.tracking import NullTracker, Tracker

if TYPE_CHECKING:  # DuckDB is imported by whoever opens the store
    from vade.store import RunStore

__all__ = ["RunRecorder", "reopen_by_name", "step_metrics"]

log = logging.getLogger(__name__)
RETRY_S = 30.0  # how often an unreachable server is tried again while training goes on


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
        self._pending: list[Callable[[NullTracker], Any]] = []  # unsent, in order
        self._retry_at = 0.0  # monotonic time of the next try after an error
        self._down = False    # the last try failed (the line saying so was written)

    @property
    def run_id(self) -> str | None:
        """The MLflow run's id, once one is open."""
        return None if self.tracker is None else self.tracker.run_id

    def _guard(self, work: Callable[[NullTracker], Any], *, open_run: bool) -> None:
        """Run ``work`` on the tracker (opening a ``reopen_by_name`` run when ``open_run``), after
        what is still unsent; on an error keep it for later (module doc)."""
        if not self.tracking or (self.tracker is None and not open_run):
            return
        self._pending.append(work)
        if time.monotonic() >= self._retry_at:
            self._send()

    def _send(self) -> bool:
        """Send what is pending, in order; False (and a later retry) on an error."""
        from mlflow.exceptions import MlflowException  # lazy: the cpu/workflow extra, seconds to load

        try:
            if self.tracker is None:
                self.tracker = self._open()  # type: ignore[misc]
            while self._pending:
                try:
                    self._pending[0](self.tracker)
                except MlflowException as exc:
                    if not 400 <= exc.get_http_status_code() < 500:
                        raise
                    log.warning("MLflow refused a value, which is left out: %s",
                                str(exc).splitlines()[0][:300])
                self._pending.pop(0)
        except Exception as exc:  # noqa: BLE001 - tracking must not stop training
            if not self._down:
                self._down = True
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                log.warning("MLflow unreachable (%s): training goes on; its metrics are kept "
                            "and sent when the server answers (the history has them all)", first)
            self._retry_at = time.monotonic() + RETRY_S
            return False
        if self._down:
            log.warning("MLflow answers again: the kept metrics were sent")
        self._down, self._retry_at = False, 0.0
        return True

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

    def backfill(self, by_step: Mapping[int, Mapping[str, float]]) -> int:
        """Log the history's points (``{step: {name: value}}``) the MLflow run lacks; how many
        were logged (0 when the server does not answer: they stay for a later run)."""
        sent: list[int] = []
        self._guard(lambda t: sent.append(t.backfill(by_step)), open_run=False)
        return sent[0] if sent else 0

    @property
    def unsent(self) -> int:
        """How many MLflow calls are still waiting for the server."""
        return len(self._pending)

    def close(self, status: str | None = None) -> None:
        """Close the history; end the MLflow run with ``status`` only when this process owns it
        (the local trainer), never verl's (``status`` None). What is unsent is tried once more;
        if the server still does not answer, one line says the next run backfills it."""
        try:
            self._retry_at = 0.0  # one last try, however recent the last one was
            if status is not None:
                self._guard(lambda t: t.close(status), open_run=False)
            elif self._pending:
                self._send()
            if self._pending:
                log.warning("MLflow still unreachable at the end: %d call(s) not sent; the "
                            "history holds every metric, and rerunning the run backfills them",
                            len(self._pending))
        finally:
            self.store.close()
