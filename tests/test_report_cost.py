"""One cost axis (``vade.report.cost`` and ``Inputs.cost``): hand-computed overheads.

Real: the method table, ``Inputs``/``RunInfo``/``Curve`` values built by hand (collection from
DuckDB is tested in test_report.py).
"""

from __future__ import annotations

import numpy as np

from vade.report.collect import Curve, Inputs, RunInfo, parse_run_id
from vade.report.cost import overhead

STEPS = np.array([0, 1, 4, 5, 8, 9, 12, 13])


def test_overhead_by_method():
    """N = 480 training rows, 3,840 initial rollouts (G = 8). MMR1 re-scores 480 x 8 = 3,840
    rollouts before steps 5, 9, 13 (its first pass is the initial rollouts): through step 4
    nothing more, through 5-8 one pass, 9-12 two, 13 three. VADE pays the initial rollouts;
    MoPPS, GRESO, SEC, DAPO, vanilla pay nothing beyond their history; the variants that read
    the initial rollouts pay them."""
    kw = {"initial": 3840, "n_samples": 480}
    np.testing.assert_array_equal(overhead("mmr1", STEPS, **kw),
                                  3840 + 3840 * np.array([0, 0, 0, 1, 1, 2, 2, 3]))
    for method in ("vade", "symmetric", "diva", "mopps-prior", "sec-passrate"):
        np.testing.assert_array_equal(overhead(method, STEPS, **kw), np.full(8, 3840.0))
    for method in ("vanilla", "dapo", "mopps", "greso", "greso-skip", "sec", "base"):
        np.testing.assert_array_equal(overhead(method, STEPS, **kw), np.zeros(8))
    # no difficulty file: the initial rollouts are unknown, MMR1's re-scoring still counts
    np.testing.assert_array_equal(overhead("mmr1", STEPS, initial=None, n_samples=480),
                                  3840 * np.array([0, 0, 0, 1, 1, 2, 2, 3]))


def test_inputs_cost_adds_the_overhead_to_the_history_on_axis_all():
    steps = np.array([0, 4, 8])
    curve = Curve(steps, np.array([0.5, 0.6, 0.7]), steps * 128.0, "duckdb")
    runs = {rid: RunInfo(parse_run_id(rid), "complete", curves={"val/acc": curve},
                         n_samples=480)
            for rid in ("t-grpo-mmr1-s0", "t-grpo-greso-s0")}
    inputs = Inputs(runs=runs, evals={}, benchmarks=[], catalog=None, initial_accuracy={},
                    sample_labels={}, notes=[], initial_rollouts={"t": 3840})
    mmr1, greso = (runs[r].key for r in ("t-grpo-mmr1-s0", "t-grpo-greso-s0"))
    np.testing.assert_array_equal(inputs.cost(mmr1, curve), [3840, 3840 + 512, 7680 + 1024])
    np.testing.assert_array_equal(inputs.cost(mmr1, curve, "generated"), [0, 512, 1024])
    np.testing.assert_array_equal(inputs.cost(greso, curve), [0, 512, 1024])
    assert inputs.initial_rollouts_of(greso) == 0 and inputs.initial_rollouts_of(mmr1) == 3840
