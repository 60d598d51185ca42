"""A thin MLflow adapter: one run per training run, resumable, metrics with explicit steps.

Why an adapter: the trainer should not care whether tracking is on, which store it writes to
(a local ``sqlite:///`` file by default, a server URI on a cluster), or whether the process is a
resume. The MLflow UI must show what the DuckDB history holds, so how a run is opened follows what
happened to the outputs (``mode``):

* ``new`` -- a training run started from step 0 (Snakemake reran it, so its history and model were
  replaced): earlier MLflow runs of that name *and that run folder* (``key``, the tag
  ``vade_run_key``: the folder's absolute path) are deleted (soft: MLflow's "deleted" view keeps
  them) and a fresh run starts, with its own start time. A run of the same name written by another
  folder (another checkout, a copy of the study) sharing the store is never touched.
* ``resume`` -- a run resumed from a checkpoint: the same MLflow run (found by its run name = the
  run id) is reopened and metrics at steps it already holds are dropped. MLflow keeps every logged
  value, so replayed steps would otherwise show twice; the local trainer is deterministic, so a
  replayed step's values equal those logged before the interruption and nothing is lost.
* ``attach`` -- evaluation adds to a finished training run: values are logged as given (a newer
  value at a step replaces the shown one), and the run's status and end time are left alone, so
  its duration stays the training's.

Continuity follows the run, not its path. A run folder records its MLflow run
(``<folder>/mlflow.json``: store, run id, folder; ``record_run``), and a rerun reopens that run
by id (``recorded_run``), so a folder moved elsewhere reattaches to its own run (the key tag is
moved to the new path) instead of opening an empty twin. A folder whose recorded path still
holds the same record is a copy: it gets a run of its own. A recorded run missing from the store
(another store, or deleted) gives a new run. ``Tracker.how`` says which, in one line.

A store that cannot be opened (a corrupt ``mlflow.db``, a server that does not answer) is one
ValueError naming it (``open_tracker``), raised before the trainer touches its outputs. A server
is probed first (``/health``, 5 s), and MLflow's HTTP retries are bounded here unless the user set
them (``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` 2, backoff factor 1, timeout 20 s): MLflow's defaults
(7 retries, backoff 2) stalled an unreachable server's start for 230 s without a line, and a
training step for minutes. ``Tracker.backfill`` logs what a history holds and the run lacks (a
rerun after the server was down, issue 49).

The experiment is tagged ``mlflow.experimentKind = custom_model_development``, so MLflow 3's UI
opens it on runs and charts (model training), not on the GenAI traces view.

verl's own MLflow logger uses the same layout (experiment = ``trainer.project_name``, run name =
``trainer.experiment_name``), so both backends land side by side in one experiment.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vade.config_schema import build, check, default

__all__ = ["MODES", "RECORD", "NullTracker", "Tracker", "TrackingConfig", "bound_http_retries",
           "flatten", "open_tracker", "probe_server", "record_run", "recorded_run"]

_SQLITE = "sqlite:///"
# MLflow's HTTP client settings where the user set none (module doc); read per request by MLflow
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}
PROBE_TIMEOUT_S = 5.0
KEY_TAG = "vade_run_key"  # the run folder that owns an MLflow run (Tracker's ``key``)
_KIND = ("mlflow.experimentKind", "custom_model_development")
RECORD = "mlflow.json"  # in a run folder: the MLflow run it writes to (module doc)


@dataclass(frozen=True)
class TrackingConfig:
    """Config section ``tracking``."""

    enabled: bool = True
    # None: sqlite:///results/<name>/mlflow.db
    mlflow_uri: str | None = default("tracking.mlflow_uri")
    experiment: str | None = default("tracking.experiment")   # None: the config's name

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrackingConfig:
        """The ``tracking`` section, checked against the schema (``vade.config_schema``)."""
        check(values, "tracking")
        return build(cls, values)

    def uri_for(self, name: str) -> str:
        """Config ``tracking.mlflow_uri``, else ``$MLFLOW_TRACKING_URI`` (how the workflow passes
        it), else the local store ``sqlite:///results/<name>/mlflow.db``."""
        return (self.mlflow_uri or os.environ.get("MLFLOW_TRACKING_URI")
                or f"{_SQLITE}results/{name}/mlflow.db")

    def experiment_for(self, name: str) -> str:
        """Config ``tracking.experiment``, else ``$MLFLOW_EXPERIMENT_NAME``, else ``name``."""
        return self.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or name


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """{"train": {"lr": 1e-3}} -> {"train.lr": "0.001"}: MLflow params are flat strings."""
    out: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)[:6000]
    return out


class NullTracker:
    """Tracking switched off: every call is accepted and does nothing."""

    run_id: str | None = None
    uri: str | None = None
    created = False  # a new MLflow run (not a reopened one)
    how = "tracking is off"

    def log_params(self, params: Mapping[str, Any]) -> None:
        pass

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        pass

    def backfill(self, by_step: Mapping[int, Mapping[str, float]]) -> int:
        return 0

    def close(self, status: str = "FINISHED") -> None:
        pass

    def __enter__(self) -> NullTracker:
        return self

    def __exit__(self, exc_type: Any, *rest: object) -> None:
        self.close("FAILED" if exc_type else "FINISHED")


