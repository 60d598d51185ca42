"""`vade report` on a small recorded fixture: hand-computed table cells, the rollout headline on
hand-made curves (including 'never reached'), figures written, missing runs shown as missing,
deterministic Markdown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from mlflow_store import fresh_store

from vade.cli import main
from vade.eval.store import EvalRow, average_at_k, open_eval_catalog, write_eval_results
from vade.report.collect import parse_run_id
from vade.report.config import ReportConfig, expected_runs
from vade.report.curves import first_reaching, rollout_ratio
from vade.report.difficulty import bucketize
from vade.report.paper import TABLE1, TABLE5, paper_model_for
from vade.sampling import make_sampler
from vade.store import RunStore

FIXTURES = Path(__file__).parent / "fixtures" / "report"
N, B, G = 40, 4, 8

# Hand-made validation curves (score per step). DAPO generates 3x the kept rollouts.
DAPO_VAL = [0.20, 0.40, 0.598, 0.60]   # peak 0.60 at step 4 (384 rollouts); >= 0.597 at 288
VADE_VAL = [0.30, 0.50, 0.55, 0.598, 0.61, 0.62]  # >= 0.597 first at step 4 -> 4 * 32 = 128


# ---------------------------------------------------------------- pure functions


def test_rollout_ratio_on_a_hand_made_curve():
    d_x = np.array([96, 192, 288, 384])
    v_x = np.array([32, 64, 96, 128, 160, 192])
    r = rollout_ratio(d_x, DAPO_VAL, v_x, VADE_VAL, 0.995)
    assert r.dapo_peak == pytest.approx(0.60)
    assert r.target == pytest.approx(0.597)
    assert r.dapo_rollouts_to_peak == 384
    assert r.dapo_rollouts_to_target == 288
    assert r.vade_rollouts_to_target == 128
    assert r.ratio == pytest.approx(128 / 384)


def test_rollout_ratio_never_reached_and_nan_points():
    r = rollout_ratio([10, 20], [0.5, 0.8], [5, 10, 15], [0.1, 0.79, np.nan], 0.995)
    assert r.target == pytest.approx(0.796)
    assert not r.reached and r.ratio is None and r.vade_best == pytest.approx(0.79)
    # unsorted x is sorted first; NaN points are skipped
    assert first_reaching([30, 10, 20], [0.9, np.nan, 0.7], 0.7) == 20
    assert first_reaching([1, 2], [0.1, 0.2], 0.5) is None
    with pytest.raises(ValueError, match="fraction"):
        rollout_ratio([1], [1.0], [1], [1.0], 1.5)


def test_parse_run_id_and_buckets():
    k = parse_run_id("qwen2.5-vl-7b-gspo-last-update-s3")
    assert (k.model, k.algorithm, k.method, k.seed) == ("qwen2.5-vl-7b", "gspo", "last-update", 3)
    assert parse_run_id("tiny-base").method == "base"
    with pytest.raises(ValueError, match="run id"):
        parse_run_id("tiny-ppo-vade-s0")
    got = bucketize(np.array([0.0, 0.125, 0.25, 0.3, 0.75, 0.875, 1.0]), (0.25, 0.5, 0.75))
    np.testing.assert_array_equal(got, [0, 1, 1, 2, 3, 4, 5])


def test_paper_transcription_spot_checks():
    assert TABLE1[("Qwen2.5-VL-7B-Instruct", "grpo", "vade", "MathVista")].value == 75.10
    assert TABLE1[("Qwen2.5-VL-3B-Instruct", "gspo", "dapo", "AVG")].value == 55.10
    assert TABLE5[("Qwen2.5-VL-7B-Instruct", "grpo", "last-update", "MathVision")].value == 22.25
    assert paper_model_for("qwen2.5-vl-7b") == "Qwen2.5-VL-7B-Instruct"
    # each Table 1 row's AVG is the mean of its five benchmarks (to the paper's rounding)
    rows = {k[:3] for k in TABLE1}
    for row in rows:
        five = [TABLE1[(*row, b)].value for b in ("MathVista", "MathVerse", "MathVision",
                                                   "ScienceQA", "ChartQA")]
        assert np.mean(five) == pytest.approx(TABLE1[(*row, "AVG")].value, abs=0.011)


def test_report_config_validation():
    assert ReportConfig.from_dict({}).headline_fraction == 0.995
    with pytest.raises(ValueError, match="report.colour"):
        ReportConfig.from_dict({"colour": 1})
    with pytest.raises(ValueError, match="report.headline_fraction"):
        ReportConfig.from_dict({"headline_fraction": 0})
    with pytest.raises(ValueError, match="report.difficulty_buckets"):
        ReportConfig.from_dict({"difficulty_buckets": [0.5, 0.25]})
    cfg = {"experiments": {"seeds": [0], "grid": [{"models": ["tiny"], "algorithms": ["grpo"],
                                                   "methods": ["vade"]}]}}
    assert expected_runs(cfg) == ("tiny-grpo-vade-s0", "tiny-base")


# ---------------------------------------------------------------- the recorded fixture


def _record(root: Path, run_id: str, val: list[float], *, done: bool = True,
            factor: int = 1, metrics: bool = True) -> None:
    key = parse_run_id(run_id)
    sampler_method = {"dapo": "vanilla", "diva": "vanilla", "vade-diva": "vade"}.get(
        key.method, key.method)
    init = np.arange(N) % (G + 1)  # initial r: 0..8 repeating
    if sampler_method == "vanilla":
        s = make_sampler("vanilla", N, B, seed=key.seed)
    else:
        s = make_sampler(sampler_method, N, B, seed=key.seed, alpha=init.astype(float),
                         beta=(G - init).astype(float))
    outcomes = np.random.default_rng(7).integers(0, G + 1, size=(len(val), B))
    path = root / run_id / "history.duckdb"
    with RunStore(path, run_id, snapshot_every=2) as store:
        store.start_run(method=key.method, sampler_config=s.config, code_version="test")
        store.log_initial_state(getattr(s, "alpha", None), getattr(s, "beta", None),
                                n_samples=N)
        for t, v in enumerate(val):
            obs = s.observe(s.select(), outcomes[t], G)
            store.log_step(obs, rollouts_generated=factor * B * G, state=s,
                           metrics={"val/acc": v, "actor/grad_norm": 1.0 + t} if metrics
                           else None)
    if done:
        (root / run_id / "done.json").write_text("{}")


# (run_id) -> {benchmark: [repeat scores]}; hand-computed means in the comments
EVALS = {
    "tiny-base": {"math": [20.0, 30.0], "chart": [40.0, 40.0]},              # 25, 40 -> 32.5
    "tiny-grpo-vanilla-s0": {"math": [40.0, 50.0], "chart": [60.0, 70.0]},   # 45, 65 -> 55
    "tiny-grpo-dapo-s0": {"math": [30.0, 40.0], "chart": [80.0, 80.0]},      # 35, 80 -> 57.5
    "tiny-grpo-vade-s0": {"math": [50.0, 60.0], "chart": [70.0, 70.0]},      # 55, 70 -> 62.5
    "tiny-grpo-symmetric-s0": {"math": [50.0, 50.0]},                         # 50, no chart
}


def _eval_files(root: Path) -> None:
    for rid, scores in EVALS.items():
        key = parse_run_id(rid)
        rows = [EvalRow(rid, key.model, key.algorithm or None, key.method,
                        None if key.seed < 0 else key.seed, bench, i, 100 + i, s, 10,
                        f"ckpt/{rid}", f"vade_{bench}", "acc")
                for bench, reps in scores.items() for i, s in enumerate(reps)]
        write_eval_results(root / f"{rid}.duckdb", rows)


@pytest.fixture(scope="module")
def fixture_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    runs, evals = root / "runs", root / "eval"
    _record(runs, "tiny-grpo-vanilla-s0", [0.2, 0.3, 0.3, 0.35])
    _record(runs, "tiny-grpo-dapo-s0", DAPO_VAL, factor=3)
    _record(runs, "tiny-grpo-vade-s0", VADE_VAL)
    _record(runs, "tiny-grpo-symmetric-s0", [0.3, 0.4])
    _record(runs, "tiny-grpo-vade-s1", [0.1, 0.2], done=False)  # partial: no done.json
    _eval_files(evals)
    return root


def _report(root: Path, out: Path, *extra: str) -> str:
    rc = main(["report", "--config", str(FIXTURES / "config.yaml"), "--runs", str(root / "runs"),
               "--evals", str(root / "eval"), "--out", str(out), "--mlflow-uri", "",
               *extra])
    assert rc == 0
    return (out / "report.md").read_text()


@pytest.fixture(scope="module")
def reports(fixture_dirs, tmp_path_factory) -> Path:
    """The report of ``fixture_dirs`` made twice, into ``a/`` and ``b/`` (read them, never change
    them): the tests of its contents read ``a``, the determinism checks compare the two."""
    out = tmp_path_factory.mktemp("reports")
    for name in ("a", "b"):
        _report(fixture_dirs, out / name)
    return out


def _row(md: str, *cells: str) -> list[str]:
    """The Markdown table row whose first cells are ``cells``, split into cells."""
    for line in md.splitlines():
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if parts[: len(cells)] == list(cells):
            return parts
    raise AssertionError(f"no row starting {cells}")


def test_eval_store_average_at_k(fixture_dirs):
    con = open_eval_catalog([fixture_dirs / "eval"])
    rows = {(r["run_id"], r["benchmark"]): r for r in average_at_k(con)}
    assert rows[("tiny-grpo-vanilla-s0", "math")]["score"] == pytest.approx(45.0)
    assert rows[("tiny-grpo-vanilla-s0", "math")]["k"] == 2
    assert rows[("tiny-grpo-vanilla-s0", "math")]["seeds_eval"] == [100, 101]
    assert rows[("tiny-base", "chart")]["algorithm"] is None
    with pytest.raises(ValueError, match="duplicate"):
        r = EvalRow("x-base", "x", None, "base", None, "m", 0, 0, 1.0, 1, "c", "t")
        write_eval_results(fixture_dirs / "dup.duckdb", [r, r])
    assert not (fixture_dirs / "dup.duckdb").exists()


def test_report_tables_hold_the_recorded_numbers(reports):
    md = (reports / "a" / "report.md").read_text()
    # Table 1 (columns: model, algo, method, math, chart, AVG, runs); paper order does not
    # apply to synthetic names, so config `benchmarks: [math, chart]` fixes the order.
    base = _row(md, "tiny", "-", "Base Model")
    assert base[3:6] == ["25.00", "40.00", "32.50"]
    van = _row(md, "tiny", "GRPO", "vanilla")
    assert van[3:6] == ["45.00", "65.00", "55.00"] and van[6] == "tiny-grpo-vanilla-s0"
    dapo = _row(md, "tiny", "GRPO", "DAPO")
    assert dapo[3:6] == ["35.00 ▼-10.00", "80.00 ▲+15.00", "57.50 ▲+2.50"]
    # VADE: s0 scored, s1 partial and unevaluated -> value from s0 marked '*', both runs named
    vade = _row(md, "tiny", "GRPO", "Ours (VADE)")
    assert vade[3:6] == ["55.00* ▲+10.00", "70.00* ▲+5.00", "62.50* ▲+7.50"]
    assert vade[6] == "tiny-grpo-vade-s0, tiny-grpo-vade-s1 (partial)"
    # expected by the config but never run: every cell missing, the run named
    gspo = _row(md, "tiny", "GSPO", "Ours (VADE)")
    assert gspo[3:6] == ["missing"] * 3 and gspo[6] == "tiny-gspo-vade-s0 (missing)"
    # Table 2 / 5: the ablation without a chart score has a missing AVG, never a partial mean
    t2 = md.split("### Table 2")[1].split("### Table 5")[0]
    assert _row(t2, "tiny", "GRPO", "p(1-p)")[3] == "missing"
    t5 = md.split("### Table 5")[1]
    assert _row(t5, "tiny", "GRPO", "p(1-p)")[3:6] == ["50.00 ▼-5.00", "missing", "missing"]
    # inventory lists every run with its status
    assert _row(md, "tiny-grpo-vade-s1")[5] == "partial"
    assert _row(md, "tiny-gspo-vade-s0")[5] == "missing"


def test_report_headline_and_figures(reports):
    md = (reports / "a" / "report.md").read_text()
    row = _row(md, "tiny", "GRPO", "0")
    assert row[3:9] == ["0.600", "0.597", "384", "288", "128", "0.333"]
    assert row[9:11] == ["n/a (no difficulty file)"] * 2  # no --difficulty given
    assert row[11] == "tiny-grpo-dapo-s0, tiny-grpo-vade-s0"
    # seed 1 has a partial VADE run and no DAPO run, GSPO no DAPO run at all: no rows, named
    with pytest.raises(AssertionError, match="no row"):
        _row(md, "tiny", "GRPO", "1")
    assert ("No row for the seeds the grid runs only one of DAPO and VADE on: tiny GRPO: 1; "
            "tiny GSPO: 0.") in md
    for name in ("figure1", "figure3", "figure4", "difficulty_heatmap", "selection_counts"):
        png = reports / "a" / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f"figures/{name}.png" in md
    # selection counts: every step selects B items, so the bucket means weighted by items sum
    # to steps * B / N per item on average; check the vanilla row exists and is numeric
    sel = md.split("## Per-sample difficulty")[1]
    bucket0 = _row(sel, "r/G = 0")
    assert bucket0[1] == "5"  # ids 0, 9, 18, 27, 36 have r = 0
    assert re.fullmatch(r"\d+\.\d\d", bucket0[2])
    # items x mean selections summed over buckets = all selections: 4 steps x B items (vanilla)
    table = sel.split("**tiny GRPO**")[1].split("**tiny GSPO**")[0]
    body = [line for line in table.splitlines() if line.startswith(("| r/G", "| 0"))]
    total = sum(int(r.split("|")[2]) * float(r.split("|")[3]) for r in body)
    assert len(body) == 6 and total == pytest.approx(4 * B, abs=0.05)
    assert "tiny-grpo-vade-s1 (partial)]" in table
    assert "Heatmap: run tiny-grpo-vade-s0, 12 of 40 items drawn with seed 3" in md


def test_report_is_deterministic(reports):
    a = (reports / "a" / "report.md").read_text()
    b = (reports / "b" / "report.md").read_text()
    assert a == b
    assert "val/acc [duckdb]" in a
    for png in sorted((reports / "a" / "figures").glob("*.png")):
        assert png.read_bytes() == (reports / "b" / "figures" / png.name).read_bytes(), png.name


def test_mlflow_fills_metrics_a_history_lacks(tmp_path):
    from vade.tracking import Tracker

    _record(tmp_path / "runs", "tiny-grpo-vanilla-s0", [0.0, 0.0, 0.0], metrics=False)
    (tmp_path / "eval").mkdir()  # no evaluations yet: every cell missing, no error
    uri = fresh_store(tmp_path / "mlflow.db")
    with Tracker(uri, "fx", "tiny-grpo-vanilla-s0") as t:
        for step, v in ((1, 0.25), (3, 0.5)):
            t.log_metrics({"val/acc": v}, step=step)
    md = _report(tmp_path, tmp_path / "r", "--mlflow-uri", uri, "--mlflow-experiment", "fx")
    assert _row(md, "tiny-grpo-vanilla-s0")[8] == "val/acc [mlflow]"
    from vade.report.collect import collect

    got = collect(runs=[tmp_path / "runs"], evals=[], expected=[], metric_names=["val/acc"],
                  mlflow_uri=uri, mlflow_experiment="fx").runs["tiny-grpo-vanilla-s0"]
    curve = got.curves["val/acc"]
    np.testing.assert_array_equal(curve.step, [1, 3])
    np.testing.assert_allclose(curve.value, [0.25, 0.5])
    np.testing.assert_allclose(curve.rollouts, [B * G, 3 * B * G])  # joined from the history


def test_report_paper_comparison_rows(fixture_dirs, tmp_path):
    cfg = json.dumps({"name": "p", "report": {"paper_comparison": True,
                                              "benchmarks": ["math", "chart"]}})
    out = tmp_path / "p"
    assert main(["report", "--config-json", cfg, "--evals", str(fixture_dirs / "eval"),
                 "--out", str(out), "--mlflow-uri", "", "--expect",
                 "qwen2.5-vl-7b-grpo-vade-s0"]) == 0
    md = (out / "report.md").read_text()
    row = _row(md, "qwen2.5-vl-7b", "GRPO", "Ours (VADE)")
    assert row[3:6] == ["missing"] * 3
    paper_row = md.splitlines()[md.splitlines().index(
        next(line for line in md.splitlines() if line.startswith("| qwen2.5-vl-7b | GRPO"))) + 1]
    assert "↳ paper" in paper_row and "64.75" in paper_row and "Table 1" in paper_row


def test_report_bad_config_is_a_one_line_error(tmp_path, capsys):
    rc = main(["report", "--config-json", '{"report": {"heatmap_samples": 0}}',
               "--out", str(tmp_path)])
    assert rc == 2
    assert "report.heatmap_samples" in capsys.readouterr().err


def test_html_report_shows_tables_and_embeds_figures(reports):
    """What ``snakemake --report`` shows: HTML pages, not a Markdown download (real renderer)."""
    page = (reports / "a" / "report.html").read_text()
    assert page.count("<table>") >= 5  # runs, Table 1, 2, 5, headline (+ selection counts)
    assert "<td>Ours (VADE)</td>" in page and "<td>62.50* ▲+7.50</td>" in page
    assert 'src="figures/' not in page  # every figure inlined: the page stands alone
    assert page.count('src="data:image/png;base64,') == 5
    table1 = (reports / "a" / "tables" / "table1.html").read_text()
    assert "<th>math</th>" in table1 and "<td>55.00* ▲+10.00</td>" in table1
    assert "<img" not in table1
    assert sorted(p.name for p in (reports / "a" / "tables").iterdir()) == [
        "headline.html", "per_run.csv", "preregistered.html", "runs.html", "seeds.html",
        "table1.html", "table2.html", "table5.html"]
    for name in ("report.html", "tables/table1.html", "tables/per_run.csv"):
        assert (reports / "a" / name).read_bytes() == (reports / "b" / name).read_bytes()


def test_report_links_the_sampler_lab_when_the_workflow_writes_it(fixture_dirs, reports,
                                                                  tmp_path):
    """With ``simulate.enabled`` the sampler lab's page sits beside the report (workflow rule
    simulate) and the report links it; without, no dead link."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text((FIXTURES / "config.yaml").read_text() + "\nsimulate:\n  enabled: true\n")
    assert main(["report", "--config", str(cfg), "--runs", str(fixture_dirs / "runs"),
                 "--evals", str(fixture_dirs / "eval"), "--out", str(tmp_path / "r"),
                 "--mlflow-uri", ""]) == 0
    assert "[its summary, with its figures](simulate/summary.html)" in (
        tmp_path / "r" / "report.md").read_text()
    assert 'href="simulate/summary.html"' in (tmp_path / "r" / "report.html").read_text()
    assert "simulate/summary.html" not in (reports / "a" / "report.html").read_text()


