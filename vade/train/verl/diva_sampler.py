"""DIVA-GRPO as verl 0.7.1's curriculum sampler: each chosen original beside one variant of itself.

``DivaCurriculumSampler`` is ``VadeCurriculumSampler`` (same ``data.sampler.vade`` block, same
lazy choice, state files, DuckDB history and resume rules) with three differences:

* **Batches of 2B rows.** ``data.train_batch_size`` is 2B (what the override builder writes);
  the wrapped ``vade.sampling`` sampler (``vanilla`` for ``diva``, ``vade`` for ``vade-diva``:
  ``data.sampler.vade.method``) chooses B originals per step. For each one an offset D is drawn
  from its current level (``vade.diva.draw_offsets``, stream ``rng_for(seed, "diva", step, sample
  id)``, as the local trainer does), and the sampler yields the original's index and then, after
  all B originals, its variant's (``vade.train.verl.diva_dataset`` encodes/decodes them).
* **update.** Rows are split by ``extra_info.diva_variant``. The posterior (``vade-diva``) observes
  the originals' own groups only, so it stays a posterior of the original problem; each
  original's level moves by the mean accuracy over its and its variant's rollouts
  (``vade.diva.update_levels``); the step's rollouts on the cost axis are all 2B x G.
* **History.** ``levels`` (step 0: every original's initial level; step k: the originals of
  step k after their update, with offset and mean accuracy, as the local trainer writes them),
  the run's method is ``diva`` / ``vade-diva`` (``data.sampler.diva.method``), and the levels
  travel in the sampler state (``data.pt`` and the per-step state files).

Initial levels come from the same initial difficulty rollouts VADE's prior uses
(``vade.diva.initial_levels``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sized
from dataclasses import asdict, replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from vade import methods
from vade.data.splits import rng_for
from vade.diva import draw_offsets, initial_levels, update_levels
from vade.store import RunStore
from vade.train.difficulty import initial_alpha_beta
from vade.train.recorder import RunRecorder, reopen_by_name, step_metrics
from vade.train.verl.batch import correctness, group_by_sample, sample_ids
from vade.train.verl.difficulty import dataset_sample_ids
from vade.train.verl.diva_dataset import DivaKey, encode_index
from vade.train.verl.sampler import VadeCurriculumSampler, _SnapshotView
from vade.train.verl.settings import PluginSettings

__all__ = ["DIVA_BLOCK", "DivaCurriculumSampler", "split_rows"]

DIVA_BLOCK = "diva"   # data.sampler.diva: {method: diva | vade-diva}
_DIVA_METHODS = methods.names_where(shaping="diva")


class _OriginalsPerStep:
    """``data_config`` as the base class reads it, with the batch size halved (B originals)."""

    def __init__(self, data_config: Any, originals: int) -> None:
        self._config = data_config
        self._originals = originals

    def get(self, key: str, default: Any = None) -> Any:
        if key == "gen_batch_size":
            return None
        if key == "train_batch_size":
            return self._originals
        return self._config.get(key, default)


def _rows_per_step(data_config: Any) -> int:
    rows = int(data_config.get("gen_batch_size", None) or data_config.get("train_batch_size"))
    if rows < 2 or rows % 2:
        raise ValueError(f"data.train_batch_size = {rows}: DIVA needs an even number of rows "
                         "(B originals and B variants)")
    return rows


def _diva_method(data_config: Any, sampler_method: str) -> str:
    block = (data_config.get("sampler") or {}).get(DIVA_BLOCK)
    method = block.get("method") if block is not None else None
    if method not in _DIVA_METHODS:
        raise ValueError(f"data.sampler.diva.method must be one of {_DIVA_METHODS}, got "
                         f"{method!r} (append +data.sampler.diva.method=...; "
                         "vade.train.verl.overrides does)")
    chooser = methods.get(method).sampler_name
    if chooser != sampler_method:
        raise ValueError(f"DIVA method {method!r} chooses originals with {chooser!r}, but "
                         f"data.sampler.vade.method is {sampler_method!r}")
    return method


def split_rows(batch: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sample id, correctness, is variant) per row of a verl batch, from ``extra_info``."""
    non_tensor = batch.non_tensor_batch
    ids = sample_ids(non_tensor)
    acc = correctness(batch)
    variant = np.empty(ids.size, dtype=bool)
    for row, info in enumerate(non_tensor["extra_info"]):
        flag = info.get("diva_variant") if hasattr(info, "get") else None
        if flag not in (0, 1):
            raise ValueError(f"batch row {row}: extra_info.diva_variant = {flag!r} (DIVA rows "
                             "come from vade.train.verl.diva_dataset.DivaDataset: set "
                             "data.custom_cls)")
        variant[row] = bool(flag)
    return ids, acc, variant


