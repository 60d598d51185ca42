"""VADE as verl 0.7.1's curriculum sampler (``data.sampler.class_path``).

verl's ``create_rl_sampler`` builds ``VadeCurriculumSampler(data_source=dataset,
data_config=config.data)``; the trainer's ``StatefulDataLoader`` (``num_workers=0``, batch size
``data.gen_batch_size`` or ``data.train_batch_size``, ``drop_last``) pulls indices from
``__iter__`` one at a time, and the trainer calls ``update(batch)`` at the end of every step.

How the pieces fit verl's loop (checked against 0.7.1's ``ray_trainer.fit``):

* ``__iter__`` is a generator that chooses a batch when the first index of that batch is
  requested, so each selection sees every earlier ``update``; a precomputed epoch would not.
  An epoch is ``len(dataset) // B`` batches (``__len__`` = that times B, which is what verl turns
  into ``total_training_steps``).
* Sampler ids are dataset positions; ``extra_info.index`` (the sample id of ``vade.data``,
  DuckDB's ``sample_id``) is mapped to a position once, because ``filter_overlong_prompts`` drops
  rows and positions then differ from ids.
* ``update`` groups rows by ``extra_info.index`` (``vade.train.verl.batch``), calls the wrapped
  ``vade.sampling`` sampler's ``observe``, and logs the step (effective gradient ratio, r, G,
  posterior before/after) to the run's DuckDB file and to MLflow.
* Resume: plain verl checkpoints before it calls ``update`` (see ``vade.train.verl.persist``).
  The ``state_dict`` saved in ``data.pt`` then says "batch k drawn, not yet observed";
  ``load_state_dict`` loads the state file written after update k, checks that it observed the
  same batch, and continues from there. Without that file (a crash between the checkpoint and
  the update) the step's evidence is gone: the posterior resumes without it and a warning says
  so. The project's entry ``vade.train.verl.ppo_entry`` closes that gap: it observes each batch
  right after the actor update, before verl's checkpoint, so ``data.pt`` itself holds the
  posterior after step k (verl's later ``update`` call of the step is then a no-op).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sized
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pyarrow.compute as pc
from verl.experimental.dataset.sampler import AbstractCurriculumSampler

from vade import methods
from vade.sampling import make_sampler
from vade.store import RunStore
from vade.train.difficulty import initial_alpha_beta
from vade.train.recorder import RunRecorder, reopen_by_name, step_metrics
from vade.train.verl.batch import group_by_sample
from vade.train.verl.difficulty import dataset_sample_ids
from vade.train.verl.persist import StateFiles, discard_after
from vade.train.verl.settings import PluginSettings

__all__ = ["VadeCurriculumSampler", "dataset_labels"]

log = logging.getLogger(__name__)
_STATE_VERSION = 1


def dataset_labels(dataset: Sized) -> list[Any]:
    """``extra_info.difficulty`` of every dataset position (None where a row has none), for a
    peer whose arms are the data's labels (published SEC); the peer names a missing one."""
    frame = getattr(dataset, "dataframe", None)
    if frame is not None and "extra_info" in getattr(frame, "column_names", ()):
        column = frame.select_columns(["extra_info"]).with_format("arrow")[:].column("extra_info")
        if "difficulty" not in {f.name for f in column.type}:
            return [None] * len(column)
        return pc.struct_field(column, "difficulty").to_pylist()
    return [(dataset[i].get("extra_info") or {}).get("difficulty") for i in range(len(dataset))]


class _SnapshotView:
    """The sampler's state in sample-id space for ``RunStore`` (ids absent from the dataset,
    e.g. dropped as overlong, are NaN): alpha/beta snapshots, and a peer's per-sample state."""

    def __init__(self, alpha: np.ndarray | None, beta: np.ndarray | None, ids: np.ndarray,
                 inner: Any = None):
        size = int(ids.max()) + 1
        self.n_samples = size
        self.alpha = self.beta = None
        if alpha is not None:
            self.alpha = np.full(size, np.nan)
            self.beta = np.full(size, np.nan)
            self.alpha[ids] = alpha
            self.beta[ids] = beta
        if hasattr(inner, "sample_state"):  # a peer: its arrays by sample id, its scalars as-is
            def by_id(values: np.ndarray) -> np.ndarray:
                out = np.full(size, np.nan)
                out[ids] = values
                return out

            self.sample_state = lambda: {k: by_id(v) for k, v in inner.sample_state().items()}
            self.scalar_state = inner.scalar_state


