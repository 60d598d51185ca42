"""One pooled validation score for verl runs: ``val/acc`` (and ``val/n``) at every validated step.

Why. verl 0.7.1 reports validation per data source only, ``val-core/<source>/acc/mean@<k>``
(the mean over that source's items of each item's mean accuracy over its k responses), and the
paper's training set has 11 sources. The report's headline and Figures 3a/4a read one metric,
``val/acc``, as the local trainer logs it: the mean over all validation items. That is the
item-weighted mean of the per-source means,

    val/acc = sum_s n_s * acc_s / sum_s n_s,    val/n = sum_s n_s,

with n_s the number of validation items of source s (the ``data_source`` column of the run's
``val.parquet``). An unweighted mean of sources would give a 50-item source the weight of a
2000-item one.

Where. After each verl attempt, ``vade.train.verl.launch`` reads the attempt files of verl's file
logger (``vade.train.verl.rollouts.read_metric_log``, later attempts win per step), pools every
step that has ``val-core`` values, and writes ``val/acc`` and ``val/n`` into the run's DuckDB
history (``metrics`` table, where the report reads them) and into verl's own MLflow run (found by
run name). Re-running it is idempotent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from vade.store import RunStore
from vade.tracking import Tracker
from vade.train.verl.rollouts import read_metric_log

__all__ = ["POOLED", "VAL_ITEMS", "pool_run_validation", "pooled_validation", "val_item_counts"]

log = logging.getLogger(__name__)
POOLED = "val/acc"
VAL_ITEMS = "val/n"
_CORE = re.compile(r"^val-core/(?P<source>.+)/(?P<var>[^/]+)/mean@(?P<k>\d+)$")


def val_item_counts(val_parquet: str | Path) -> dict[str, int]:
    """Validation items per ``data_source`` in verl's ``data.val_files`` parquet."""
    path = Path(val_parquet)
    table = pq.read_table(path, columns=["data_source"])
    column = table.column("data_source")
    if column.null_count:
        raise ValueError(f"{path}: data_source is null in {column.null_count} rows")
    counts = pc.value_counts(column).to_pylist()
    return {str(c["values"]): int(c["counts"]) for c in counts}


def pooled_validation(metrics: Mapping[str, float], counts: Mapping[str, int],
                      ) -> dict[str, float]:
    """``{val/acc, val/n}`` from one step's verl metrics; ``{}`` when the step has no
    ``val-core`` accuracy. Every validated source needs a count and every counted source a
    score (a mismatch means the validation set is not the one counted: ValueError naming it)."""
    scores: dict[str, float] = {}
    for key, value in metrics.items():
        m = _CORE.match(key)
        if m is None or m["var"] != "acc":
            continue
        if m["source"] in scores:
            raise ValueError(f"two val-core accuracies for data source {m['source']!r}")
        scores[m["source"]] = float(value)
    if not scores:
        return {}
    unknown = sorted(set(scores) - set(counts))
    if unknown:
        raise ValueError(f"validation reports data source {unknown[0]!r}, which the validation "
                         f"set's counts do not have (sources: {sorted(counts)})")
    absent = sorted(set(counts) - set(scores))
    if absent:
        raise ValueError(f"validation has no val-core accuracy for data source {absent[0]!r} "
                         f"(is its reward missing 'acc', or were its rows filtered out?)")
    for source, n in counts.items():
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"item count of data source {source!r} must be a positive "
                             f"integer, got {n!r}")
    total = sum(int(n) for n in counts.values())
    pooled = sum(int(counts[s]) * v for s, v in scores.items()) / total
    return {POOLED: pooled, VAL_ITEMS: float(total)}


def pool_run_validation(metric_files: Iterable[str | Path], counts: Mapping[str, int], *,
                        store: str | Path, run_id: str, tracking_uri: str | None = None,
                        experiment: str | None = None) -> dict[int, dict[str, float]]:
    """Pool every validated step of a run's verl metric files into its history (and MLflow);
    returns step -> pooled metrics. A history file that does not exist yet (verl failed before
    training started) is not created."""
    files = [Path(f) for f in metric_files if Path(f).is_file()]
    pooled = {step: p for step, data in sorted(read_metric_log(files).items())
              if (p := pooled_validation(data, counts))}
    if not pooled or not Path(store).is_file():
        return pooled

    with RunStore(store, run_id) as history:
        for step, values in pooled.items():
            history.log_metrics(step, values)
    if tracking_uri:
        try:
            tracker = Tracker(tracking_uri, experiment or "vade", run_id, mode="attach")
            done = {m.step for m in tracker.client.get_metric_history(tracker.run_id, POOLED)}
            for step, values in pooled.items():
                if step not in done:  # a re-run adds no second value for a step
                    tracker.log_metrics(values, step)
            tracker.close()  # ends only a run it had to create; verl's run is left as it is
        except Exception as exc:  # noqa: BLE001 - the history has it; MLflow is a copy
            log.warning("could not log %s to MLflow: %s", POOLED, exc)
    return pooled