MODES = ("new", "resume", "attach")


@contextmanager
def _first_use_lock(uri: str) -> Iterator[None]:
    """Serialise opening a local ``sqlite:///`` store across processes (a file lock beside it).

    Parallel jobs (``snakemake --cores 2`` starts two trainings at once) that open a store that does
    not exist yet both run MLflow's schema migrations, and one fails ("Online migration expected to
    match one row"); two that find no experiment both create it. Only the opening is serialised:
    logging afterwards goes through SQLite's own locking.
    """
    if not uri.startswith(_SQLITE):
        yield
        return

    with open(f"{uri[len(_SQLITE):]}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _experiment(client: Any, name: str, artifacts: str | None) -> tuple[Any, str]:
    """(the experiment or None when this call created it, its id). On a tracking server, jobs
    that start together can all find no experiment and all create it (no file lock spans
    hosts): the losers read the winner's."""
    from mlflow.exceptions import MlflowException  # lazy: the cpu/workflow extra, seconds to load

    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp, exp.experiment_id
    try:
        return None, client.create_experiment(name, artifact_location=artifacts,
                                              tags=dict([_KIND]))
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
    exp = client.get_experiment_by_name(name)
    return exp, exp.experiment_id


def probe_server(uri: str) -> None:
    """Raise ``ConnectionError`` unless the tracking server at ``uri`` answers within
    ``PROBE_TIMEOUT_S`` (any HTTP status counts as an answer: a proxy may hide ``/health``)."""
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=PROBE_TIMEOUT_S):
            pass
    except urllib.error.HTTPError:
        return
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConnectionError(f"no answer within {PROBE_TIMEOUT_S:g} s: {reason}") from None


def bound_http_retries() -> None:
    """MLflow's HTTP retry settings where the user set none (module doc)."""
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)


class Tracker(NullTracker):
    """One MLflow run named ``run_name`` in ``experiment``, opened as ``mode`` says (module doc)."""

    def __init__(self, uri: str, experiment: str, run_name: str, mode: str = "resume",
                 key: str | None = None, run_id: str | None = None) -> None:
        from mlflow.tracking import MlflowClient  # lazy: the cpu/workflow extra, seconds to load

        if mode not in MODES:
            raise ValueError(f"tracker mode must be one of {MODES}, got {mode!r}")
        artifacts = None
        if uri.startswith(("http://", "https://")):
            bound_http_retries()
            probe_server(uri)
        if uri.startswith(_SQLITE):
            db = Path(uri[len(_SQLITE):])
            db.parent.mkdir(parents=True, exist_ok=True)
            artifacts = (db.parent / "mlartifacts").resolve().as_uri()
        self.uri = uri
        with _first_use_lock(uri):
            self.client = MlflowClient(tracking_uri=uri)
            exp, exp_id = _experiment(self.client, experiment, artifacts)
            if exp is not None and exp.tags.get(_KIND[0]) is None:
                self.client.set_experiment_tag(exp_id, *_KIND)
        recorded = self._recorded(run_id, exp_id)
        query = f"attributes.run_name = '{_quote(run_name)}'"
        if key is not None:  # only this folder's runs (module doc)
            query += f" and tags.{KEY_TAG} = '{_quote(key)}'"
        found = self.client.search_runs([exp_id], query, order_by=["attributes.start_time DESC"])
        if recorded is not None:
            found = [recorded, *(r for r in found if r.info.run_id != recorded.info.run_id)]
        if mode == "new":
            for stale in found:
                self.client.delete_run(stale.info.run_id)
            found = []
        self._owns_status = mode != "attach" or not found
        self._params: dict[str, str] = {}
        self._last_step: dict[str, int] = {}
        if not found:
            self.run_id = self.client.create_run(
                exp_id, run_name=run_name,
                tags={KEY_TAG: key} if key is not None else None).info.run_id
            self.created = True
            self.how = (f"new MLflow run {self.run_id}" if run_id is None or mode == "new" else
                        f"new MLflow run {self.run_id} (the recorded run {run_id} is not in "
                        f"{uri})")
            return
        run = found[0]
        self.run_id = run.info.run_id
        self._params = dict(run.data.params)
        old_key = run.data.tags.get(KEY_TAG)
        self.how = f"continuing MLflow run {self.run_id}"
        if key is not None and old_key != key and mode != "attach":  # the folder moved
            self.client.set_tag(self.run_id, KEY_TAG, key)
            self.how = f"reattached MLflow run {self.run_id} (the folder moved from {old_key})"
        if mode == "resume":
            self._last_step = {key: max(m.step for m in self.client.get_metric_history(
                self.run_id, key)) for key in run.data.metrics}
            self.client.update_run(self.run_id, status="RUNNING")

    def _recorded(self, run_id: str | None, exp_id: str) -> Any:
        """The run ``run_id`` when it exists, is not deleted and belongs to ``exp_id``."""
        if run_id is None:
            return None
        # lazy: the cpu/workflow extra, seconds to load
        from mlflow.exceptions import MlflowException  # lazy: the cpu/workflow extra, seconds to load

        try:
            run = self.client.get_run(run_id)
        except MlflowException:
            return None
        ok = run.info.experiment_id == exp_id and run.info.lifecycle_stage != "deleted"
        return run if ok else None

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log flattened params; ones the run already holds are skipped (params are immutable)."""
        from mlflow.entities import Param  # lazy: the cpu/workflow extra, seconds to load

        new = {k: v for k, v in flatten(params).items() if k not in self._params}
        items = [Param(k, v) for k, v in new.items()]
        for start in range(0, len(items), 100):  # MLflow's batch limit
            self.client.log_batch(self.run_id, params=items[start:start + 100])
        self._params.update(new)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        from mlflow.entities import RunTag  # lazy: the cpu/workflow extra, seconds to load

        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Log at ``step``; when resuming, a metric the run already holds at this step or later (a
        replayed step) is skipped, so a resumed run's history has one value per step."""
        from mlflow.entities import Metric  # lazy: the cpu/workflow extra, seconds to load

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, int(step)) for k, v in metrics.items()
                 if v is not None and not (isinstance(v, float) and math.isnan(v))
                 and step > self._last_step.get(k, -1)]
        for start in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[start:start + 1000])

    def backfill(self, by_step: Mapping[int, Mapping[str, float]]) -> int:
        """Log the points of ``by_step`` ({step: {name: value}}, a history's metrics) that the
        run does not hold (a server that was down lost them); returns how many were logged."""
        from mlflow.entities import Metric  # lazy: the cpu/workflow extra, seconds to load

        names = {name for values in by_step.values() for name in values}
        held = {name: {m.step for m in self.client.get_metric_history(self.run_id, name)}
                for name in sorted(names)}
        now = int(time.time() * 1000)
        items = [Metric(name, float(value), now, int(step))
                 for step, values in sorted(by_step.items()) for name, value in values.items()
                 if int(step) not in held[name] and not math.isnan(float(value))]
        for start in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[start:start + 1000])
        return len(items)

    def close(self, status: str = "FINISHED") -> None:
        """End the run (status and end time), unless it was attached to a run someone else ended."""
        if self.run_id is not None and self._owns_status:
            self.client.set_terminated(self.run_id, status=status)