class VadeCurriculumSampler(AbstractCurriculumSampler):
    def __init__(self, data_source: Sized, data_config: Any) -> None:
        self.settings = PluginSettings.from_data_config(data_config)
        s = self.settings
        self.sample_ids = dataset_sample_ids(data_source)
        self._pos_of = {int(v): i for i, v in enumerate(self.sample_ids)}
        n = self.sample_ids.size
        batch = data_config.get("gen_batch_size", None) or data_config.get("train_batch_size")
        self.batch_size = int(batch)
        if self.batch_size > n:
            raise ValueError(f"data.train_batch_size = {self.batch_size} exceeds the {n} training "
                             "rows left after filtering")
        alpha = beta = None
        if s.method != "vanilla" and s.initial_difficulty:
            alpha, beta = initial_alpha_beta(s.initial_difficulty, self.sample_ids)
        labels = dataset_labels(data_source) if methods.get(s.method).reads_labels else None
        self.inner = make_sampler(s.method, n, self.batch_size, seed=s.seed,
                                  lambda1=s.sampler.lambda1, lambda2=s.sampler.lambda2,
                                  alpha=alpha, beta=beta, labels=labels)
        self.epoch = 0
        self.position = 0                      # indices yielded in the current epoch
        self.current = np.empty(0, np.int64)   # the batch being handed out (positions)
        self.pending = False                   # current batch drawn but not yet observed
        self.updates = 0                       # = verl's global step of the last update
        self._observed_batch: int | None = None  # id() of the batch of the last update
        self._select_seconds = 0.0
        self.files = StateFiles(s.state_dir, keep_every=s.keep_every)
        self._recorder = None
        self._open_recorder()

    # -- verl's Sampler interface -------------------------------------------------------------
    def __len__(self) -> int:
        return (self.sample_ids.size // self.batch_size) * self.batch_size

    def __iter__(self) -> Iterator[int]:
        total = len(self)
        if self.position >= total:  # resumed right after an epoch's last batch
            self.position, self.epoch = 0, self.epoch + 1
        while self.position < total:
            offset = self.position % self.batch_size
            if offset == 0:
                t0 = time.perf_counter()
                self.current = np.asarray(self.inner.select(), dtype=np.int64)
                self._select_seconds = time.perf_counter() - t0
                self.pending = True
            self.position += 1
            yield int(self.current[offset])
        self.position, self.epoch = 0, self.epoch + 1

    def update(self, batch: Any) -> None:
        """Observe one step's rollouts (grouped by ``extra_info.index``) and log the step.

        A second call with the same batch in the same step is a no-op: ``vade.train.verl.
        ppo_entry`` observes each batch before verl's checkpoint, and verl's loop then calls
        ``update`` again at the end of the step.
        """
        if not self.pending and self._observed_batch == id(batch):
            return
        t0 = time.perf_counter()
        ev = group_by_sample(batch)
        try:
            positions = np.fromiter((self._pos_of[int(i)] for i in ev.ids), np.int64, ev.ids.size)
        except KeyError as exc:
            raise ValueError(f"batch holds sample id {exc.args[0]} (extra_info.index), which is "
                             "not in the training dataset this sampler was built on") from None
        obs = self.inner.observe(positions, ev.correct, ev.rollouts)
        self.updates += 1
        self.pending = False
        self._observed_batch = id(batch)
        seconds = self._select_seconds + time.perf_counter() - t0
        self.files.write(self.updates, self._state(post_update_of=positions))
        record = replace(obs, step=self.updates, indices=self.sample_ids[positions])
        self._log(record, seconds)

    # -- state ------------------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        return {"method": self.settings.method, "seed": self.settings.seed,
                "batch_size": self.batch_size, "sampler": self.inner.config,
                "n_samples": int(self.sample_ids.size),
                "ids_checksum": int(np.bitwise_xor.reduce(self.sample_ids * 2654435761
                                                          + np.arange(self.sample_ids.size)))}

    def _state(self, post_update_of: np.ndarray | None = None) -> dict[str, Any]:
        return {"version": _STATE_VERSION, "config": self._config(),
                "inner": self.inner.state_dict(), "epoch": self.epoch,
                "position": self.position, "current": self.current.copy(),
                "pending": self.pending, "updates": self.updates,
                "observed": None if post_update_of is None else np.sort(post_update_of)}

    def state_dict(self) -> dict[str, Any]:
        return self._state()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unsupported VADE sampler state version {state.get('version')!r}")
        mine = self._config()
        for key, value in mine.items():
            if state["config"].get(key) != value:
                raise ValueError(f"checkpoint's sampler has {key} = {state['config'].get(key)!r}, "
                                 f"this run has {value!r}: resume with the same config and data")
        chosen = state
        if state["pending"]:
            step = int(state["updates"]) + 1
            after = self.files.read(step)
            if after is not None and np.array_equal(after["observed"], np.sort(state["current"])):
                chosen = after
            else:
                log.warning("no sampler state after step %d's update in %s: that step's "
                            "observations are lost to the posterior", step, self.files.dir)
                chosen = dict(state, updates=step)
        self.inner.load_state_dict(chosen["inner"])
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
        self.current = np.asarray(state["current"], dtype=np.int64)
        self.pending = False
        self.updates = int(chosen["updates"])
        discard_after(self.files, self.updates)
        if self._recorder is not None:
            self._recorder.store.truncate_after(self.updates)

    # -- logging ----------------------------------------------------------------------------------
    def _open_recorder(self) -> None:
        s = self.settings
        store = RunStore(s.store, s.run_id, snapshot_every=s.sampler.snapshot_every)
        self._recorder = RunRecorder(store, reopen_by_name(s.tracking_uri, s.experiment, s.run_id))
        store.start_run(method=s.method, sampler_config=self.inner.config,
                        config={"verl_sampler": asdict(s)})
        view = _SnapshotView(self.inner.alpha, self.inner.beta, self.sample_ids, self.inner)
        store.log_initial_state(view.alpha, view.beta, n_samples=view.n_samples, state=view)

    def _log(self, obs: Any, seconds: float) -> None:
        view = _SnapshotView(self.inner.alpha, self.inner.beta, self.sample_ids, self.inner)
        self._recorder.log_step(
            obs, step_metrics(obs, rollouts=obs.n_rollouts, sampler_seconds=seconds),
            sampler_seconds=seconds, state=view, store_metrics={"epoch": self.epoch})

    def close(self) -> None:
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
