"""Runner budget accounting, determinism, the Figure 1 regression, config, compare, report, CLI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vade.simulate.compare import compare, lambda_sweep, rollouts_to_target, summarise
from vade.simulate.config import SimConfig, SweepConfig, load_config
from vade.simulate.dynamics import DynamicsParams
from vade.simulate.runner import CURVES, METHODS, RunSettings, run_method

ROOT = Path(__file__).resolve().parents[1]
SMALL = DynamicsParams(n_samples=300, n_categories=3)
SHORT = RunSettings(batch_size=20, steps=12)


def test_vanilla_costs_exactly_b_times_g_per_step():
    out = run_method("vanilla", SMALL, SHORT, seed=0)
    assert np.all(out["rollouts"] == 20 * 8)
    np.testing.assert_array_equal(out["cumulative_rollouts"], np.arange(1, 13) * 160)
    assert set(out) == {*CURVES, "step"} and out["step"].tolist() == list(range(1, 13))


def test_dapo_counts_its_discarded_groups():
    # Every sample unlearnable: every group has r = 0, so DAPO burns its whole cap each step.
    dead = replace(SMALL, unlearnable_fraction=1.0, noisy_fraction=0.0)
    out = run_method("dapo", dead, SHORT, seed=0)
    assert np.all(out["rollouts"] == 3 * 20 * 8)
    assert np.all(out["n_trained"] == 0) and np.all(out["effective_ratio"] == 0)


def test_dapo_rounds_and_trained_groups_are_consistent():
    out = run_method("dapo", SMALL, RunSettings(batch_size=20, steps=30), seed=1)
    rounds = out["rollouts"] / (20 * 8)
    assert set(np.unique(rounds)) <= {1.0, 2.0, 3.0} and rounds.max() > 1
    assert np.all(out["n_trained"] <= 20)
    np.testing.assert_array_equal(out["effective_ratio"], out["n_trained"] / 20)
    # More rounds only when the previous ones fell short of B informative groups.
    assert np.all(out["n_trained"][rounds < 3] == 20)
    one = run_method("dapo", SMALL, RunSettings(batch_size=20, steps=30, dapo_cap=1.0), seed=1)
    assert np.all(one["rollouts"] == 160)


def test_mmr1_rescoring_and_vade_initial_rollouts_are_counted():
    out = run_method("mmr1", SMALL, SHORT, seed=0, options={"rescore_every": 4,
                                                             "rescore_rollouts": 2})
    expected = np.full(12, 160.0)
    expected[[0, 4, 8]] += 300 * 2
    np.testing.assert_array_equal(out["rollouts"], expected)
    init = run_method("vade", SMALL, replace(SHORT, initial_rollouts=True), seed=0)
    assert init["rollouts"][0] == 160 + 300 * 8 and np.all(init["rollouts"][1:] == 160)


def test_greso_runs_under_dapos_filter_and_cap():
    """Published GRESO trains only informative groups and pays for every group generated, at
    most run.dapo_cap plain steps a step; the skip-only variant trains whatever it drew."""
    out = run_method("greso", SMALL, RunSettings(batch_size=20, steps=30), seed=1)
    rounds = out["rollouts"] / (20 * 8)
    assert set(np.unique(rounds)) <= {1.0, 2.0, 3.0} and rounds.max() > 1
    np.testing.assert_array_equal(out["effective_ratio"], out["n_trained"] / 20)
    assert np.all(out["n_trained"][rounds < 3] == 20)
    dead = replace(SMALL, unlearnable_fraction=1.0, noisy_fraction=0.0)
    burnt = run_method("greso", dead, SHORT, seed=0)
    assert np.all(burnt["rollouts"] == 3 * 20 * 8) and np.all(burnt["n_trained"] == 0)
    skip = run_method("greso-skip", dead, SHORT, seed=0)
    assert np.all(skip["rollouts"] == 160) and np.all(skip["n_trained"] == 20)


def test_peers_that_read_the_initial_rollouts_pay_for_them():
    """mopps-prior and sec-passrate start from N x G initial rollouts, counted at step 1; SEC
    on the environment's levels and plain MoPPS read none."""
    for method in ("mopps-prior", "sec-passrate"):
        out = run_method(method, SMALL, SHORT, seed=0)
        assert out["rollouts"][0] == 160 + 300 * 8 and np.all(out["rollouts"][1:] == 160)
    for method in ("mopps", "sec"):
        assert np.all(run_method(method, SMALL, SHORT, seed=0)["rollouts"] == 160)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_is_deterministic_per_seed(method):
    a = run_method(method, SMALL, SHORT, seed=4)
    b = run_method(method, SMALL, SHORT, seed=4)
    c = run_method(method, SMALL, SHORT, seed=5)
    for k in CURVES:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["mean_pass_rate"], c["mean_pass_rate"])
    assert np.all((a["effective_ratio"] >= 0) & (a["effective_ratio"] <= 1))


