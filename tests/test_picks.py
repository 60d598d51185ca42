"""What each run trained on, by third of its steps (``vade.report.picks``): the table, its merge
across sittings and its block on a results page. Numbers worked out by hand in the comments.

Real: histories written by ``RunStore``, the collection, DuckDB's aggregation, the CSV writer and
reader, the merge, the block check and the CLI, under tmp_path. Nothing is a stand-in.
"""

from __future__ import annotations

import pytest
from run_histories import write_history

from vade.cli import main
from vade.methods import NAMES
from vade.report import docsync
from vade.report.picks import PICK_COLUMNS, picks_section, read_picks

# 6 steps of 2 groups x 8 rollouts on a pool of 4 items; thirds = steps 1-2, 3-4, 5-6
CORRECT = {1: [0, 8], 2: [3, 8], 3: [8, 8], 4: [2, 5], 5: [0, 0], 6: [4, 8]}
ITEMS = {1: [0, 1], 2: [0, 1], 3: [1, 2], 4: [1, 2], 5: [2, 1], 6: [1, 2]}   # item 3: never


def _runs(tmp_path):
    runs = tmp_path / "runs"
    write_history(runs, "t-grpo-vanilla-s0", CORRECT, indices=ITEMS)
    # seed 1: item 0 half right, item 1 all right at every step: item 1 never teaches
    write_history(runs, "t-grpo-vanilla-s1", {s: [4, 8] for s in CORRECT})
    write_history(runs, "t-grpo-vade-s0", CORRECT, indices=ITEMS, done=False)   # partial
    return runs


def test_picks_by_third_by_hand(tmp_path):
    out = tmp_path / "picks.csv"
    assert main(["results", "picks", "--runs", str(_runs(tmp_path)), "--study", "t",
                 "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(PICK_COLUMNS)
    # part 1: [0, 8], [3, 8]: all wrong 1/4, all right 2/4, pass (0+8+3+8)/32 = 0.59375,
    #         items 0, 1 observed, item 0 informative (3 of 8 at step 2)
    # part 2: [8, 8], [2, 5]: 0, 2/4, 23/32 = 0.71875, items 1, 2, both informative at step 4
    # part 3: [0, 0], [4, 8]: 2/4, 1/4, 12/32 = 0.375, items 1, 2, item 1 informative (step 6)
    # whole run: 12 groups, 3/12, 5/12, 54/96 = 0.5625, items 0, 1, 2 of 4, all informative
    assert lines[1:5] == [
        "t,t-grpo-vanilla-s0,vanilla,0,0,1,6,12,0.250000,0.416667,0.562500,3,3,4",
        "t,t-grpo-vanilla-s0,vanilla,0,1,1,2,4,0.250000,0.500000,0.593750,2,1,4",
        "t,t-grpo-vanilla-s0,vanilla,0,2,3,4,4,0,0.500000,0.718750,2,2,4",
        "t,t-grpo-vanilla-s0,vanilla,0,3,5,6,4,0.500000,0.250000,0.375000,2,1,4"]
    assert len(lines) == 9 and not any("vade" in line for line in lines)   # the partial run
    # over the two seeds, all right by third: 0.5 and 0.5 -> 0.5 [0.5, 0.5]; twice; then 0.25
    # and 0.5 -> 0.375, t(1) 12.706 x sd 0.177 / sqrt 2 = 1.588 half-width. All wrong: 0.25
    # and 0 -> 0.125 +- 1.588; 0; 0.5 and 0 -> 0.25 +- 3.177. Never observed: 1 and 2 items
    # -> 1.5 +- 6.4; never informative: 1 and 3 -> 2.0 +- 12.7
    text = picks_section(read_picks(out), NAMES)
    assert ("| vanilla | 2 | 0.500 [0.500, 0.500] / 0.500 [0.500, 0.500] / 0.375 [-1.213, "
            "1.963] | 0.125 [-1.463, 1.713] / 0.000 [0.000, 0.000] / 0.250 [-2.927, 3.427] | "
            "1.5 [-4.9, 7.9] | 2.0 [-10.7, 14.7] (of 4) |") in text


def test_picks_fold_in_and_a_page_block_agrees(tmp_path):
    runs = _runs(tmp_path)
    new = tmp_path / "new.csv"
    committed = tmp_path / "docs" / "data" / "t" / "picks.csv"
    assert main(["results", "picks", "--runs", str(runs), "--study", "t", "--out", str(new)]) == 0
    assert main(["results", "merge", str(new), "--into", str(committed)]) == 0
    assert committed.read_text() == new.read_text()
    doc = tmp_path / "docs" / "results.md"
    doc.write_text("<!-- picks: docs/data/t/picks.csv -->\n<!-- /picks -->\n")
    assert len(docsync.check(doc, tmp_path)) == 1
    assert docsync.write(doc, tmp_path) == 1 and docsync.check(doc, tmp_path) == []
    # a rerun whose numbers differ is refused, naming the run, the part and the cell
    changed = new.read_text().replace("0,1,1,2,4,0.250000", "0,1,1,2,4,0.300000")
    new.write_text(changed)
    before = committed.read_text()
    assert main(["results", "merge", str(new), "--into", str(committed)]) == 1
    assert committed.read_text() == before


def test_two_runs_of_one_method_and_seed_are_refused(tmp_path):
    """A GRPO and a GSPO run of vanilla seed 0 in one table: a block would show one of them."""
    runs = tmp_path / "runs"
    write_history(runs, "t-grpo-vanilla-s0", CORRECT, indices=ITEMS)
    write_history(runs, "t-gspo-vanilla-s0", {s: [4, 8] for s in CORRECT})
    out = tmp_path / "picks.csv"
    assert main(["results", "picks", "--runs", str(runs), "--study", "t", "--out", str(out)]) == 0
    with pytest.raises(ValueError, match="line 6: run t-gspo-vanilla-s0 is vanilla seed 0 as "
                                         "t-grpo-vanilla-s0 is"):
        read_picks(out)


def test_a_table_with_another_header_is_refused(tmp_path):
    bad = tmp_path / "picks.csv"
    bad.write_text("study,run_id\nt,x\n")
    with pytest.raises(ValueError, match="the header is not the picks table's"):
        read_picks(bad)
