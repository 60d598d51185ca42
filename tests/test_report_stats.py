"""Statistics over seeds (``vade.report.stats``, ``vade.report.seeds``): hand-computed numbers.

Real: the report's own ``Inputs``/``RunInfo``/``Curve`` values, built by hand instead of read
from DuckDB (the collection step is tested in test_report.py), so every expected number below
is worked out in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from vade.report.collect import Curve, Inputs, RunInfo, parse_run_id
from vade.report.seeds import run_numbers, seed_statistics
from vade.report.stats import mean_interval, paired_interval, t_quantile_975


def test_t_quantiles_table_and_expansion():
    assert t_quantile_975(1) == pytest.approx(12.7062)
    assert t_quantile_975(4) == pytest.approx(2.7764)
    assert t_quantile_975(30) == pytest.approx(2.0423)
    # Cornish-Fisher beyond the table: t(0.975; 40) = 2.02108, t(0.975; 120) = 1.97993
    assert t_quantile_975(40) == pytest.approx(2.02108, abs=1e-4)
    assert t_quantile_975(120) == pytest.approx(1.97993, abs=1e-4)
    with pytest.raises(ValueError, match="df >= 1"):
        t_quantile_975(0)


def test_mean_interval_hand_computed():
    # [1, 2, 3, 4]: mean 2.5, sd = sqrt(5/3) = 1.290994, se = 0.645497, t(3) = 3.1824
    iv = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert (iv.mean, iv.n) == (2.5, 4)
    assert iv.low == pytest.approx(2.5 - 3.1824 * 0.645497, abs=1e-5)
    assert iv.high == pytest.approx(4.554226, abs=1e-5)
    assert iv.text(2) == "2.50 [0.45, 4.55]"
    one = mean_interval([0.7, float("nan"), None])  # non-finite and missing values are dropped
    assert one.n == 1 and one.mean == 0.7 and math.isnan(one.low) and one.text(2) == "0.70 (n=1)"
    assert mean_interval([]).text() == "n/a"


def test_paired_interval_uses_common_seeds_only():
    # seeds 0..2 in both: differences 0.1, 0.1, 0.0 -> mean 0.066667, sd 0.057735,
    # se 0.033333, t(2) = 4.3027 -> half 0.143423; seed 3 (only in b) is left out
    iv = paired_interval({0: 0.6, 1: 0.7, 2: 0.65}, {0: 0.5, 1: 0.6, 2: 0.65, 3: 0.9})
    assert iv.n == 3
    assert iv.mean == pytest.approx(0.066667, abs=1e-6)
    assert (iv.low, iv.high) == pytest.approx((-0.076756, 0.210090), abs=1e-5)
    assert not iv.excludes_zero()
    # 0.2, 0.3, 0.25: mean 0.25, sd 0.05, half 4.3027 * 0.05 / sqrt(3) = 0.124208
    shown = paired_interval({0: 0.3, 1: 0.5, 2: 0.3}, {0: 0.1, 1: 0.2, 2: 0.05})
    assert shown.low == pytest.approx(0.125792, abs=1e-5) and shown.excludes_zero()


def _run(run_id: str, val: list[float], rollouts: list[float], ratio: list[float],
         status: str = "complete") -> RunInfo:
    val_curve = Curve(np.array([0, 10, 20]), np.array(val), np.array(rollouts, float), "duckdb")
    eff = Curve(np.arange(1, len(ratio) + 1), np.array(ratio), np.full(len(ratio), np.nan),
                "duckdb")
    return RunInfo(parse_run_id(run_id), status, curves={"val/acc": val_curve,
                                                          "effective_ratio": eff})


def _inputs(runs: list[RunInfo]) -> Inputs:
    return Inputs(runs={r.key.run_id: r for r in runs}, evals={}, benchmarks=[], catalog=None,
                  initial_accuracy={}, sample_labels={}, notes=[])


TWO_SEEDS = [
    # seed 0: DAPO peak 0.8 at 700 rollouts -> target 0.796; VADE reaches it at 160
    _run("t-grpo-dapo-s0", [0.5, 0.6, 0.8], [0, 300, 700], [1.0] * 4),
    _run("t-grpo-vade-s0", [0.5, 0.8, 0.7], [0, 160, 320], [0.7] * 4),
    _run("t-grpo-vanilla-s0", [0.5, 0.6, 0.6], [0, 160, 320], [0.5] * 4),
    # seed 1: DAPO peak 0.7 at 350 -> target 0.6965; VADE reaches it at 320, vanilla at 160
    _run("t-grpo-dapo-s1", [0.5, 0.7, 0.6], [0, 350, 650], [1.0] * 4),
    _run("t-grpo-vade-s1", [0.5, 0.65, 0.75], [0, 160, 320], [0.8] * 4),
    _run("t-grpo-vanilla-s1", [0.5, 0.7, 0.65], [0, 160, 320], [0.4] * 4),
    _run("t-grpo-vade-s2", [0.5, 0.9, 0.9], [0, 160, 320], [0.9] * 4, status="partial"),
]


def test_run_numbers_of_one_run():
    n = run_numbers(TWO_SEEDS[1], "val/acc", target=0.796)
    assert (n.final_val, n.mean_ratio, n.rollouts_to_target, n.rollouts_to_peak) == (
        0.7, pytest.approx(0.7), 160.0, 160.0)
    assert run_numbers(TWO_SEEDS[2], "val/acc", target=0.796).rollouts_to_target is None


def test_seed_statistics_hand_computed():
    md = seed_statistics(_inputs(TWO_SEEDS), "val/acc", 0.995, decimals=2)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in md.splitlines()
            if line.startswith("| ")}
    vade = rows["vade"]
    assert vade[1] == "2"  # the partial seed-2 run is left out
    assert vade[2] == "20"  # the runs' last validated step
    # final val 0.7, 0.75: mean 0.725, sd 0.035355, se 0.025, t(1) = 12.7062 -> half 0.317655
    assert vade[3] == "0.725 [0.407, 1.043]"
    assert vade[4] == "0.100 [0.100, 0.100] *"  # paired: 0.7-0.6 and 0.75-0.65
    assert vade[5] == "0.750 [0.115, 1.385]"  # ratio 0.7, 0.8
    assert vade[6] == "0.300 [-0.971, 1.571]"  # 0.2, 0.4: se 0.1
    assert vade[7].startswith("240 [-776, 1256] (2/2 reached)")  # 160, 320
    assert rows["vanilla"][4] == "-" and rows["vanilla"][7].startswith("160 (n=1) (1/2 reached)")
    # VADE - DAPO final: -0.1, +0.15 -> 0.025; VADE to target / DAPO to peak: 160/700, 320/350
    head = rows["final validation, VADE - DAPO"]
    assert head[1].startswith("0.025 [")
    ratio = rows["VADE's rollouts to target / DAPO's to its peak"]
    assert ratio[1].startswith(f"{(160 / 700 + 320 / 350) / 2:.3f} [")
    assert "(2/2 seeds: VADE reached the target" in ratio[1]


def test_rollouts_to_target_out_of_the_seeds_dapo_ran():
    """A third seed of VADE and vanilla without a DAPO run (the fair race runs DAPO on fewer
    seeds) counts in the validation columns, not in the reach column's denominator."""
    extra = [_run("t-grpo-vade-s3", [0.5, 0.9, 0.9], [0, 160, 320], [0.9] * 4),
             _run("t-grpo-vanilla-s3", [0.5, 0.9, 0.9], [0, 160, 320], [0.5] * 4)]
    md = seed_statistics(_inputs(TWO_SEEDS + extra), "val/acc", 0.995, decimals=2)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in md.splitlines()
            if line.startswith("| ")}
    assert rows["vade"][1] == "3" and rows["vade"][7].startswith("240 [-776, 1256] (2/2 reached)")
    assert rows["vanilla"][1] == "3" and rows["vanilla"][7].startswith("160 (n=1) (1/2 reached)")