def test_unknown_method_and_options_are_named():
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        run_method("nope", SMALL, SHORT, seed=0)
    with pytest.raises(ValueError, match="mopps.lambda1"):
        run_method("mopps", SMALL, SHORT, seed=0, options={"lambda1": 0.2})
    with pytest.raises(ValueError, match="dapo.cap"):
        run_method("dapo", SMALL, SHORT, seed=0, options={"cap": 2})


def test_figure1_regression_under_default_dynamics():
    """Uniform's ratio decays over training; VADE's stays higher (a comparison, not a number)."""
    dyn, run = DynamicsParams(), RunSettings()
    n = run.steps // 10
    uniform = run_method("vanilla", dyn, run, seed=0)["effective_ratio"]
    vade = run_method("vade", dyn, run, seed=0)["effective_ratio"]
    assert uniform[-n:].mean() < 0.5 * uniform[:n].mean()
    assert vade[-n:].mean() > 2 * uniform[-n:].mean()
    assert vade.mean() > uniform.mean()


def test_rollouts_to_target_hand_computed():
    pass_rate = np.array([[0.1, 0.5, 0.9, 0.95], [0.1, 0.2, 0.3, 0.4]])
    cumulative = np.array([[10, 20, 30, 40], [5, 10, 15, 20]])
    out = rollouts_to_target(pass_rate, cumulative, np.array([0.85, 0.35]))
    assert out.tolist() == [30.0, 20.0]
    assert np.isnan(rollouts_to_target(pass_rate, cumulative, np.array([1.0, 1.0]))).all()


def _tiny_config(**kw) -> SimConfig:
    base = dict(dynamics=SMALL, run=SHORT, seeds=2, methods=("vanilla", "dapo", "vade"),
                sweep=SweepConfig(lambda1=(0.0, 0.2), lambda2=(0.99, 1.0)))
    base.update(kw)
    return SimConfig(**base)


def test_compare_summary_and_sweep_shapes_and_target():
    cfg = _tiny_config()
    seen: list[str] = []
    comp = compare(cfg, seen.append)
    assert len(seen) == 6 and comp.curves["vade"]["mean_pass_rate"].shape == (2, 12)
    dapo_best = comp.curves["dapo"]["mean_pass_rate"].max(axis=1)
    np.testing.assert_allclose(comp.targets, 0.995 * dapo_best)
    rows = {r["method"]: r for r in summarise(comp)}
    assert rows["dapo"]["seeds_reached"] == 2
    assert rows["vanilla"]["total_rollouts"] == 12 * 160
    assert rows["dapo"]["ratio_early_min"] <= rows["dapo"]["ratio_early"] <= \
        rows["dapo"]["ratio_early_max"]
    sweep = lambda_sweep(cfg, comp.targets)
    assert sweep.mean_ratio.shape == (2, 2) and sweep.final_pass_rate.shape == (2, 2)


def test_config_file_matches_the_built_in_defaults():
    cfg = load_config(ROOT / "config" / "simulate.yaml")
    default = SimConfig()
    assert (cfg.dynamics, cfg.run, cfg.seeds, cfg.methods, cfg.sweep, cfg.target_fraction) == (
        default.dynamics, default.run, default.seeds, default.methods, default.sweep,
        default.target_fraction)


