"""Folding a sitting's per-run table into the committed one (``vade results merge``).

All real: the merge code and the CLI on small tables written here; no stand-in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vade.cli import main
from vade.report.export import COLUMNS
from vade.report.table_merge import merge_tables

HEADER = ",".join(COLUMNS) + "\n"


def _run(method: str, seed: int, vals: tuple[str, ...]) -> str:
    rid = f"tiny-grpo-{method}-s{seed}"
    return "".join(f"race,{rid},{method},{seed},{25 * i},{v},{960 * i},{960 * i},0.5,0.5\n"
                   for i, v in enumerate(vals))


def test_runs_are_carried_added_and_checked_by_hand():
    """Committed: vade s0, vanilla s0. New: vanilla s0 (same bytes) and vade s1. Merged:
    all three, sorted by run id, vade s0's rows carried unchanged."""
    committed = HEADER + _run("vanilla", 0, ("0.70", "0.72")) + _run("vade", 0, ("0.70", "0.75"))
    new = HEADER + _run("vade", 1, ("0.71", "0.74")) + _run("vanilla", 0, ("0.70", "0.72"))
    m = merge_tables(committed, new)
    assert (m.added, m.carried, m.agreed, m.differing) == (
        ("tiny-grpo-vade-s1",), ("tiny-grpo-vade-s0",), ("tiny-grpo-vanilla-s0",), ())
    assert m.text == (HEADER + _run("vade", 0, ("0.70", "0.75")) + _run("vade", 1, ("0.71", "0.74"))
                      + _run("vanilla", 0, ("0.70", "0.72")))


def test_a_run_that_differs_is_named_with_its_first_differing_cell():
    committed = HEADER + _run("vade", 0, ("0.70", "0.75"))
    m = merge_tables(committed, HEADER + _run("vade", 0, ("0.70", "0.76")))
    assert m.text == "" and m.agreed == ()
    assert m.differing == ("tiny-grpo-vade-s0: step 25, val: committed '0.75', new '0.76'",)
    m = merge_tables(committed, HEADER + _run("vade", 0, ("0.70",)))
    assert m.differing == ("tiny-grpo-vade-s0: 2 rows committed, 1 rows new",)


def test_a_table_with_another_header_is_refused():
    with pytest.raises(ValueError, match="new: the header is not the per-run table's"):
        merge_tables(HEADER, "run_id,val\n")


def test_a_table_of_another_study_is_refused():
    """The testbeds share run ids: regime's vanilla s4 must not become the race's."""
    committed = HEADER + _run("vanilla", 0, ("0.70", "0.72"))
    other = (HEADER + _run("vanilla", 4, ("0.70", "0.82"))).replace("race,", "regime,")
    with pytest.raises(ValueError, match="one table holds one study: committed has 'race'; "
                                         "new has 'regime'"):
        merge_tables(committed, other)
    mixed = HEADER + _run("vanilla", 1, ("0.70",)) + _run("vade", 1, ("0.71",)).replace("race,",
                                                                                         "regime,")
    with pytest.raises(ValueError, match="new has 'race', 'regime'"):
        merge_tables(HEADER, mixed)


def test_cli_refuses_a_differing_run_and_leaves_the_committed_table(tmp_path: Path, capsys):
    into, new = tmp_path / "docs" / "runs.csv", tmp_path / "new.csv"
    new.write_text(HEADER + _run("vade", 0, ("0.70", "0.75")))
    assert main(["results", "merge", str(new), "--into", str(into)]) == 0   # created
    assert into.read_text() == new.read_text()
    assert "1 run(s) added, 0 carried over, 0 agree" in capsys.readouterr().out
    new.write_text(HEADER + _run("vade", 0, ("0.70", "0.80")))
    before = into.read_text()
    assert main(["results", "merge", str(new), "--into", str(into)]) == 1
    out = capsys.readouterr().out
    assert "differs: tiny-grpo-vade-s0: step 25, val: committed '0.75', new '0.80'" in out
    assert into.read_text() == before
