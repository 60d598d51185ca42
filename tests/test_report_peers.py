"""The report's "VADE vs each peer" table and DAPO's plateau (``vade.report.peers``): numbers
worked out by hand in the comments.

Real: the report's own ``Inputs``/``RunInfo``/``Curve`` values, built by hand instead of read
from DuckDB (collection is tested in test_report.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from vade.report.collect import Curve, Inputs, RunInfo, parse_run_id
from vade.report.peers import at_cost, at_step, peer_statistics, plateau, plateau_by

STEPS = np.array([0, 10, 20, 30, 40, 50, 60])


def _curve(values, rollouts=None, steps=STEPS) -> Curve:
    r = np.asarray(rollouts if rollouts is not None else steps * 100, float)
    return Curve(np.asarray(steps), np.asarray(values, float), r, "duckdb")


def _run(run_id, val, ratio, rollouts=None, steps=STEPS) -> RunInfo:
    eff = Curve(np.arange(1, len(ratio) + 1), np.asarray(ratio, float),
                np.full(len(ratio), np.nan), "duckdb")
    return RunInfo(parse_run_id(run_id), "complete",
                   curves={"val/acc": _curve(val, rollouts, steps), "effective_ratio": eff})


def _inputs(*runs: RunInfo) -> Inputs:
    return Inputs(runs={r.key.run_id: r for r in runs}, evals={}, benchmarks=[], catalog=None,
                  initial_accuracy={}, sample_labels={}, notes=[])


def _cells(text: str, peer: str) -> list[str]:
    """The cells of the table's row of ``peer``."""
    row = next(line for line in text.splitlines() if line.startswith(f"| {peer} "))
    return [c.strip() for c in row.strip("|").split("|")]


def test_plateau_rule_by_hand():
    # last step 60: second third = steps 30, 40 (scores 0.66, 0.72), last third = 50, 60
    # (0.7, 0.7). Means 0.69 and 0.70; SE = sqrt(0.0018/2 + 0/2) = 0.03 -> 0.01 <= 0.03: held
    pl = plateau(_curve([0.5, 0.5, 0.6, 0.66, 0.72, 0.7, 0.7]))
    assert (pl.level, pl.second, pl.se) == pytest.approx((0.70, 0.69, 0.03))
    assert pl.reached
    # still rising: second third 0.60, 0.62 (mean 0.61), last third 0.70, 0.72 (mean 0.71);
    # SE = sqrt(0.0002/2 + 0.0002/2) = 0.014142 < 0.10: not reached
    rising = plateau(_curve([0.5, 0.55, 0.58, 0.60, 0.62, 0.70, 0.72]))
    assert rising.level == pytest.approx(0.71) and rising.se == pytest.approx(0.0141421, abs=1e-6)
    assert not rising.reached
    # near the edge: second third 0.66, 0.70 (mean 0.68, SE sqrt(0.0008/2) = 0.02), last
    # third 0.695, 0.695: 0.015 <= 0.02, held (one standard error, not half of one)
    edge = plateau(_curve([0.5, 0.5, 0.6, 0.66, 0.70, 0.695, 0.695]))
    assert edge.se == pytest.approx(0.02) and edge.reached
    assert plateau(_curve([0.5, 0.6, 0.7], steps=np.array([0, 10, 20]))) is None  # too few


def test_at_step_is_exact():
    c = _curve([0.5, 0.6, np.nan, 0.7, 0.7, 0.7, 0.7])
    assert at_step(c, 10) == 0.6 and at_step(c, 20) is None and at_step(c, 15) is None