def test_one_seed_report_says_it_cannot_rank():
    md = seed_statistics(_inputs(TWO_SEEDS[:3]), "val/acc", 0.995)
    assert "cannot rank methods" in md and "| vade |" not in md


def test_seed_band_hand_computed():
    from vade.report.figures import seed_band

    a = Curve(np.array([0, 10, 20]), np.array([0.5, 0.6, 0.7]), np.array([0., 100, 200]), "d")
    b = Curve(np.array([0, 10, 20]), np.array([0.5, 0.8, 0.9]), np.array([0., 120, 260]), "d")
    c = Curve(np.array([0, 10, 30]), np.array([0.5, 0.7, 0.1]), np.array([0., 110, 330]), "d")
    x, mean, low, high = seed_band([a, b, c], "rollouts")
    assert x.tolist() == [0.0, 110.0, 230.0]  # step 30: one seed only, left out
    # step 10: 0.6, 0.8, 0.7 -> mean 0.7, sd 0.1, half 4.3027 * 0.1 / sqrt(3) = 0.248416
    assert mean.tolist() == pytest.approx([0.5, 0.7, 0.8])
    assert (low[1], high[1]) == pytest.approx((0.451584, 0.948416), abs=1e-5)
    assert low[0] == high[0] == 0.5  # all seeds equal: no width
    assert seed_band([a, b], "step")[0].tolist() == [0.0, 10.0, 20.0]


