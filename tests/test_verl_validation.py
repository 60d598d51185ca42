"""The pooled, item-weighted validation score of verl runs (``val/acc``, ``val/n``), hand-computed.

Real: verl's metric names (``val-core/<source>/acc/mean@k`` as 0.7.1's ``_val_metrics_update``
builds them), the file-logger record format, the run's DuckDB history, MLflow (sqlite in
tmp_path) and the report's curve reader. No verl process runs: the metric files are written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vade.report.collect import _curves
from vade.report.config import ReportConfig
from vade.store import RunStore
from vade.store.query import open_catalog
from vade.train.verl.validation import (
    POOLED,
    VAL_ITEMS,
    pool_run_validation,
    pooled_validation,
    val_item_counts,
)

COUNTS = {"geo3k": 3, "ai2d(cauldron,llava_format)": 1, "CLEVR-Math/sub": 4}
# COUNTS as a val.parquet's data_source column (the cluster tests' val and train splits too)
SOURCES = ["geo3k"] * 3 + ["ai2d(cauldron,llava_format)"] + ["CLEVR-Math/sub"] * 4


def step_metrics(geo, ai2d, clevr):
    """One step's metrics as verl's file logger writes them; a source whose accuracy is None
    is missing (verl validated none of its rows)."""
    acc = {"geo3k": geo, "ai2d(cauldron,llava_format)": ai2d, "CLEVR-Math/sub": clevr}
    return {**{f"val-core/{source}/acc/mean@1": v for source, v in acc.items() if v is not None},
            "val-aux/geo3k/reward/mean@1": 9.0,          # not accuracy: ignored
            "val-aux/num_turns/mean": 1.0,
            "actor/grad_norm": 0.3}


def write_sources(path: Path) -> None:
    pq.write_table(pa.table({"data_source": SOURCES}), path)


def vanilla_cfg(tracking: dict | None = None):
    """A verl cell's config (vanilla GRPO, seed 0, experiment ``exp``; no tracking unless given)."""
    from vade.train.config import TrainConfig

    config = {"name": "exp", "train": {"backend": "verl", "verl": {}},
              "tracking": tracking or {"enabled": False}}
    return TrainConfig.from_config(config, algorithm="grpo", method="vanilla", seed=0)


def planned_run(tmp_path: Path):
    """``launch``'s plan of a run in ``tmp_path/run``, its data's val.parquet holding SOURCES."""
    from vade.train.verl.launch import plan

    spec, _, _ = plan(vanilla_cfg(), model="m", model_path="m", data_dir=tmp_path / "data",
                      difficulty=None, out_dir=tmp_path / "run")
    (tmp_path / "data").mkdir()
    write_sources(tmp_path / "data" / "val.parquet")
    return spec


def write_attempt(path: Path, *records: tuple[int, dict]) -> None:
    """One attempt's file as verl's file logger writes it: a record per (step, metrics)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in records))


def pooled_rows(spec) -> list[tuple[str, float]]:
    """The launcher's pooling into a fresh history of the run: its (name, value) metric rows."""
    from vade.train.verl.launch import _pool_validation

    with RunStore(spec.out_dir / "history.duckdb", spec.run_id) as h:
        h.start_run(method="vanilla", sampler_config={"kind": "uniform", "n_samples": 4,
                                                      "batch_size": 2})
    _pool_validation(spec, None)
    con = open_catalog([spec.out_dir / "history.duckdb"])
    try:
        return con.execute("SELECT name, value FROM metrics ORDER BY name").fetchall()
    finally:
        con.close()


def test_pooled_score_weights_sources_by_items():
    # (3 x 1.0 + 1 x 0.0 + 4 x 0.5) / 8 = 5 / 8; the unweighted mean of sources would be 0.5
    assert pooled_validation(step_metrics(1.0, 0.0, 0.5), COUNTS) == {POOLED: 0.625,
                                                                      VAL_ITEMS: 8.0}
    assert pooled_validation({"actor/grad_norm": 0.3}, COUNTS) == {}
    with pytest.raises(ValueError, match="'geo3k'"):
        pooled_validation(step_metrics(1.0, 0.0, 0.5), {k: v for k, v in COUNTS.items()
                                                        if k != "geo3k"})
    with pytest.raises(ValueError, match="CLEVR-Math/sub"):
        pooled_validation(step_metrics(1.0, 0.0, None), COUNTS)


def test_item_counts_from_the_val_parquet(tmp_path):
    path = tmp_path / "val.parquet"
    pq.write_table(pa.table({"data_source": ["geo3k", "CLEVR-Math/sub", "geo3k", "geo3k",
                                             "CLEVR-Math/sub", "ai2d(cauldron,llava_format)",
                                             "CLEVR-Math/sub", "CLEVR-Math/sub"]}), path)
    assert val_item_counts(path) == COUNTS


def test_pooled_score_reaches_history_mlflow_and_the_report(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    store = tmp_path / "run" / "history.duckdb"
    with RunStore(store, "m-grpo-vade-s0") as h:
        h.start_run(method="vade", sampler_config={"kind": "vade", "n_samples": 4,
                                                   "batch_size": 2, "lambda1": 0.2,
                                                   "lambda2": 0.999})
    a1, a2 = tmp_path / "attempt-1.jsonl", tmp_path / "attempt-2.jsonl"
    write_attempt(a1, (0, step_metrics(0.0, 0.0, 0.25)), (2, step_metrics(0.0, 1.0, 0.0)))
    # the resumed attempt replays step 2 (its value wins) and validates step 4
    write_attempt(a2, (2, step_metrics(1.0, 1.0, 0.0)), (4, step_metrics(1.0, 1.0, 1.0)))
    for _ in range(2):  # idempotent
        got = pool_run_validation([a1, a2, tmp_path / "absent.jsonl"], COUNTS, store=store,
                                  run_id="m-grpo-vade-s0", tracking_uri=uri, experiment="exp")
    assert {s: v[POOLED] for s, v in got.items()} == {0: 0.125, 2: 0.5, 4: 1.0}
    con = open_catalog([store])
    curves = _curves(con, [ReportConfig().val_metric, VAL_ITEMS])["m-grpo-vade-s0"]
    con.close()
    assert curves[POOLED].step.tolist() == [0, 2, 4]
    assert curves[POOLED].value.tolist() == [0.125, 0.5, 1.0]
    assert curves[VAL_ITEMS].value.tolist() == [8.0, 8.0, 8.0]
    client = MlflowClient(tracking_uri=uri)
    run = client.search_runs([client.get_experiment_by_name("exp").experiment_id])[0]
    assert run.info.run_name == "m-grpo-vade-s0"
    hist = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, POOLED))
    assert hist == [(0, 0.125), (2, 0.5), (4, 1.0)]
    # no history yet (verl died before training): nothing is created
    pool_run_validation([a1], COUNTS, store=tmp_path / "none" / "history.duckdb", run_id="x")
    assert not (tmp_path / "none").exists()


def test_launch_pools_its_attempt_files_in_time_order(tmp_path):
    """``launch`` after verl exits: attempt files sorted by their time stamp (numerically), the
    counts from the run's own val.parquet."""
    spec = planned_run(tmp_path)
    for stamp, geo in ((9, 0.0), (10, 1.0)):   # "attempt-10" sorts before "attempt-9" as text
        write_attempt(spec.out_dir / "verl-metrics" / f"attempt-{stamp}.jsonl",
                      (0, step_metrics(geo, 0.0, 0.0)))
    assert pooled_rows(spec) == [(POOLED, 3 / 8), (VAL_ITEMS, 8.0)]