def test_vade_vs_each_peer_paired_at_equal_steps():
    # DAPO per seed: plateau level = mean(0.7, 0.7) = 0.70 -> target 0.6965, first reached
    # at step 40 (0.72), 8,000 rollouts
    dapo = [0.5, 0.5, 0.6, 0.66, 0.72, 0.7, 0.7]
    runs = []
    for s in (0, 1):
        runs.append(_run(f"t-grpo-dapo-s{s}", dapo, [1.0] * 6, rollouts=STEPS * 200))
    # VADE seed 0 reaches 0.6965 first at step 40 (4,000 rollouts), seed 1 at step 30 (3,000);
    # VADE's value at step 60 is 0.80 / 0.76
    runs.append(_run("t-grpo-vade-s0", [0.5, 0.6, 0.6, 0.6, 0.7, 0.75, 0.80], [0.9] * 6))
    runs.append(_run("t-grpo-vade-s1", [0.5, 0.6, 0.6, 0.7, 0.7, 0.75, 0.76], [0.8] * 6))
    # MoPPS run only to step 30 in seed 0 (compared with VADE at step 30: 0.6 vs 0.55 = +0.05;
    # ratio over steps 1-3: VADE 0.9, MoPPS 0.5 -> +0.4) and to 60 in seed 1 (0.76 - 0.66 =
    # +0.10; ratio 0.8 - 0.6 = +0.2). Paired val diffs 0.05, 0.10: mean 0.075, sd 0.035355,
    # half 12.7062 * 0.035355 / sqrt(2) = 0.317655
    runs.append(_run("t-grpo-mopps-s0", [0.5, 0.5, 0.5, 0.55], [0.5] * 3, steps=STEPS[:4]))
    runs.append(_run("t-grpo-mopps-s1", [0.5, 0.6, 0.6, 0.6, 0.6, 0.7, 0.66], [0.6] * 6))
    text = peer_statistics(_inputs(*runs), "val/acc", 0.995, decimals=2)
    assert "holds in 2/2 seeds" in text
    # VADE / DAPO to the plateau target: DAPO at 8,000 rollouts; VADE at 4,000 and 3,000 ->
    # 0.5 and 0.375: geometric mean sqrt(0.5 * 0.375) = 0.4330 (the arithmetic 0.4375 is no
    # longer the summary: ratios are averaged on the log scale)
    import re

    own = re.search(r"DAPO's own: ([0-9.]+) \[", text)
    assert own and float(own.group(1)) == pytest.approx(0.4330, abs=6e-4)
    assert "0.500, 0.375" in text  # the per-seed ratios are printed
    cells = _cells(text, "mopps")
    assert cells[1] == "2"
    assert cells[2] == "0.075 [-0.243, 0.393]"  # 0.075 -/+ 0.317655
    # equal rollouts: seed 0's budget is MoPPS's 3,000 (VADE at step 30: 0.6), seed 1's 6,000:
    # the same pairs as at equal steps here
    assert cells[3] == "0.075 [-0.243, 0.393]"
    assert cells[4] == "0.300 [-0.971, 1.571]"  # diffs 0.4, 0.2: half 12.7062 * 0.141421 / 1.414
    # within each pair's common steps: VADE reaches the target in seed 1 only (step 30, 3,000
    # rollouts; in seed 0 the pair stops at step 30 where VADE has 0.6); MoPPS in seed 1 at
    # step 50 (5,000): ratio 3,000 / 5,000 = 0.6
    assert cells[5] == "3000 (n=1) (1/2)" and cells[6] == "5000 (n=1) (1/2)"
    assert cells[7] == "0.60 (1 seed)"
    assert "| greso" not in text  # peers that did not run have no row
    assert "- mopps: as published" in text  # each row names how it differs from the paper


def test_equal_rollouts_and_a_filtered_peer():
    """GRESO (under DAPO's filter) spends 300 rollouts a step against VADE's 100: at equal steps
    it is not compared; at equal rollouts VADE's 6,000 (step 60, 0.80) meets GRESO's last
    validation at or under 6,000 (step 20, 0.62): +0.18, one seed."""
    runs = [_run("t-grpo-vade-s0", [0.5, 0.6, 0.6, 0.6, 0.7, 0.75, 0.80], [0.9] * 6),
            _run("t-grpo-greso-s0", [0.5, 0.6, 0.62, 0.7, 0.8, 0.85, 0.9], [1.0] * 6,
                 rollouts=STEPS * 300)]
    cells = _cells(peer_statistics(_inputs(*runs), "val/acc"), "greso")
    assert cells[2] == "by rollouts (filtered)" and cells[3] == "0.180 (n=1)"
    assert at_cost(np.array([0.5, np.nan, 0.7]), np.array([0.0, 10.0, 20.0]), 15.0) == 0.5
    assert at_cost(np.array([0.5]), np.array([30.0]), 15.0) is None


def test_plateau_checked_at_stated_steps_takes_the_first_that_holds():
    """Steps 0-60 then 70-90: at step 60 the rule holds (second third 30-40: 0.66, 0.72;
    last 50-60: 0.70, 0.70; see test_plateau_rule_by_hand); on the whole 90-step curve the
    last third (70-90: 0.8, 0.85, 0.9) is still rising, so without checks it does not."""
    steps = np.array([0, 10, 20, 30, 40, 50, 60, 70, 80, 90])
    c = _curve([0.5, 0.5, 0.6, 0.66, 0.72, 0.7, 0.7, 0.8, 0.85, 0.9], steps=steps)
    pl, at = plateau_by(c, (30, 60))
    assert at == 60 and pl.reached and pl.level == pytest.approx(0.70)
    whole, end = plateau_by(c)
    assert end == 90 and not whole.reached


def test_rollouts_to_target_count_only_seeds_with_a_plateau():
    """DAPO plateaus in seed 0 only (seed 1 is still rising: see test_plateau_rule_by_hand), so
    seed 1 has no target: the reach cells count 1 seed, not 2. Seed 0's target 0.6965: VADE first
    at step 40 (4,000 rollouts), MoPPS at step 50 (5,000): ratio 0.80."""
    vade = [0.5, 0.6, 0.6, 0.6, 0.7, 0.75, 0.80]
    runs = [_run("t-grpo-dapo-s0", [0.5, 0.5, 0.6, 0.66, 0.72, 0.7, 0.7], [1.0] * 6),
            _run("t-grpo-dapo-s1", [0.5, 0.55, 0.58, 0.60, 0.62, 0.70, 0.72], [1.0] * 6)]
    for s in (0, 1):
        runs.append(_run(f"t-grpo-vade-s{s}", vade, [0.9] * 6))
        runs.append(_run(f"t-grpo-mopps-s{s}", [0.5, 0.6, 0.6, 0.6, 0.6, 0.7, 0.66], [0.6] * 6))
    text = peer_statistics(_inputs(*runs), "val/acc", 0.995)
    assert "holds in 1/2 seeds" in text
    cells = _cells(text, "mopps")
    assert cells[1] == "2"  # the validation differences still pair both seeds
    assert cells[5:8] == ["4000 (n=1) (1/1)", "5000 (n=1) (1/1)", "0.80 (1 seed)"]