@pytest.mark.parametrize("values, message", [
    ({"bogus": 1}, "unknown key config.bogus"),
    ({"dynamics": {"learning_rat": 1}}, "unknown key dynamics.learning_rat"),
    ({"dynamics": {"learning_rate": -1}}, "dynamics.learning_rate"),
    ({"run": {"steps": 0}}, "run.steps"),
    ({"run": {"batch_size": 10_000}}, "run.batch_size"),
    ({"methods": ["vade", "nope"]}, r"methods\[1\]"),
    ({"options": {"mopps": {"decay": 2}}}, "options.mopps: decay"),
    ({"options": {"vade": {"lambda3": 1}}}, "options.vade.lambda3"),
    ({"sweep": {"lambda1": [0.5, 1.2]}}, r"sweep.lambda1\[1\]"),
    ({"sweep": {"method": "mopps"}}, "sweep.method"),
    ({"seeds": 0}, "seeds"),
])
def test_config_errors_name_the_key(values, message):
    with pytest.raises(ValueError, match=message):
        SimConfig.from_dict(values)


def test_report_writes_duckdb_csv_and_plots(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("matplotlib")
    from vade.simulate.report import format_table, plot_curves, plot_sweep, write_tables

    cfg = _tiny_config(seeds=1)
    comp = compare(cfg)
    summary = summarise(comp)
    sweep = lambda_sweep(cfg, comp.targets)
    paths = write_tables(tmp_path, comp, summary, sweep, cfg.to_dict())
    with duckdb.connect(str(paths["duckdb"])) as con:
        assert con.execute("SELECT count(*) FROM sim_steps").fetchone()[0] == 3 * 12
        row = con.execute("SELECT sum(rollouts), max(cumulative_rollouts) FROM sim_steps "
                          "WHERE method = 'vanilla'").fetchone()
        assert row == (12 * 160, 12 * 160)
        assert con.execute("SELECT count(*) FROM sim_summary").fetchone()[0] == 3
        assert con.execute("SELECT count(*) FROM sim_sweep").fetchone()[0] == 4
    assert (tmp_path / "sim_steps.csv").read_text().startswith("method,seed,step,")
    for png in (plot_curves(tmp_path / "c.png", comp), plot_sweep(tmp_path / "s.png", sweep)):
        assert png.read_bytes()[:4] == b"\x89PNG"
    table = format_table(summary)
    assert table.splitlines()[2].startswith("vanilla")


def test_curves_draw_every_method_in_its_own_colour_and_style(tmp_path, monkeypatch):
    """All 14 simulated methods on one plot (the lab's default list): every line has the method
    table's (colour, line style), and no two methods share a pair (tab10 by position gave
    vanilla and mmr1, dapo and sec, vade and sec-passrate one colour each). Real comparison on
    a tiny environment; the figure is taken before it is closed."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from vade import methods
    from vade.simulate.report import plot_curves

    comp = compare(_tiny_config(seeds=1, methods=METHODS))
    drawn = []
    monkeypatch.setattr(plt, "close", drawn.append)
    plot_curves(tmp_path / "c.png", comp)
    lines = {line.get_label(): (line.get_color(), line.get_linestyle())
             for line in drawn[0].axes[0].get_lines()}
    assert set(lines) == set(METHODS) and len(METHODS) == 14  # with mmr1-stale
    assert len(set(lines.values())) == len(lines)
    plt.close(drawn[0])
    assert all(to_hex(c) == to_hex(methods.get(m).colour) and s == methods.get(m).linestyle
               for m, (c, s) in lines.items())


def test_cli_quick_run_and_bad_config(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from vade.cli import main

    out = tmp_path / "sim"
    assert main(["simulate", "--quick", "--steps", "15", "--seeds", "1", "--no-sweep",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "vade" in printed and "to target" in printed
    assert (out / "simulate.duckdb").is_file() and (out / "curves.png").is_file()
    assert not (out / "sweep.png").exists()
    page = (out / "summary.html").read_text()  # a table and its figure, not a <pre> block
    assert "<pre>" not in page and "<td>vade</td>" in page and page.count("<tr>") == 1 + len(METHODS)
    assert page.count('src="data:image/png;base64,') == 1 and "sweep" not in page
    bad = tmp_path / "bad.yaml"
    bad.write_text("dynamics:\n  learning_rate: -3\n")
    assert main(["simulate", "--config", str(bad), "--out", str(out)]) == 2
    assert "dynamics.learning_rate" in capsys.readouterr().err
