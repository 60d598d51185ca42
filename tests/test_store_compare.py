"""vade.store.compare: the "no behaviour change" check over run histories.

All real: the sampler, RunStore and DuckDB files; nothing is a stand-in.
"""

from __future__ import annotations

import time

import numpy as np

from vade.sampling import make_sampler
from vade.store import RunStore
from vade.store.compare import compare_histories, main


def _history(root, run_id, *, flip_step=None, seconds=0.01):
    """Six VADE steps on fixed outcomes; ``flip_step`` changes one sample's r at that step."""
    init = np.random.default_rng(0).integers(0, 9, 40).astype(float)
    s = make_sampler("vade", 40, 8, seed=5, alpha=init, beta=8 - init)
    outcomes = np.random.default_rng(1).integers(0, 9, size=(6, 8))
    (root / run_id).mkdir(parents=True)
    with RunStore(root / run_id / "history.duckdb", run_id, snapshot_every=2) as store:
        store.start_run(method="vade", sampler_config=s.config, config={"lr": 1e-6},
                        code_version=f"v{time.time_ns()}")
        store.log_initial_state(s.alpha, s.beta, n_samples=40)
        for t in range(6):
            r = outcomes[t].copy()
            if t == flip_step:
                r[0] = 8 - r[0] if r[0] != 4 else 0
            obs = s.observe(s.select(), r, 8)
            store.log_step(obs, sampler_seconds=seconds * (t + 1),
                           metrics={"loss": float(t), "timing_s/step": seconds}, state=s)


def test_same_runs_with_other_timings_and_code_version_are_identical(tmp_path, capsys):
    _history(tmp_path / "before", "r")
    _history(tmp_path / "after", "r", seconds=0.5)
    result = compare_histories(tmp_path / "before", tmp_path / "after")
    assert set(result["r"]) == {"events", "levels", "metrics", "peer_state", "runs", "snapshots",
                                "steps"}
    assert result["r"]["events"] == "same (48 rows)" and result["r"]["steps"] == "same (6 rows)"
    assert main([str(tmp_path / "before"), str(tmp_path / "after")]) == 0
    assert capsys.readouterr().out.strip().endswith("IDENTICAL")


def test_one_changed_reward_and_a_missing_run_are_found(tmp_path):
    _history(tmp_path / "before", "r")
    _history(tmp_path / "before", "gone")
    _history(tmp_path / "after", "r", flip_step=3)
    result = compare_histories(tmp_path / "before", tmp_path / "after")
    assert result["gone"] == {"*": "missing in after"}
    assert result["r"]["events"].startswith("DIFFERENT")      # the flipped r itself
    assert result["r"]["steps"].startswith("DIFFERENT")       # the step's accuracy
    assert result["r"]["runs"] == "same (1 rows)"
    assert main([str(tmp_path / "before"), str(tmp_path / "after")]) == 1
