"""Writes one run's sampler history to its own DuckDB file.

One file per run means one writer per file, which is what DuckDB supports and what parallel SLURM
jobs need; a catalog (``vade.store.query``) reads many files at once. Each step is written in one
transaction that first deletes whatever that (run, step) already holds, so a run resumed from a
checkpoint rewrites its replayed steps instead of duplicating them, and a failure mid-step leaves
the previous steps untouched.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from vade.provenance import code_version as current_code_version
from vade.sampling.observation import Observation
from vade.store.file_format import connect_for_writing
from vade.store.schema import CREATE_TABLES, view_sql

__all__ = ["RunStore"]


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, None when it is gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _metric_values(metrics: Mapping[str, float] | None) -> dict[str, float]:
    values = {k: float(v) for k, v in (metrics or {}).items()}
    bad = [k for k in values if not isinstance(k, str) or not k]
    if bad:
        raise ValueError(f"metric names must be non-empty strings, got {bad!r}")
    return values


def _decay_unselected(sampler_config: Mapping[str, Any]) -> float | None:
    """The per-step factor on unobserved samples (eq. 6), or None for samplers without state."""
    if sampler_config.get("kind") != "vade":
        return None
    return float(sampler_config["lambda2"])


class RunStore:
    """Append-only (per step, replaceable) history of one run in ``path``.

    Usage::

        with RunStore(path, run_id="vade-grpo-s0", snapshot_every=50) as store:
            store.start_run(method="vade", sampler_config=sampler.config, config=cfg)
            store.log_initial_state(sampler.alpha, sampler.beta)
            ...
            store.log_step(obs, sampler_seconds=dt, metrics={"loss": 0.3}, state=sampler)
    """

    def __init__(self, path: str | Path, run_id: str, *, snapshot_every: int = 0) -> None:
        if not run_id:
            raise ValueError("run_id must be a non-empty string")
        if snapshot_every < 0:
            raise ValueError(f"snapshot_every must be >= 0 (0 disables), got {snapshot_every}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.snapshot_every = int(snapshot_every)
        self.con = connect_for_writing(self.path)
        self._identity = _identity(self.path)
        try:
            self.con.execute(CREATE_TABLES)
            self.con.execute(view_sql(temporary=False))
            self._logged_through = self.last_step()  # steps above: no delete-before-insert
        except duckdb.Error as exc:  # a truncated or garbled file opens, then fails to read
            self.con.close()
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ValueError(f"the history {self.path} is truncated or corrupt ({first}): move "
                             "it away (or restore it) and rerun") from None

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    def start_run(
        self,
        *,
        method: str,
        sampler_config: Mapping[str, Any],
        config: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> None:
        """Record (or, on resume, re-record) the run's identity; the row is replaced, not added."""
        sc = dict(sampler_config)
        row = {
            "run_id": self.run_id,
            "method": method,
            "sampler": sc.get("kind", "unknown"),
            "n_samples": int(sc["n_samples"]),
            "batch_size": int(sc["batch_size"]),
            "seed": int(sc.get("seed", 0)),
            "objective": sc.get("objective"),
            "exploration": sc.get("exploration"),
            "decay": sc.get("decay"),
            "lambda1": sc.get("lambda1"),
            "lambda2": sc.get("lambda2"),
            "decay_unselected": _decay_unselected(sc),
            "snapshot_every": self.snapshot_every,
            "config": json.dumps(dict(config or {}), sort_keys=True, default=str),
            "code_version": code_version or current_code_version(),
        }
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.con.execute(f"INSERT OR REPLACE INTO runs ({cols}) VALUES ({marks})",
                         list(row.values()))

    def _insert(self, table: str, columns: Mapping[str, Any]) -> None:
        arrow = pa.table(dict(columns))
        self.con.register("_vade_rows", arrow)
        try:
            names = ", ".join(columns)
            self.con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _vade_rows")
        finally:
            self.con.unregister("_vade_rows")

    def _snapshot(self, step: int, alpha: np.ndarray | None, beta: np.ndarray | None,
                  n_samples: int) -> None:
        self.con.execute("DELETE FROM snapshots WHERE run_id = ? AND step = ?",
                         [self.run_id, step])
        missing = pa.nulls(n_samples, pa.float64())
        self._insert("snapshots", {
            "run_id": pa.array(np.full(n_samples, self.run_id, dtype=object), pa.string()),
            "step": np.full(n_samples, step, dtype=np.int32),
            "sample_id": np.arange(n_samples, dtype=np.int64),
            "alpha": missing if alpha is None else np.asarray(alpha, np.float64),
            "beta": missing if beta is None else np.asarray(beta, np.float64),
        })

    def check_file(self) -> None:
        """Raise when the history file was deleted or replaced since it was opened: DuckDB
        keeps writing to the open (deleted) file, so the run would end with no history
        (issue 49, item 5: ``done.json`` written beside no history file)."""
        if _identity(self.path) != self._identity:
            raise ValueError(f"the history {self.path} was deleted or replaced while this run "
                             "was writing it; the run stops: restore the file and rerun (it "
                             "resumes), or delete the run folder to train again from step 0")

    def _transaction(self, work: Any) -> None:
        """``work`` in one transaction. DuckDB's failed write (a full disk) is an ``OSError``
        naming the history, so the command says it in one line (``vade.cli``); the steps
        committed before are kept."""
        self.check_file()
        try:
            self.con.execute("BEGIN TRANSACTION")
            try:
                work()
            except BaseException:
                try:
                    self.con.execute("ROLLBACK")
                except duckdb.Error:
                    pass   # a failed write can invalidate the connection: nothing to undo
                raise
            self.con.execute("COMMIT")
        except duckdb.IOException as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise OSError(errno.EIO, f"DuckDB's write failed ({first})", str(self.path)) from None

    def _peer_state(self, step: int, state: Any, ids: np.ndarray | None) -> None:
        """A peer sampler's per-sample state (``sample_state``: name -> array over sample ids)
        for ``ids`` (None: every sample), replacing what ``step`` held; no-op for others."""
        columns = getattr(state, "sample_state", None)
        if columns is None:
            return
        self.con.execute("DELETE FROM peer_state WHERE run_id = ? AND step = ?",
                         [self.run_id, step])
        for name, values in columns().items():
            arr = np.asarray(values, dtype=np.float64)
            idx = np.arange(arr.size, dtype=np.int64) if ids is None else ids.astype(np.int64)
            self._insert("peer_state", {
                "run_id": pa.array(np.full(idx.size, self.run_id, dtype=object), pa.string()),
                "step": np.full(idx.size, step, dtype=np.int32),
                "sample_id": idx,
                "name": pa.array(np.full(idx.size, name, dtype=object), pa.string()),
                "value": pa.array(arr[idx], from_pandas=True),  # NaN (no such sample) -> NULL
            })

    def log_initial_state(self, alpha: np.ndarray | None, beta: np.ndarray | None,
                          n_samples: int | None = None, state: Any = None) -> None:
        """Step 0: the state before training (initial rollouts), which also lists the samples;
        ``state``: a peer sampler, whose whole per-sample state is logged too."""
        if alpha is None and n_samples is None:
            raise ValueError("log_initial_state needs alpha/beta or n_samples")
        n = int(n_samples if n_samples is not None else np.asarray(alpha).size)

        def work() -> None:
            self._snapshot(0, alpha, beta, n)
            self._peer_state(0, state, None)

        self._transaction(work)

    def log_step(
        self,
        obs: Observation,
        *,
        sampler_seconds: float | None = None,
        rollouts_generated: int | None = None,
        metrics: Mapping[str, float] | None = None,
        state: Any = None,
    ) -> None:
        """Write step ``obs.step`` in one transaction, replacing anything logged for it before.

        ``rollouts_generated`` defaults to the observed rollouts (a filtering method such as DAPO
        generates more than it keeps). ``state`` is the sampler: on snapshot steps its full
        alpha/beta are stored; a peer's per-sample state goes to ``peer_state`` (the observed
        samples; every sample on snapshot steps) and its scalars (``scalar_state``) to
        ``metrics`` as ``peer/<name>``.
        """
        step = int(obs.step)
        if step < 1:
            raise ValueError(f"steps are numbered from 1, got {step}")
        values = _metric_values(metrics)
        scalars = getattr(state, "scalar_state", None)  # a peer's non-per-sample state
        if scalars is not None:
            values.update({f"peer/{k}": float(v) for k, v in scalars().items()})
        n = obs.indices.size
        take_snapshot = (self.snapshot_every > 0 and step % self.snapshot_every == 0
                         and state is not None)

        def work() -> None:
            if step <= self._logged_through:  # a replayed step: replace what it wrote
                for table in ("steps", "metrics", "events", "levels", "peer_state"):
                    self.con.execute(f"DELETE FROM {table} WHERE run_id = ? AND step = ?",
                                     [self.run_id, step])
            self.con.execute(
                "INSERT INTO steps (run_id, step, n_selected, effective_ratio, mean_accuracy,"
                " rollouts, sampler_seconds) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [self.run_id, step, n, obs.effective_ratio, obs.mean_accuracy,
                 int(rollouts_generated if rollouts_generated is not None else obs.n_rollouts),
                 sampler_seconds])
            self._insert_metrics(step, values)
            missing = pa.nulls(n, pa.float64())
            self._insert("events", {
                "run_id": pa.array(np.full(n, self.run_id, dtype=object), pa.string()),
                "step": np.full(n, step, dtype=np.int32),
                "sample_id": obs.indices,
                "p_drawn": pa.array(obs.p_drawn, from_pandas=True),  # NaN (not drawn) -> NULL
                "gain": pa.array(obs.gain, from_pandas=True),
                "correct": obs.correct,
                "rollouts": obs.rollouts,
                "alpha_before": missing if obs.alpha_before is None else obs.alpha_before,
                "beta_before": missing if obs.beta_before is None else obs.beta_before,
                "alpha_after": missing if obs.alpha_after is None else obs.alpha_after,
                "beta_after": missing if obs.beta_after is None else obs.beta_after,
            })
            if take_snapshot:
                self._snapshot(step, getattr(state, "alpha", None), getattr(state, "beta", None),
                               int(state.n_samples))
            self._peer_state(step, state, None if take_snapshot else obs.indices)

        self._transaction(work)
        self._logged_through = max(self._logged_through, step)

    def _insert_metrics(self, step: int, values: Mapping[str, float]) -> None:
        if values:
            self._insert("metrics", {
                "run_id": pa.array([self.run_id] * len(values), pa.string()),
                "step": np.full(len(values), step, dtype=np.int32),
                "name": pa.array(list(values), pa.string()),
                "value": pa.array(list(values.values()), pa.float64(), from_pandas=True),
            })

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        """Record metrics that belong to no sampler step, such as validation at step 0.

        A name already logged at ``step`` is replaced, so a resumed run that validates again
        does not leave two values for one (step, name).
        """
        step = int(step)
        if step < 0:
            raise ValueError(f"steps are numbered from 0, got {step}")
        values = _metric_values(metrics)

        def work() -> None:
            for name in values:
                self.con.execute(
                    "DELETE FROM metrics WHERE run_id = ? AND step = ? AND name = ?",
                    [self.run_id, step, name])
            self._insert_metrics(step, values)

        self._transaction(work)

    def log_levels(self, step: int, sample_ids: np.ndarray, levels: np.ndarray,
                   offsets: np.ndarray | None = None,
                   mean_accuracy: np.ndarray | None = None) -> None:
        """DIVA-GRPO difficulty levels after ``step`` (step 0: every sample's initial level),
        the variant offset each sample trained with and the mean accuracy over its and its
        variant's rollouts that moved the level; replaces what ``step`` logged before."""
        step = int(step)
        ids = np.asarray(sample_ids, dtype=np.int64)
        lv = np.asarray(levels, dtype=np.int16)
        for name, arr in (("levels", lv), ("offsets", offsets), ("mean_accuracy", mean_accuracy)):
            if arr is not None and np.shape(arr) != ids.shape:
                raise ValueError(f"log_levels: {ids.size} sample ids but {np.size(arr)} {name}")

        def work() -> None:
            self.con.execute("DELETE FROM levels WHERE run_id = ? AND step = ?",
                             [self.run_id, step])
            self._insert("levels", {
                "run_id": pa.array(np.full(ids.size, self.run_id, dtype=object), pa.string()),
                "step": np.full(ids.size, step, dtype=np.int32),
                "sample_id": ids,
                "level": lv,
                "variant_offset": (pa.nulls(ids.size, pa.int16()) if offsets is None
                                   else np.asarray(offsets, dtype=np.int16)),
                "mean_accuracy": (pa.nulls(ids.size, pa.float64()) if mean_accuracy is None
                                  else np.asarray(mean_accuracy, dtype=np.float64)),
            })

        self._transaction(work)

    def add_rollouts(self, step: int, extra: int, metrics: Mapping[str, float] | None = None,
                     ) -> None:
        """Charge ``extra`` rollouts generated after step ``step`` trained (a run stopped in
        the middle of its next step) to that step, with ``metrics`` describing them."""
        step, extra = int(step), int(extra)
        if extra < 0:
            raise ValueError(f"extra rollouts must be >= 0, got {extra}")
        values = _metric_values(metrics)

        def work() -> None:
            changed = self.con.execute(
                "UPDATE steps SET rollouts = rollouts + ? WHERE run_id = ? AND step = ? "
                "RETURNING step", [extra, self.run_id, step]).fetchall()
            if not changed:
                raise ValueError(f"run {self.run_id} has no step {step} to charge rollouts to")
            for name in values:
                self.con.execute("DELETE FROM metrics WHERE run_id = ? AND step = ? AND name = ?",
                                 [self.run_id, step, name])
            self._insert_metrics(step, values)

        self._transaction(work)

    def truncate_after(self, step: int) -> None:
        """Forget steps after ``step`` (resuming from a checkpoint taken at ``step``)."""
        def work() -> None:
            for table in ("steps", "metrics", "events", "snapshots", "levels", "peer_state"):
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ? AND step > ?",
                                 [self.run_id, int(step)])
        self._transaction(work)
        self._logged_through = min(self._logged_through, int(step))

    def last_step(self) -> int:
        row = self.con.execute("SELECT max(step) FROM steps WHERE run_id = ?",
                               [self.run_id]).fetchone()
        return int(row[0]) if row and row[0] is not None else 0