def test_score_axis_is_never_narrower_than_its_noise():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vade.report.figures import min_span

    fig, ax = plt.subplots()
    for ylim, want in (((0.500, 0.506), (0.453, 0.553)), ((0.0, 0.01), (0.0, 0.1)),
                       ((0.97, 1.0), (0.9, 1.0)), ((0.2, 0.6), (0.2, 0.6))):
        ax.set_ylim(*ylim)
        min_span(ax, 0.1)
        assert ax.get_ylim() == pytest.approx(want)
    plt.close(fig)


def test_validation_panels_start_at_zero_with_a_band(tmp_path, monkeypatch):
    """Figure 4a from a history with the step-0 score and ``val/n``: x from 0, a 95% band."""
    from vade.report import figures
    from vade.report.collect import collect

    root = tmp_path / "runs"
    _record(root, "tiny-grpo-vade-s0", [0.5, 0.55])
    with RunStore(root / "tiny-grpo-vade-s0" / "history.duckdb", "tiny-grpo-vade-s0") as store:
        store.log_metrics(0, {"val/acc": 0.4, "val/n": 100.0})
        store.log_metrics(1, {"val/n": 100.0})
        store.log_metrics(2, {"val/n": 100.0})
    inputs = collect(runs=[root], evals=[], expected=[],
                     metric_names=["val/acc", figures.VAL_ITEMS])
    curve = inputs.runs["tiny-grpo-vade-s0"].curves["val/acc"]
    assert curve.step.tolist() == [0, 1, 2] and curve.rollouts[0] == 0.0
    shown = {}
    monkeypatch.setattr(figures, "save", lambda fig, path: shown.setdefault("fig", fig))
    figures.figure4(inputs, tmp_path / "f4.png", "val/acc")
    ax = shown["fig"].axes[0]
    assert ax.get_xlim()[0] == 0.0
    (band,) = ax.collections  # fill_between: ±1.96 sqrt(p(1-p)/n)
    lower = band.get_paths()[0].vertices[:, 1].min()
    assert lower == pytest.approx(0.4 - 1.96 * np.sqrt(0.4 * 0.6 / 100), abs=1e-9)
    assert ax.get_legend().get_texts()[0].get_text() == "vade s0"
    inputs.catalog.close()


