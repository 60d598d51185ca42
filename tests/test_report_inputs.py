"""The report reads what the workflow names: a stale evaluation file left in the eval folder (a
grid cell since removed) is ignored, and the paper's five benchmarks are the default columns, a
benchmark evaluated nowhere showing as missing (its AVG too). Real `vade report` on a small
recorded fixture (hand-made evaluation rows); the dry run is real Snakemake."""

from __future__ import annotations

import json

from test_report import _row

from vade.cli import main
from vade.eval.store import EvalRow, write_eval_results
from vade.report.collect import parse_run_id

FOUR = {"MathVista": 40.0, "MathVerse": 30.0, "MathVision": 20.0, "ScienceQA": 80.0}


def _evals(folder, run_id: str, scores: dict[str, float]):
    key = parse_run_id(run_id)
    rows = [EvalRow(run_id, key.model, key.algorithm or None, key.method,
                    None if key.seed < 0 else key.seed, b, r, r, s, 10, "ck", "t", "m")
            for b, s in scores.items() for r in (0, 1)]
    return write_eval_results(folder / f"{run_id}.duckdb", rows)


def test_report_ignores_stale_files_and_shows_a_missing_benchmark(tmp_path):
    ev = tmp_path / "eval"
    named = [_evals(ev, "m-base", FOUR),
             _evals(ev, "m-grpo-vanilla-s0", {b: s + 10 for b, s in FOUR.items()})]
    # stale: a removed grid cell's file, with every benchmark (ChartQA included)
    _evals(ev, "m-grpo-dapo-s0", {**FOUR, "ChartQA": 99.0})
    cfg = {"name": "p", "evaluate": {"kind": "paper"},
           "experiments": {"seeds": [0], "grid": [
               {"models": ["m"], "algorithms": ["grpo"], "methods": ["vanilla"]}]}}
    out = tmp_path / "r"
    assert main(["report", "--config-json", json.dumps(cfg), "--evals", *map(str, named),
                 "--out", str(out), "--mlflow-uri", ""]) == 0
    md = (out / "report.md").read_text()
    header = next(ln for ln in md.splitlines() if "MathVista" in ln and "AVG" in ln)
    assert [c.strip() for c in header.strip("|").split("|")][3:9] == [
        "MathVista", "MathVerse", "MathVision", "ScienceQA", "ChartQA", "AVG"]
    assert _row(md, "m", "-", "Base Model")[3:9] == ["40.00", "30.00", "20.00", "80.00",
                                                    "missing", "missing"]
    # († : evaluated, no training history given in this fixture)
    assert _row(md, "m", "GRPO", "vanilla")[3:9] == ["50.00†", "40.00†", "30.00†", "90.00†",
                                                     "missing", "missing"]
    assert "m-grpo-dapo-s0" not in md and "99.00" not in md
    # the same folder given as a folder (by hand) does read the stale file: why the rule names files
    assert main(["report", "--config-json", json.dumps(cfg), "--evals", str(ev),
                 "--out", str(tmp_path / "r2"), "--mlflow-uri", ""]) == 0
    assert "m-grpo-dapo-s0" in (tmp_path / "r2" / "report.md").read_text()