def test_figures_draw_a_band_per_method_over_seeds(tmp_path):
    """Several seeds: one legend entry per method ('mean of k seeds') and a filled band; one
    seed: one line per run, as before."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vade.report import figures

    for runs, labels in ((TWO_SEEDS[:6], ["dapo mean of 2 seeds", "vade mean of 2 seeds"]),
                         (TWO_SEEDS[:3], ["dapo s0", "vade s0"])):
        fig, ax = plt.subplots()
        figures._panel(ax, _inputs(runs), "t", "grpo", ("dapo", "vade"), "val/acc",
                       "rollouts", "validation score", score=True)
        assert sorted(ax.get_legend_handles_labels()[1]) == labels
        assert len(ax.collections) == (2 if len(runs) == 6 else 0)  # bands (no val/n here)
        plt.close(fig)
    out = figures.figure4(_inputs(TWO_SEEDS), tmp_path / "f4.png", "val/acc")
    assert out.stat().st_size > 0


def test_headline_row_when_dapo_never_beats_its_start():
    """A DAPO run whose best validation is the step-0 one (0 rollouts) has no ratio: the row
    says so instead of the whole report failing (a smoke-scale study hit this)."""
    from vade.report.tables import headline

    runs = [_run("t-grpo-dapo-s0", [0.8, 0.6, 0.7], [0, 300, 700], [1.0] * 4),
            _run("t-grpo-vade-s0", [0.5, 0.8, 0.7], [0, 160, 320], [0.7] * 4)]
    md = headline(_inputs(runs), "val/acc", 0.995)
    assert "no ratio: DAPO's best score is its step-0 one (0 rollouts), nothing to beat" in md
    md = seed_statistics(_inputs(runs + [_run("t-grpo-vade-s1", [0.5, 0.6, 0.7], [0, 160, 320],
                                               [0.7] * 4)]), "val/acc", 0.995)
    assert "(0/1 seeds: VADE reached" in md  # seed 0's ratio is left out, never divided by 0


def _long_run(run_id: str, val: list[float], ratio: list[float]) -> RunInfo:
    """A run validated every 10 steps (step 0 first), one effective ratio per step."""
    steps = np.arange(len(val)) * 10
    val_curve = Curve(steps, np.array(val), steps * 16.0, "duckdb")
    eff = Curve(np.arange(1, len(ratio) + 1), np.array(ratio), np.full(len(ratio), np.nan),
                "duckdb")
    return RunInfo(parse_run_id(run_id), "complete", last_step=int(steps[-1]),
                   curves={"val/acc": val_curve, "effective_ratio": eff})


def test_runs_of_different_lengths_are_compared_where_both_stood():
    """Vanilla ran 40 steps, VADE 20: its differences are taken at step 20, not at vanilla's end
    (there, vanilla's late 0.9/1.0 would turn +0.1 into -0.2/-0.25)."""
    runs = [
        _long_run("t-grpo-vanilla-s0", [0.5, 0.6, 0.6, 0.9, 0.9], [0.5] * 20 + [0.1] * 20),
        _long_run("t-grpo-vanilla-s1", [0.5, 0.7, 0.65, 1.0, 1.0], [0.5] * 20 + [0.1] * 20),
        _long_run("t-grpo-vade-s0", [0.5, 0.8, 0.7], [0.7] * 20),
        _long_run("t-grpo-vade-s1", [0.5, 0.65, 0.75], [0.7] * 20),
    ]
    md = seed_statistics(_inputs(runs), "val/acc", 0.995, decimals=2)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in md.splitlines()
            if line.startswith("| ")}
    assert rows["vanilla"][2] == "40" and rows["vade"][2] == "20"
    assert rows["vanilla"][3] == "0.950 [0.315, 1.585]"  # each run at its own end: 0.9, 1.0
    # at step 20: 0.7 - 0.6 and 0.75 - 0.65; ratios over steps 1-20: 0.7 - 0.5 in both seeds
    assert rows["vade"][4] == "0.100 [0.100, 0.100] *"
    assert rows["vade"][6] == "0.200 [0.200, 0.200] *"
    assert "common last validated step" in md


