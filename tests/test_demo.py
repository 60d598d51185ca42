"""The demo writes one run file per method, a figure, and the history answers SQL."""

from __future__ import annotations

from vade.cli import main
from vade.store import query


def test_demo_runs_end_to_end_and_is_deterministic(tmp_path, capsys):
    args = ["demo", "--n-samples", "400", "--batch-size", "32", "--steps", "25",
            "--methods", "vanilla", "vade"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert "eff_ratio_last20" in capsys.readouterr().out
    assert (tmp_path / "a" / "effective_ratio.png").stat().st_size > 10_000
    sql = ("SELECT run_id, step, sample_id, correct, alpha_after FROM events"
           " ORDER BY run_id, step, sample_id")
    a = query([tmp_path / "a" / "runs"], sql).fetchall()
    b = query([tmp_path / "b" / "runs"], sql).fetchall()
    assert len(a) == 2 * 25 * 32 and a == b  # same seed, same history
    runs = query([tmp_path / "a" / "runs"], "SELECT method FROM runs ORDER BY 1").fetchall()
    assert runs == [("vade",), ("vanilla",)]