def test_synthetic_columns_stay_the_domains_found(tmp_path):
    f = _evals(tmp_path, "m-base", {"math": 10.0})
    cfg = {"name": "t", "evaluate": {"kind": "synthetic"}, "experiments": {"seeds": [0], "grid": [
        {"models": ["m"], "algorithms": ["grpo"], "methods": ["vanilla"]}]}}
    assert main(["report", "--config-json", json.dumps(cfg), "--evals", str(f),
                 "--out", str(tmp_path / "r"), "--mlflow-uri", ""]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert "MathVista" not in md
    assert _row(md, "m", "-", "Base Model")[3:5] == ["10.00", "10.00"]  # math, AVG


def test_headline_when_dapo_peaks_before_training():
    """A short run whose DAPO validation is best at step 0 (0 rollouts): the headline row says
    why there is no ratio instead of the whole report failing (found by the tiny pipeline)."""
    import numpy as np

    from vade.report.collect import Curve, Inputs, RunInfo
    from vade.report.tables import headline

    def run(rid: str, values: list[float]) -> RunInfo:
        x = np.arange(len(values), dtype=float)
        return RunInfo(parse_run_id(rid), "complete",
                       curves={"val/acc": Curve(x, np.array(values), x * 64, "duckdb")})

    runs = {"m-grpo-dapo-s0": run("m-grpo-dapo-s0", [0.5, 0.3, 0.4]),
            "m-grpo-vade-s0": run("m-grpo-vade-s0", [0.5, 0.45, 0.6])}
    md = headline(Inputs(runs, {}, [], None, {}, {}, []), "val/acc", 0.995)
    row = _row(md, "m", "GRPO", "0")
    # DAPO's peak 0.5 and target 0.995 * 0.5 are known, both at 0 rollouts; the ratio column
    # says why it is empty, in words, instead of a row of 'missing' (the demo's GRPO headline)
    reason = "no ratio: DAPO's best score is its step-0 one (0 rollouts), nothing to beat"
    assert row[3:11] == ["0.500", "0.497", "0", "0", "-", reason, "-", "-"]
    assert row[11] == "m-grpo-dapo-s0, m-grpo-vade-s0"


def test_headline_checks_both_curves_for_rollout_counts():
    """A VADE curve without cumulative rollouts (e.g. MLflow-only metrics of a run whose history
    lacks them) cannot place the target on the rollout axis: named, not read as 'never reached'."""
    import numpy as np

    from vade.report.collect import Curve, Inputs, RunInfo
    from vade.report.tables import headline

    x = np.arange(3, dtype=float)
    dapo = RunInfo(parse_run_id("m-grpo-dapo-s0"), "complete",
                   curves={"val/acc": Curve(x, np.array([0.1, 0.3, 0.5]), x * 64, "duckdb")})
    vade = RunInfo(parse_run_id("m-grpo-vade-s0"), "complete",
                   curves={"val/acc": Curve(x, np.array([0.1, 0.6, 0.7]), x * np.nan, "mlflow")})
    md = headline(Inputs({"m-grpo-dapo-s0": dapo, "m-grpo-vade-s0": vade}, {}, [], None, {}, {},
                         []), "val/acc", 0.995)
    row = _row(md, "m", "GRPO", "0")
    assert row[3:11] == [*["-"] * 5, "no comparison: m-grpo-vade-s0: no cumulative rollouts",
                         "-", "-"]


def test_headline_rows_only_for_seeds_that_run_both_dapo_and_vade():
    """A grid that runs VADE on more seeds than DAPO (the fair race: DAPO 5 seeds, VADE 16) has
    nothing to compare on VADE's extra seeds: no 'missing' row for them, one line naming them.
    The headline is computed on hand-made curves; 0.6 * 0.995 = 0.597 is reached by VADE at 64
    rollouts and by DAPO (peak 0.6) at 128: ratio 0.5."""
    import numpy as np

    from vade.report.collect import Curve, Inputs, RunInfo
    from vade.report.tables import headline

    x = np.arange(3, dtype=float)

    def run(rid: str, values: list[float]) -> RunInfo:
        return RunInfo(parse_run_id(rid), "complete",
                       curves={"val/acc": Curve(x, np.array(values), x * 64, "duckdb")})

    runs = {"m-grpo-dapo-s0": run("m-grpo-dapo-s0", [0.1, 0.3, 0.6]),
            **{f"m-grpo-vade-s{s}": run(f"m-grpo-vade-s{s}", [0.1, 0.6, 0.7]) for s in (0, 1, 2)}}
    md = headline(Inputs(runs, {}, [], None, {}, {}, []), "val/acc", 0.995)
    assert _row(md, "m", "GRPO", "0")[3:9] == ["0.600", "0.597", "128", "128", "64", "0.500"]
    assert not any(ln.startswith("| m | GRPO | 1 ") or ln.startswith("| m | GRPO | 2 ")
                   for ln in md.splitlines())
    assert "No row for the seeds the grid runs only one of DAPO and VADE on: m GRPO: 1, 2." in md
    # no DAPO at all: said, not an empty table
    only_vade = {k: v for k, v in runs.items() if "vade" in k}
    md = headline(Inputs(only_vade, {}, [], None, {}, {}, []), "val/acc", 0.995)
    assert "No seed runs both DAPO and VADE: nothing to compare." in md and "| m |" not in md