def test_initial_difficulty_rollouts_on_the_cost_axis(fixture_dirs, tmp_path):
    """The initial estimate costs G = 8 rollouts for each of the N = 40 samples = 320. VADE
    reaches the target after 128 training rollouts, 448 with them: 448 / 384 = 1.167 of DAPO's
    rollouts to its peak. DAPO starts from no estimate (offset 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vade.report.collect import collect
    from vade.report.figures import _panel

    diff = tmp_path / "difficulty" / "tiny" / "initial.parquet"
    diff.parent.mkdir(parents=True)
    pq.write_table(pa.table({"sample_id": np.arange(N), "correct": np.arange(N) % (G + 1),
                             "rollouts": np.full(N, G)}), diff)
    md = _report(fixture_dirs, tmp_path / "r", "--difficulty", str(diff))
    row = _row(md, "tiny", "GRPO", "0")
    assert row[7:11] == ["128", "0.333", "448", "1.167"]
    inputs = collect(runs=[fixture_dirs / "runs"], evals=[], expected=[],
                     metric_names=["val/acc"], difficulty=[diff])
    for axis, vade_x0 in (("generated", 32.0), ("all", 352.0)):
        fig, ax = plt.subplots()
        _panel(ax, inputs, "tiny", "grpo", ("dapo", "vade"), "val/acc", "rollouts", "v",
               score=False, cost_axis=axis)
        # vade has two seeds here, so each method is drawn as its mean over seeds
        first = {line.get_label().split()[0]: line.get_xdata()[0] for line in ax.lines
                 if not line.get_label().startswith("_")}
        plt.close(fig)
        assert first["dapo"] == 96.0 and first["vade"] == vade_x0
    with pytest.raises(ValueError, match="'report.cost_axis' must be one of all, generated"):
        ReportConfig.from_dict({"cost_axis": "yes"})
    with pytest.raises(ValueError, match="plateau_checks"):
        ReportConfig.from_dict({"plateau_checks": [300, 0]})
    assert ReportConfig.from_dict({"plateau_checks": [600, 300]}).plateau_checks == (300, 600)
    assert ReportConfig().cost_axis == "all"


def test_table1_has_diva_rows_when_diva_runs_exist(tmp_path):
    """DIVA-GRPO (uniform sampler) and VADE + DIVA rows, against vanilla, hand-computed."""
    runs, evals = tmp_path / "runs", tmp_path / "eval"
    scores = {"tiny-grpo-vanilla-s0": {"math": [40.0, 50.0]},    # 45
              "tiny-grpo-diva-s0": {"math": [50.0, 60.0]},       # 55: +10
              "tiny-grpo-vade-diva-s0": {"math": [30.0, 30.0]}}  # 30: -15
    for rid in scores:
        _record(runs, rid, [0.3, 0.4])
    for rid, per in scores.items():
        key = parse_run_id(rid)
        write_eval_results(evals / f"{rid}.duckdb", [
            EvalRow(rid, key.model, key.algorithm, key.method, key.seed, b, i, 100 + i, v, 10,
                    f"ckpt/{rid}", f"vade_{b}", "acc")
            for b, reps in per.items() for i, v in enumerate(reps)])
    assert main(["report", "--runs", str(runs), "--evals", str(evals), "--out",
                 str(tmp_path / "r"), "--mlflow-uri", ""]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    t1 = md.split("### Table 1")[1].split("### Table 2")[0]
    assert _row(t1, "tiny", "GRPO", "DIVA-GRPO")[3:5] == ["55.00 ▲+10.00", "55.00 ▲+10.00"]
    assert _row(t1, "tiny", "GRPO", "VADE + DIVA")[3] == "30.00 ▼-15.00"
    assert _row(t1, "tiny", "GRPO", "VADE + DIVA")[-1] == "tiny-grpo-vade-diva-s0"


def test_a_difference_that_prints_as_zero_is_marked_equal():
    from vade.report.tables import Cell, _delta

    cell = Cell(65.8333333, ("a",), (), False)
    ref = Cell(65.8333334, ("b",), (), False)  # float noise below the printed digits
    assert _delta(cell, ref, 2) == "65.83 =+0.00"
    assert _delta(Cell(65.84, ("a",), (), False), ref, 2) == "65.84 ▲+0.01"
    assert _delta(Cell(65.82, ("a",), (), False), ref, 2) == "65.82 ▼-0.01"