def _quote(value: str) -> str:
    return value.replace("'", "\\'")


def open_tracker(config: TrackingConfig, name: str, run_name: str,
                 mode: str = "resume", key: str | None = None,
                 run_id: str | None = None) -> NullTracker:
    """The tracker the config asks for: MLflow, or a ``NullTracker`` when disabled. A store
    that cannot be opened is one ValueError naming it (module doc)."""
    if not config.enabled:
        return NullTracker()
    uri = config.uri_for(name)
    try:
        return Tracker(uri, config.experiment_for(name), run_name, mode, key, run_id)
    except Exception as exc:  # noqa: BLE001 - sqlalchemy, sqlite, HTTP: one line for all
        lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
        first = (lines[0] if lines else type(exc).__name__)[:300]
        raise ValueError(f"cannot open the MLflow store {uri} ({first}): repair or move it, "
                         "point tracking.mlflow_uri at another store, or set tracking.enabled: "
                         "false; nothing in the run folder was changed") from None


def recorded_run(folder: Path, uri: str | None) -> tuple[str | None, str]:
    """The MLflow run id ``folder`` recorded for the store ``uri`` (None when there is none, the
    store differs, or the record is a copy's: its recorded folder still exists and still records
    the same run), and a phrase for the log when it is not used."""
    path = folder / RECORD
    try:
        record = json.loads(path.read_text())
        run_id, where, store = record["run_id"], Path(record["folder"]), record["uri"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, ""
    if store != uri:
        return None, f"the folder's run {run_id} is in another store ({store})"
    if where != folder.resolve() and (where / RECORD).is_file():
        try:
            same = json.loads((where / RECORD).read_text()).get("run_id") == run_id
        except (OSError, ValueError, AttributeError):
            same = False
        if same:
            return None, f"a copy of {where}, which keeps run {run_id}"
    return str(run_id), ""


def record_run(folder: Path, tracker: NullTracker) -> None:
    """Write ``folder/mlflow.json`` for ``tracker``'s run (nothing when tracking is off)."""
    if tracker.run_id is None:
        return
    tmp = folder / f".{RECORD}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps({"uri": tracker.uri, "run_id": tracker.run_id,
                               "folder": str(folder.resolve())}, indent=1) + "\n")
    os.replace(tmp, folder / RECORD)