def _evidence(ids: np.ndarray, acc: np.ndarray) -> Any:
    view = SimpleNamespace(non_tensor_batch={
        "extra_info": np.array([{"index": int(i)} for i in ids], dtype=object), "acc": acc},
        batch=None)
    return group_by_sample(view)


class DivaCurriculumSampler(VadeCurriculumSampler):
    """See the module docstring. ``batch_size`` (inherited) is B, the originals per step."""

    def __init__(self, data_source: Sized, data_config: Any) -> None:
        rows = _rows_per_step(data_config)
        settings = PluginSettings.from_data_config(data_config)
        self.diva_method = _diva_method(data_config, settings.method)
        if not settings.initial_difficulty:
            raise ValueError("DIVA's initial levels need data.sampler.vade.initial_difficulty "
                             "(the initial difficulty rollouts)")
        self.n_rows = len(data_source)
        ids = dataset_sample_ids(data_source)
        alpha, beta = initial_alpha_beta(settings.initial_difficulty, ids)
        self.levels = initial_levels(alpha, alpha + beta)
        self.offsets = np.empty(0, np.int8)           # the current step's D per original
        self.drawn_levels = np.empty(0, np.int8)      # the originals' levels when drawn
        self._last_levels: tuple[np.ndarray, ...] | None = None
        super().__init__(data_source, _OriginalsPerStep(data_config, rows // 2))

    # -- verl's Sampler interface -------------------------------------------------------------
    def __len__(self) -> int:
        return (self.sample_ids.size // self.batch_size) * 2 * self.batch_size

    def __iter__(self) -> Iterator[int]:
        b = self.batch_size
        total = len(self)
        if self.position >= total:
            self.position, self.epoch = 0, self.epoch + 1
        while self.position < total:
            j = self.position % (2 * b)
            if j == 0:
                t0 = time.perf_counter()
                self.current = np.asarray(self.inner.select(), dtype=np.int64)
                self._draw_offsets()
                self._select_seconds = time.perf_counter() - t0
                self.pending = True
            self.position += 1
            yield self._index(j % b, variant=j >= b)
        self.position, self.epoch = 0, self.epoch + 1

    def _draw_offsets(self) -> None:
        step = self.updates + 1
        self.drawn_levels = self.levels[self.current].copy()
        self.offsets = np.array([
            draw_offsets(self.drawn_levels[j:j + 1],
                         rng_for(self.settings.seed, "diva", str(step),
                                 str(int(self.sample_ids[p]))))[0]
            for j, p in enumerate(self.current)], dtype=np.int8)

    def _index(self, j: int, *, variant: bool) -> int:
        return encode_index(self.n_rows, DivaKey(
            position=int(self.current[j]), variant=variant, offset=int(self.offsets[j]),
            level=int(self.drawn_levels[j]), step=self.updates + 1))

    def update(self, batch: Any) -> None:
        """Observe the originals' groups, move the levels, log the step (module docstring)."""
        if not self.pending and self._observed_batch == id(batch):
            return
        t0 = time.perf_counter()
        ids, acc, variant = split_rows(batch)
        orig = _evidence(ids[~variant], acc[~variant])
        var = _evidence(ids[variant], acc[variant])
        if not np.array_equal(orig.ids, var.ids):
            raise ValueError(f"batch holds originals {orig.ids.tolist()} but variants of "
                             f"{var.ids.tolist()}: every original needs its variant")
        try:
            positions = np.fromiter((self._pos_of[int(i)] for i in orig.ids), np.int64,
                                    orig.ids.size)
        except KeyError as exc:
            raise ValueError(f"batch holds sample id {exc.args[0]} (extra_info.index), which is "
                             "not in the training dataset this sampler was built on") from None
        obs = self.inner.observe(positions, orig.correct, orig.rollouts)
        mean = (orig.correct + var.correct) / (orig.rollouts + var.rollouts)
        new = update_levels(self.levels[positions], mean)
        self.levels[positions] = new
        where = {int(p): j for j, p in enumerate(self.current)}
        offsets = np.array([self.offsets[where[int(p)]] if int(p) in where else 0
                            for p in positions], dtype=np.int8)
        self._last_levels = (self.sample_ids[positions], new, offsets, mean, var)
        self.updates += 1
        self.pending = False
        self._observed_batch = id(batch)
        seconds = self._select_seconds + time.perf_counter() - t0
        self.files.write(self.updates, self._state(post_update_of=positions))
        self._log(replace(obs, step=self.updates, indices=self.sample_ids[positions]), seconds)

    # -- state ------------------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        return {**super()._config(), "diva_method": self.diva_method}

    def _state(self, post_update_of: np.ndarray | None = None) -> dict[str, Any]:
        return {**super()._state(post_update_of),
                "diva": {"levels": self.levels.copy(), "offsets": self.offsets.copy(),
                         "drawn_levels": self.drawn_levels.copy()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        chosen = state
        if state.get("pending"):  # the base class's rule: the state file after that update
            after = self.files.read(int(state["updates"]) + 1)
            if after is not None and np.array_equal(after["observed"],
                                                    np.sort(state["current"])):
                chosen = after
        super().load_state_dict(state)
        diva = chosen["diva"]
        levels = np.asarray(diva["levels"], dtype=np.int8)
        if levels.shape != self.levels.shape:
            raise ValueError(f"checkpoint holds {levels.size} DIVA levels, the data has "
                             f"{self.levels.size} rows")
        self.levels = levels.copy()
        self.offsets = np.asarray(state["diva"]["offsets"], dtype=np.int8)
        self.drawn_levels = np.asarray(state["diva"]["drawn_levels"], dtype=np.int8)

    # -- logging ----------------------------------------------------------------------------------
    def _open_recorder(self) -> None:
        s = self.settings
        store = RunStore(s.store, s.run_id, snapshot_every=s.sampler.snapshot_every)
        self._recorder = RunRecorder(store, reopen_by_name(s.tracking_uri, s.experiment, s.run_id))
        store.start_run(method=self.diva_method, sampler_config=self.inner.config,
                        config={"verl_sampler": asdict(s), "diva": {"method": self.diva_method}})
        view = _SnapshotView(self.inner.alpha, self.inner.beta, self.sample_ids)
        store.log_initial_state(view.alpha, view.beta, n_samples=view.n_samples)
        store.log_levels(0, self.sample_ids, self.levels)  # step 0: initial levels

    def _log(self, obs: Any, seconds: float) -> None:
        sids, new, offsets, mean, var = self._last_levels
        view = _SnapshotView(self.inner.alpha, self.inner.beta, self.sample_ids)
        g = var.rollouts
        diva = {"diva/level_mean": float(self.levels.mean()),
                "diva/variant_accuracy": float(var.correct.sum() / max(g.sum(), 1.0)),
                "diva/effective_ratio_with_variants": float(np.mean(np.concatenate([
                    (obs.correct > 0) & (obs.correct < obs.rollouts),
                    (var.correct > 0) & (var.correct < g)])))}
        generated = obs.n_rollouts + var.n_rollouts   # every variant response is a rollout
        self._recorder.log_step(
            obs, {**step_metrics(obs, rollouts=generated, sampler_seconds=seconds), **diva},
            sampler_seconds=seconds, rollouts_generated=generated, state=view,
            store_metrics={"epoch": self.epoch, **diva})
        self._recorder.store.log_levels(obs.step, sids, new, offsets, mean)