def test_seed_count_from_a_paired_interval_by_hand():
    """VADE - vanilla at step 150 over 5 seeds: +0.022 [-0.013, 0.058] (the peers study). Half
    width 0.0355, sd = 0.0355 sqrt(5) / t(0.975, 4) = 0.079380 / 2.7764 = 0.028591. Seeds for
    a 0.02 difference: n = 10: 2.2622 x 0.028591 / sqrt(10) = 0.020453 > 0.02; n = 11: 2.2281 x
    0.028591 / sqrt(11) = 0.019207 <= 0.02 -> 11. With 80% power: n = 17: (2.1199 + 0.8416) x
    0.028591 / sqrt(17) = 0.020537 > 0.02; n = 18: (2.1098 + 0.8416) x 0.028591 / sqrt(18) =
    0.019890 -> 18."""
    from vade.report.stats import paired_sd_from_interval, seeds_to_separate

    sd = paired_sd_from_interval(-0.013, 0.058, 5)
    assert sd == pytest.approx(0.028591, abs=1e-6)
    assert seeds_to_separate(sd, 0.02) == 11
    assert seeds_to_separate(sd, 0.02, power=0.8) == 18
    # the round trip: 5 differences with that sd give back the interval's half-width
    diffs = 0.022 + sd * np.array([1.0, -1.0, 1.0, -1.0, 0.0]) / np.sqrt(1.0)
    diffs = 0.022 + (diffs - 0.022) * sd / np.std(diffs, ddof=1)
    assert mean_interval(diffs).half_width == pytest.approx(0.0355, abs=1e-6)
    with pytest.raises(ValueError, match="need n >= 2"):
        paired_sd_from_interval(0.0, 0.1, 1)
    with pytest.raises(ValueError, match="power must be 0.5 or 0.8"):
        seeds_to_separate(sd, 0.02, power=0.9)


def test_missing_runs_are_named_by_method_and_seed_ranges():
    """A long study's unfinished runs (the fair race: 16 of them) must stay readable inside a
    panel: one line per method, contiguous seeds as a range, in the order the panel met them."""
    from vade.report.figures import missing_text

    keys = [parse_run_id(r) for r in ("t-grpo-vade-s12", "t-grpo-vade-s13", "t-grpo-vade-s15",
                                      "t-grpo-vade-s14", "t-grpo-sec-s0", "t-grpo-sec-s2",
                                      "t-grpo-sec-s3")]
    assert missing_text(keys) == "missing: vade s12-s15\nsec s0, s2-s3"
    assert missing_text([parse_run_id("t-base")]) == "missing: base"
