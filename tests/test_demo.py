"""The demo writes one run file per method, a figure, and the history answers SQL.

Everything is real (the simulated environment, every sampler, the DuckDB run files); small sizes
keep it to a few seconds."""

from __future__ import annotations

import pytest

from vade import demo
from vade.cli import main
from vade.store import query

SMALL = ["--n-samples", "300", "--batch-size", "16", "--steps", "5"]


@pytest.mark.e2e
def test_demo_runs_every_method_it_lists(tmp_path, capsys):
    """With its default method list (SEC included: its arms are the environment's difficulty
    levels), every method writes a run file and a summary row (about 8 s: 11 run files)."""
    assert "sec" in demo.DEMO_METHODS and len(demo.DEMO_METHODS) == 12  # with mmr1-stale
    assert main(["demo", *SMALL, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "eff_ratio_last20" in out and f"{len(demo.DEMO_METHODS)} rows" in out  # the summary
    assert (tmp_path / "a" / "effective_ratio.png").stat().st_size > 10_000
    runs = query([tmp_path / "a" / "runs"], "SELECT method FROM runs ORDER BY 1").fetchall()
    assert runs == [(m,) for m in sorted(demo.DEMO_METHODS)]
    sql = ("SELECT run_id, step, count(*) FROM events GROUP BY ALL ORDER BY ALL")
    steps = query([tmp_path / "a" / "runs"], sql).fetchall()
    assert steps == [(f"demo-{m}", s, 16) for m in sorted(demo.DEMO_METHODS) for s in range(1, 6)]
    arms = query([tmp_path / "a" / "runs" / "demo-sec.duckdb"],
                 "SELECT count(DISTINCT value) FROM peer_state WHERE name = 'category'")
    assert arms.fetchone() == (5,)  # the environment's 5 difficulty levels


def test_demo_is_deterministic_and_runs_sec(tmp_path):
    """SEC, which crashed the demo for want of difficulty labels, runs beside VADE; the same
    seed gives the same history."""
    args = ["demo", *SMALL, "--methods", "vade", "sec"]
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert main([*args, "--out", str(tmp_path / "c")]) == 0
    sql = ("SELECT run_id, step, sample_id, correct, alpha_after FROM events"
           " ORDER BY run_id, step, sample_id")
    b = query([tmp_path / "b" / "runs"], sql).fetchall()
    assert len(b) == 2 * 5 * 16 and b == query([tmp_path / "c" / "runs"], sql).fetchall()


def test_a_method_that_cannot_run_stops_the_demo_before_it_writes(tmp_path, capsys):
    """A batch larger than the data: one line naming the problem, and no run file at all (every
    sampler is built before the first step)."""
    out = tmp_path / "d"
    assert main(["demo", "--n-samples", "10", "--batch-size", "16", "--steps", "5",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vade demo: error:") and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_crash_mid_demo_still_prints_the_finished_methods_summary(tmp_path, capsys,
                                                                    monkeypatch):
    """The third method's environment fails at its first step (a stand-in for any crash): the
    two finished methods get their summary table and figure, and the message names the method
    that stopped."""
    real = demo.prepare

    def prepare(method, args):
        run = real(method, args)
        if method == "greedy":
            def broken(batch):
                raise RuntimeError("simulated crash")
            run.env.step = broken
        return run

    monkeypatch.setattr(demo, "prepare", prepare)
    with pytest.raises(RuntimeError, match="simulated crash"):
        main(["demo", *SMALL, "--methods", "vanilla", "vade", "greedy", "--out",
              str(tmp_path / "e")])
    captured = capsys.readouterr()
    assert "stopped during method greedy" in captured.err
    rows = [line.split("│")[1].strip() for line in captured.out.splitlines()
            if line.startswith("│ v") and "varchar" not in line]
    assert rows == ["vade", "vanilla"] and "eff_ratio_last20" in captured.out
    assert (tmp_path / "e" / "effective_ratio.png").exists()


def test_mmr1_pays_its_re_scoring_in_the_demo_as_in_the_trainer(tmp_path):
    """Before: the demo never served MMR1's ``rescore_request``, so ``mmr1`` ran as
    ``mmr1-stale`` and the two rows were identical. Now every 4 steps after its initial
    scoring it re-scores the whole pool, charged as generated rollouts. By hand, 300 prompts,
    B = 16, G = 8, 9 steps: 128 rollouts a step, plus 300 x 8 = 2,400 at steps 5 and 9."""
    assert main(["demo", "--n-samples", "300", "--batch-size", "16", "--steps", "9",
                 "--out", str(tmp_path), "--methods", "mmr1", "mmr1-stale"]) == 0
    steps = query([tmp_path / "runs"], "SELECT run_id, rollouts FROM steps ORDER BY run_id, step")
    got = steps.fetchall()
    assert [r for rid, r in got if rid == "demo-mmr1"] == [128] * 4 + [2528] + [128] * 3 + [2528]
    assert [r for rid, r in got if rid == "demo-mmr1-stale"] == [128] * 9
