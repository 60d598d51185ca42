"""A study's per-run table (``vade.report.export``), the pre-registered section computed from it
(``vade.report.numbers``) and the check that a results page's generated blocks agree with their
tables (``vade.report.docsync``, ``vade results``). Numbers worked out by hand in the comments.

Real: the table writer and reader, the section, the block check and the CLI, on tables and pages
the test writes under tmp_path; the report's ``Inputs`` are built by hand instead of read from
DuckDB (collection is tested in test_report.py). Nothing is a stand-in.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from run_histories import write_history

from vade.cli import main
from vade.report import docsync
from vade.report.collect import Curve, Inputs, RunInfo, parse_run_id
from vade.report.export import COLUMNS, read_table, read_tables, table_rows, write_table
from vade.report.numbers import by_method, holm, section
from vade.report.regime import regime_section, table_trajectory, trajectory

ROOT = Path(__file__).resolve().parents[1]
STEPS = np.arange(0, 91, 15)  # validations every 15 steps, 128 rollouts a step
CURVES = {  # method, seed -> validation at steps 0, 15, ..., 90
    ("dapo", 0): [0.5, 0.6, 0.7, 0.7, 0.7, 0.7, 0.7],       # flat: the plateau rule holds
    ("dapo", 1): [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8],    # still rising: the rule fails
    ("vade", 0): [0.5, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7],
    ("vade", 1): [0.5, 0.7, 0.75, 0.8, 0.8, 0.8, 0.8],
    ("vanilla", 0): [0.5, 0.55, 0.6, 0.62, 0.64, 0.65, 0.66],
    ("vanilla", 1): [0.5, 0.55, 0.6, 0.62, 0.64, 0.65, 0.66],
}


def _table(tmp_path: Path, study: str = "t", only: str | None = None) -> Path:
    rows = [{"study": study, "run_id": f"t-grpo-{m}-s{s}", "method": m, "seed": s,
             "step": int(step), "val": v, "rollouts": float(step * 128),
             "rollouts_generated": float(step * 128),
             "eff_trained": 1.0 if m == "dapo" and step else (0.8 if step else float("nan")),
             "eff_generated": 0.5 if step else float("nan")}
            for (m, s), vals in CURVES.items() for step, v in zip(STEPS, vals)
            if only in (None, m)]
    return write_table(tmp_path / "docs" / "data" / study / "runs.csv", rows)


def test_export_writes_running_means_and_the_cost_axis(tmp_path):
    # one VADE run: validation at steps 0, 2, 4 (rollouts 0, 256, 512 generated); trained ratio
    # 1.0, 0.5, 0.5, 0.0 at steps 1-4, generated ratio 0.5 at every step; initial difficulty
    # rollouts 3,840 (VADE reads them, so its cost axis starts there)
    s = np.array([1, 2, 3, 4])
    run = RunInfo(parse_run_id("t-grpo-vade-s3"), "complete", curves={
        "val/acc": Curve(np.array([0, 2, 4]), np.array([0.5, 0.6, 0.65]),
                         np.array([0.0, 256.0, 512.0]), "duckdb"),
        "effective_ratio": Curve(s, np.array([1.0, 0.5, 0.5, 0.0]), s * 128.0, "duckdb"),
        "effective_ratio_generated": Curve(s, np.full(4, 0.5), s * 128.0, "duckdb")})
    inputs = Inputs(runs={run.key.run_id: run}, evals={}, benchmarks=[], catalog=None,
                    initial_accuracy={}, sample_labels={}, notes=[],
                    initial_rollouts={"*": 3840})
    path = write_table(tmp_path / "runs.csv", table_rows(inputs, "t", "val/acc"))
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    # step 2: trained mean (1.0 + 0.5) / 2 = 0.75; step 4: (1 + 0.5 + 0.5 + 0) / 4 = 0.5
    assert lines[1:] == ["t,t-grpo-vade-s3,vade,3,0,0.500000,3840,0,,",
                         "t,t-grpo-vade-s3,vade,3,2,0.600000,4096,256,0.750000,0.500000",
                         "t,t-grpo-vade-s3,vade,3,4,0.650000,4352,512,0.500000,0.500000"]
    back = read_table(path)["t-grpo-vade-s3"]
    assert back.step.tolist() == [0, 2, 4] and back.rollouts.tolist() == [3840, 4096, 4352]


def test_a_bad_table_is_one_line_naming_file_and_line(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text("study,run_id,method,seed,step,val\n")
    with pytest.raises(ValueError, match="runs.csv: missing column"):
        read_table(p)
    p.write_text(",".join(COLUMNS) + "\nt,t-grpo-vade-s0,vade,0,0,high,0,0,,\n")
    with pytest.raises(ValueError, match="line 2, column val: 'high'"):
        read_table(p)


def test_section_from_a_hand_made_table(tmp_path):
    text = section(read_table(_table(tmp_path)), grid_step=1920)
    # VADE - vanilla at step 90: 0.70 - 0.66, 0.80 - 0.66 -> 0.04, 0.14: mean 0.09, sd 0.070711,
    # half 12.7062 * 0.070711 / sqrt 2 = 0.6353
    assert "| vade | 2 | 90 | 11,520 | 0.750 [0.115, 1.385] | 0.090 [-0.545, 0.725] |" in text
    # equal rollouts: every run here spends 128 a step, so the same pairs as at equal steps
    assert "| 0.090 [-0.545, 0.725] | 0.090 [-0.545, 0.725] | 0.800 [0.800, 0.800] |" in text
    # generated ratio beside the trained one: DAPO trains on 1.0, generated 0.5
    assert "| dapo | 2 | 90 | 11,520 | 0.750 [0.115, 1.385] | " in text
    assert "| 1.000 [1.000, 1.000] | 0.500 [0.500, 0.500] |" in text
    # AUC to step 90 (trapezoid / 90): VADE s0 4.1/6 = 0.68333, s1 4.5/6 = 0.75, vanilla
    # 3.64/6 = 0.60667 -> differences 0.07667, 0.14333: mean 0.110
    assert "| 0.110 [" in text
    # DAPO seed 0 flat (se 0, holds), seed 1 rising (0.675 vs 0.775, se 0.0354: fails)
    assert "holds in 1/2 seeds" in text and "seed 1: the rule fails" in text
    # targets: s0 0.995 * 0.7 = 0.6965 (A and B), s1 0.995 * 0.775 = 0.771125 (B only).
    # Smoothed on the 1,920 grid (trailing mean of 3): DAPO s0 first >= 0.6965 at 7,680
    # ((0.7+0.7+0.7)/3), s1 never (its last 11,520 counts); VADE s0 at 5,760 ((0.7 x 3)/3),
    # s1 at 7,680 ((0.75+0.8+0.8)/3 = 0.7833). Ratios 0.75 and 0.6667: geometric 0.7071
    row = next(line for line in text.splitlines() if line.startswith("| vade | 1/1"))
    assert "0.75 (1 seed)" in row                                      # handling A
    assert "0.71 [" in row and "(geometric, 2 seeds: 0.75, 0.67)" in row  # handling B
    # the primary family, Holm over 2 tests: log ratios p = 0.1072 (t = -5.883, df 1),
    # VADE - vanilla p = 0.3228 (t = 1.8, df 1); Holm: 2 x 0.1072 = 0.214, then max(0.214,
    # 0.3228) = 0.323
    assert "| VADE / DAPO, rollouts to target (B), log ratio | 2 | 0.71 [" in text
    assert "| 0.107 | 0.214 |" in text
    assert "| VADE - vanilla, validation at equal rollouts | 2 | 0.090 [-0.545, 0.725] | 0.323 | " \
           "0.323 |" in text


def test_grpo_and_gspo_runs_of_one_seed_are_compared_within_their_algorithm(tmp_path):
    """The demo trains GRPO and GSPO of each method on the same seed: each algorithm gets its
    own part, with the same numbers as the GRPO table alone (on main, sorting two runs of one
    method and seed raised TypeError and failed the demo's report)."""
    grpo = read_table(_table(tmp_path))
    gspo = {k.replace("-grpo-", "-gspo-"): replace(r, run_id=r.run_id.replace("-grpo-", "-gspo-"))
            for k, r in grpo.items()}
    alone = section(grpo, grid_step=1920)
    both = section({**grpo, **gspo}, grid_step=1920)
    assert both.startswith("### t GRPO\n\n") and "\n### t GSPO\n\n" in both
    assert both.count(alone) == 2
    with pytest.raises(ValueError, match="-grpo-vanilla-s0 and .*-gspo-vanilla-s0 are both vanilla seed 0"):
        by_method({**grpo, **gspo})


def test_holm_by_hand():
    # p = 0.01, 0.04, 0.03 over m = 3: sorted 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04
    # -> monotone 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_docs_blocks_agree_with_their_tables_and_a_typed_number_is_caught(tmp_path, capsys):
    _table(tmp_path)
    doc = tmp_path / "results.md"
    doc.write_text("# R\n\n<!-- numbers: docs/data/t/runs.csv grid_step=1920 -->\n"
                   "typed by hand\n<!-- /numbers -->\n\nprose\n")
    assert len(docsync.check(doc, tmp_path)) == 1          # the typed text is not the table's
    assert main(["results", "write", str(doc), "--root", str(tmp_path)]) == 0
    assert docsync.check(doc, tmp_path) == [] and doc.read_text().endswith("\n\nprose\n")
    assert main(["results", "check", str(doc), "--root", str(tmp_path)]) == 0
    doc.write_text(doc.read_text().replace("0.090 [-0.545", "0.095 [-0.545"))  # a hand edit
    assert main(["results", "check", str(doc), "--root", str(tmp_path)]) == 1
    assert "the block of docs/data/t/runs.csv differs" in capsys.readouterr().out


def test_the_committed_results_page_agrees_with_the_committed_tables():
    """docs/results.md's generated blocks against docs/data/*/runs.csv (none yet before the
    rerun: then this checks that every block names a table that exists)."""
    assert docsync.check(ROOT / "docs" / "results.md", ROOT) == []


def test_a_control_study_is_read_beside_the_main_one(tmp_path):
    """A control (vanilla at another batch size, another learning rate) is its own study with
    the same run ids: read beside the main table it is labelled method@study and compared with
    the main vanilla by seed. Here the control's vanilla equals the main VADE curves, so its
    Δ vs vanilla is VADE's (0.090) and k = 2 in both seeds, as for VADE."""
    main_table = _table(tmp_path)
    rows = [r for r in _table(tmp_path / "c", study="b24", only="vade").read_text()
            .splitlines()[1:]]
    control = tmp_path / "docs" / "data" / "b24" / "runs.csv"
    control.parent.mkdir(parents=True, exist_ok=True)
    control.write_text(",".join(COLUMNS) + "\n" + "\n".join(
        r.replace("-vade-", "-vanilla-").replace(",vade,", ",vanilla,") for r in rows) + "\n")
    text = section(read_tables([main_table, control]), grid_step=1920)
    assert "| vanilla@b24 | 2 | 90 | 11,520 | 0.750 [0.115, 1.385] | 0.090 [-0.545, 0.725] |" \
        in text
    assert text.index("| vanilla |") < text.index("| vanilla@b24 |") < text.index("| dapo |")
    row = next(line for line in text.splitlines() if line.startswith("| vanilla@b24 | 2"))
    assert row.endswith("| 2.00 [2.00, 2.00] (geometric, 2 seeds: 2.00, 2.00) |")


def test_regime_rule_by_hand():
    """Steps 1-9, ratios 0.8 x 3, 0.5 x 3, 0.15 x 3: thirds 0.8 -> 0.5 -> 0.15, in the regime
    (last third in [0.10, 0.20], below the first). Flat at 0.15: not (it does not fall).
    Falling to 0.3: not (above 0.20)."""
    steps = np.arange(1, 10)

    def curve(values):
        return Curve(steps, np.asarray(values, float), steps * 128.0, "duckdb")

    t = trajectory(curve([0.8] * 3 + [0.5] * 3 + [0.15] * 3))
    assert t.parts == pytest.approx((0.8, 0.5, 0.15)) and t.in_regime
    assert not trajectory(curve([0.15] * 9)).in_regime
    assert not trajectory(curve([0.8] * 3 + [0.5] * 3 + [0.3] * 3)).in_regime
    with pytest.raises(ValueError, match="cannot be split"):
        trajectory(Curve(steps[:2], np.ones(2), steps[:2] * 1.0, "duckdb"))


def test_regime_from_the_committed_tables_running_means_by_hand(tmp_path):
    """The same per-step ratios as above (thirds 0.8, 0.5, 0.15 over steps 1-9), written as the
    table's running means at validations 0, 3, 6, 9: 0.8, (2.4 + 1.5) / 6 = 0.65,
    (3.9 + 0.45) / 9 = 0.48333; the table's thirds must give back 0.8, 0.5, 0.15. A run
    validated off the thirds is cut at the nearest validations; one with too few is refused."""
    def rows(run, steps, running):
        return [{"study": "t", "run_id": run, "method": run.split("-")[2],
                 "seed": int(run[-1]), "step": s, "val": 0.5, "rollouts": s * 128.0,
                 "rollouts_generated": s * 128.0, "eff_trained": m, "eff_generated": m}
                for s, m in zip(steps, running)]

    nan = float("nan")
    table = write_table(tmp_path / "docs" / "data" / "t" / "runs.csv",
                        rows("t-grpo-vanilla-s0", [0, 3, 6, 9], [nan, 0.8, 0.65, 0.483333])
                        + rows("t-grpo-vanilla-s1", [0, 3, 6, 9], [nan, 0.8, 0.65, 0.483333])
                        + rows("t-grpo-vade-s0", [0, 3, 6, 9], [nan, 0.9, 0.9, 0.9]))
    runs = read_table(table)
    t = table_trajectory(runs["t-grpo-vanilla-s0"])
    assert t.parts == pytest.approx((0.8, 0.5, 0.15), abs=1e-5) and t.in_regime
    text = regime_section(by_method(runs))
    assert "| vanilla | 2 | 0.800 [0.800, 0.800] | 0.500 [0.500, 0.500] | 0.150 [0.150, 0.150] " \
           "| 2 of 2 |" in text
    assert "| vade | 1 | 0.900 (n=1) | 0.900 (n=1) | 0.900 (n=1) | - |" in text
    doc = tmp_path / "docs" / "results.md"
    doc.write_text("<!-- regime: docs/data/t/runs.csv -->\n| typed |\n<!-- /regime -->\n")
    assert docsync.check(doc, tmp_path) == [(
        f"{doc}: the regime block of docs/data/t/runs.csv differs from the table (run "
        f"`vade results write {doc}`)")]
    assert docsync.write(doc, tmp_path) == 1 and docsync.check(doc, tmp_path) == []
    # validations off the thirds (a run stopped early, as DAPO by its rollout cap): the cuts
    # snap to the nearest validation. Steps 0, 4, 8, 10, per-step ratios 0.9 over 1-4, 0.5 over
    # 5-8, 0.2 over 9-10 -> running means 0.9, (3.6 + 2.0) / 8 = 0.7, (5.6 + 0.4) / 10 = 0.6;
    # cuts 10/3 -> 4, 20/3 -> 8, 10 -> 10; parts 0.9, 0.5, 0.2
    snap = read_table(write_table(tmp_path / "snap.csv", rows("t-grpo-dapo-s3", [0, 4, 8, 10],
                                                              [nan, 0.9, 0.7, 0.6])))
    assert table_trajectory(snap["t-grpo-dapo-s3"]).parts == pytest.approx((0.9, 0.5, 0.2))
    # too few validations: 3 -> 4, 6 -> 4 (nearer than 9), 9 -> 9: two cuts coincide
    gap = read_table(write_table(tmp_path / "gap.csv", rows("t-grpo-vanilla-s2", [0, 4, 9],
                                                             [nan, 0.8, 0.5])))
    with pytest.raises(ValueError, match=r"t-grpo-vanilla-s2: 2 validation step\(s\) after step 0 "
                                         r"cannot split its 9 steps into 3 parts \(cuts at 4, 4, "
                                         r"9\)"):
        table_trajectory(gap["t-grpo-vanilla-s2"])


def test_sec_levels_come_from_each_items_construction():
    """count: the number of dots (the answer); chart and balance: 1 + floor(5 d), d = 1 in
    level 5; a real dataset's integer level passes through unchanged."""
    from types import SimpleNamespace

    from vade.data.synthetic.levels import construction_level, sec_labels

    assert construction_level("synthetic/count", "4", 0.9) == 4
    assert [construction_level("synthetic/chart", "B", d) for d in (0.0, 0.19, 0.2, 0.99, 1.0)] \
        == [1, 1, 2, 5, 5]
    assert construction_level("synthetic/balance", "A", 0.45) == 3
    assert construction_level("paper/geo3k", "12", 3) is None
    rows = [SimpleNamespace(task="synthetic/count", ground_truth="2", extra_info={"difficulty": 0.7}),
            SimpleNamespace(task="math/MATH", ground_truth="x", extra_info={"difficulty": 4})]
    assert sec_labels(rows) == [2, 4]


def test_spearman_of_level_and_pass_rate_by_hand():
    """Levels 1, 2, 3, 4 against pass rates 0.9, 0.7, 0.8, 0.1: ranks (1, 2, 3, 4) and
    (4, 2, 3, 1), d = 3, 0, 0, 3 -> rho = 1 - 6 x 18 / (4 x 15) = -0.8. Per domain: a gets
    levels 1, 2 with 0.9, 0.7 (rho -1); b a constant level (NaN: no information)."""
    from vade.report.levels import level_correlations

    got = level_correlations([1, 2, 3, 4], [0.9, 0.7, 0.8, 0.1], ["a", "a", "b", "b"])
    assert got["all"] == (pytest.approx(-0.8), 4)
    assert got["a"] == (pytest.approx(-1.0), 2) and got["b"][1] == 2
    got = level_correlations([1, 2, 3, 3], [0.9, 0.7, 0.8, 0.1], ["a", "a", "b", "b"])
    assert np.isnan(got["b"][0])  # level 3 for both b items: constant



def test_mean_pass_rate_by_level_by_hand():
    """Levels 1, 1, 2, 3 with pass rates 0.9, 0.5, 0.4, 0.1: level 1 averages 0.7 over 2 items,
    levels in increasing order whatever the input order."""
    from vade.report.levels import level_means

    got = level_means([3, 1, 2, 1], [0.1, 0.9, 0.4, 0.5])
    assert list(got) == [1, 2, 3]
    assert got[1] == pytest.approx((0.7, 2)) and got[2] == pytest.approx((0.4, 1))
    assert got[3] == pytest.approx((0.1, 1))

def test_export_command_reads_real_histories(tmp_path):
    """`vade results export` on a DuckDB history written by RunStore (real: the store, the
    collection, the CLI): vanilla, 4 steps of 2 prompts x 8 rollouts, validation at steps 0, 2,
    4; step ratios 0.5, 1.0, 0.0, 0.5 -> running means at step 2: 0.75, at step 4: 0.5."""
    write_history(tmp_path / "runs", "t-grpo-vanilla-s0",
                  {1: [3, 8], 2: [1, 7], 3: [0, 8], 4: [8, 4]},
                  val={0: 0.5, 2: 0.6, 4: 0.7})
    out = tmp_path / "runs.csv"
    assert main(["results", "export", "--runs", str(tmp_path / "runs"), "--study", "t",
                 "--out", str(out)]) == 0
    assert out.read_text().splitlines()[1:] == [
        "t,t-grpo-vanilla-s0,vanilla,0,0,0.500000,0,0,,",
        "t,t-grpo-vanilla-s0,vanilla,0,2,0.600000,32,32,0.750000,0.750000",
        "t,t-grpo-vanilla-s0,vanilla,0,4,0.700000,64,64,0.500000,0.500000"]


def _rows(study: str, run: str, vals, *, offset: float = 0.0, steps=STEPS) -> list[dict]:
    method, seed = run.rsplit("-s", 1)
    return [{"study": study, "run_id": f"t-grpo-{run}", "method": method, "seed": int(seed),
             "step": int(step), "val": v, "rollouts": offset + step * 128.0,
             "rollouts_generated": offset + step * 128.0, "eff_trained": 0.5,
             "eff_generated": 0.5} for step, v in zip(steps, vals)]


def test_a_run_that_never_reaches_the_target_is_never_the_faster(tmp_path):
    """VADE stops at step 30 (3,840 rollouts) below DAPO's target; DAPO reaches it at 7,680.
    Counting VADE's last rollouts alone gave 3,840 / 7,680 = 0.5, "twice as fast" for a run
    that never got there; it counts at least DAPO's 7,680: ratio 1.00."""
    rows = (_rows("t", "dapo-s0", CURVES[("dapo", 0)])
            + _rows("t", "vade-s0", [0.5, 0.6, 0.6], steps=STEPS[:3]))
    text = section(read_table(write_table(tmp_path / "runs.csv", rows)), grid_step=1920)
    assert "| vade | 0/1 (DAPO 1/1) | 1.00 (1 seed) | 0/1 (DAPO 1/1) | 1.00 (1 seed) |" in text


def test_the_family_is_the_pre_registered_one_and_a_missing_test_counts(tmp_path):
    """Declared: H1, vanilla and mopps; mopps has no run yet. Holm over 3 with mopps at p = 1:
    0.10716 x 3 = 0.321, max(0.321, 0.3228 x 2) = 0.646 (over the 2 tests it had: 0.214, 0.323)."""
    table = read_table(_table(tmp_path))
    text = section(table, grid_step=1920, family=("dapo", "vanilla", "mopps"))
    assert "(3 pre-registered tests, 2 with 2+ seeds; Holm's correction over all 3" in text
    assert "| VADE / DAPO, rollouts to target (B), log ratio | 2 | 0.71 [" in text
    assert "| 0.107 | 0.321 | - |" in text
    assert "| 0.323 | 0.646 | 0.090 [-0.545, 0.725] |" in text
    assert "| VADE - mopps, validation at equal rollouts | 0 | n/a | - | - | n/a |" in text
    with pytest.raises(ValueError, match="family: .grpo. is not a method"):
        section(table, family=("dapo", "grpo"))


def test_equal_rollouts_sensitivity_interpolates_at_the_budget(tmp_path):
    """VADE pays 960 initial rollouts: its validations sit at 960 + 128 t. Budget 11,520
    (vanilla's last): VADE's last validation under it is step 75 (10,560: 0.68), so the
    pre-registered read is 0.68 - 0.66 = 0.020; interpolated at 11,520, halfway to step 90
    (12,480: 0.74), it scores 0.71: 0.71 - 0.66 = 0.050."""
    rows = (_rows("t", "vanilla-s0", CURVES[("vanilla", 0)])
            + _rows("t", "vade-s0", [0.5, 0.6, 0.62, 0.64, 0.66, 0.68, 0.74], offset=960))
    text = section(read_table(write_table(tmp_path / "runs.csv", rows)), grid_step=1920)
    assert "| VADE - vanilla, validation at equal rollouts | 1 | 0.020 (n=1) | - | - | " \
           "0.050 (n=1) |" in text


@pytest.mark.parametrize("study", ["tiny-race", "tiny-regime"])
def test_the_page_and_the_study_config_declare_one_family(study):
    """The study's report (``report.family``) and the page's block (``family=``) run Holm over
    the same pre-registered tests, so their p-values cannot differ."""
    import yaml

    from vade.report.config import ReportConfig

    cfg = ReportConfig.from_dict(yaml.safe_load((ROOT / "config" / f"{study}.yaml").read_text())
                                 ["report"])
    block = next(b for b in docsync.blocks(ROOT / "docs" / "results.md")
                 if b.kind == "numbers" and b.table == f"docs/data/{study}/runs.csv")
    assert cfg.family is not None and cfg.family[:2] == ("dapo", "vanilla")
    assert tuple(block.options["family"].split(",")) == cfg.family


def test_each_control_is_compared_with_the_vade_of_its_own_study_or_the_main_one(tmp_path):
    """b24 ran vanilla only (0.02 above the main vanilla, 1.5 x the rollouts a step): it is
    compared with the main VADE. At step 90, 0.70 - 0.68 and 0.80 - 0.68: 0.070 [-0.565,
    0.705] (t(1) = 12.706, se 0.05). At equal rollouts (11,520, VADE's last), b24 is read at
    step 60 (0.66): 0.040 and 0.140. In area (mean score over steps 0-90, trapezoids), VADE
    0.6833 and 0.75 against b24's 0.6267: 0.090 [-0.334, 0.514]. lr ran both: its VADE (0.01
    and 0.03 above its vanilla at every step) against its own vanilla: 0.020 [-0.107, 0.147]
    every way; its vanilla is never paired with the main VADE."""
    def scaled(rows, factor):
        return [{**r, "rollouts": r["rollouts"] * factor,
                 "rollouts_generated": r["rollouts_generated"] * factor} for r in rows]

    van = np.array(CURVES[("vanilla", 0)])
    tables = [_table(tmp_path)]
    for study, rows in (
            ("b24", scaled(_rows("b24", "vanilla-s0", van + 0.02)
                           + _rows("b24", "vanilla-s1", van + 0.02), 1.5)),
            ("lr", _rows("lr", "vanilla-s0", van) + _rows("lr", "vanilla-s1", van)
             + _rows("lr", "vade-s0", van + 0.01) + _rows("lr", "vade-s1", van + 0.03))):
        tables.append(write_table(tmp_path / study / "runs.csv", rows))
    text = section(read_tables(tables), grid_step=1920)
    controls = text[text.index("Controls (secondary"):].split("\n\n")[1].splitlines()[2:]
    assert controls == [
        ("| vade - vanilla@b24 | 2 | 0.070 [-0.565, 0.705] | 0.090 [-0.545, 0.725] | "
         "0.090 [-0.334, 0.514] |"),
        ("| vade@lr - vanilla@lr | 2 | 0.020 [-0.107, 0.147] | 0.020 [-0.107, 0.147] | "
         "0.020 [-0.107, 0.147] |")]
    assert "Controls" not in section(read_tables(tables[:1]), grid_step=1920)


def test_a_study_config_naming_an_unknown_family_member_fails_naming_the_key():
    """The config's family and the block's are checked by one rule (``methods.check_compared``):
    VADE itself and names that are not methods are refused, the key named."""
    from vade.report.config import ReportConfig

    for bad in ("vade", "grpo"):
        with pytest.raises(ValueError, match=f"config key 'report.family': '{bad}' is not a"):
            ReportConfig.from_dict({"family": ["dapo", bad]})
    assert ReportConfig.from_dict({"family": ["dapo", "vanilla"]}).family == ("dapo", "vanilla")
