"""The results page's figure of a study (``vade.report.table_figure``) and its check
(``vade.report.docsync``, ``vade results plot/check/write``). Numbers worked out by hand in the
comments.

Real: the table writer and reader, the bands, matplotlib drawing a PNG, the PNG's text chunk
read back with Pillow, the CLI; on tables and pages the test writes under tmp_path. Nothing is a
stand-in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vade.cli import main
from vade.report import docsync
from vade.report.export import read_table, window_means, write_table
from vade.report.table_figure import (
    SOURCE_KEY,
    figure,
    grid_band,
    paired_band,
    source_digest,
    step_band,
)

T975_DF1 = 12.706  # t(0.975, 1)


def _rows(method: str, seed: int, steps, vals, rollouts, eff=None):
    eff = eff if eff is not None else [float("nan")] + [0.5] * (len(steps) - 1)
    return [{"study": "t", "run_id": f"t-grpo-{method}-s{seed}", "method": method, "seed": seed,
             "step": s, "val": v, "rollouts": r, "rollouts_generated": r, "eff_trained": e,
             "eff_generated": e} for s, v, r, e in zip(steps, vals, rollouts, eff)]


def _table(path: Path) -> Path:
    # vanilla s0: grid points 0, 3840, 7680 at 0.5, 0.6, 0.7; s1 stops at 5760 rollouts, so its
    # grid points are 0 and 3840 only (0.5, 0.7): never extrapolated to 7680.
    # vade s0 is validated at 1920 too (0.9): the grid reads only 0, 3840 (0.7), 7680 (0.8).
    rows = (_rows("vanilla", 0, [0, 10, 20], [0.5, 0.6, 0.7], [0.0, 3840.0, 7680.0])
            + _rows("vanilla", 1, [0, 10, 15], [0.5, 0.7, 0.8], [0.0, 3840.0, 5760.0])
            + _rows("vade", 0, [0, 5, 10, 20], [0.5, 0.9, 0.7, 0.8],
                    [0.0, 1920.0, 3840.0, 7680.0], eff=[float("nan"), 0.9, 0.8, 0.7])
            + _rows("vade", 1, [0, 10, 20], [0.5, 0.6, 0.6], [0.0, 3840.0, 7680.0],
                    eff=[float("nan"), 0.6, 0.5]))
    return write_table(path, rows)


def test_window_means_from_running_means_by_hand():
    # running means 0.5 over steps 1-10 and 0.6 over 1-20: steps 11-20 sum to 12 - 5 = 7 -> 0.7
    got = window_means(np.array([0, 10, 20]), np.array([np.nan, 0.5, 0.6]))
    assert np.isnan(got[0])
    assert got[1:] == pytest.approx([0.5, 0.7])


def test_bands_on_the_rollout_grid_by_hand(tmp_path):
    runs = read_table(_table(tmp_path / "runs.csv"))
    vanilla = {r.seed: r for r in runs.values() if r.method == "vanilla"}
    vade = {r.seed: r for r in runs.values() if r.method == "vade"}
    band = grid_band(vanilla, 3840.0)
    # 7680 has one seed of two: left out; 3840: mean of 0.6 and 0.7, sd 0.0707, se 0.05
    assert band.x.tolist() == [0.0, 3840.0]
    assert band.mean == pytest.approx([0.5, 0.65])
    assert band.n.tolist() == [2, 2]
    assert band.high[1] - band.mean[1] == pytest.approx(T975_DF1 * 0.05, rel=1e-3)
    # vade's extra validation at 1920 (0.9) is between grid points: it moves nothing
    assert grid_band(vade, 3840.0).mean == pytest.approx([0.5, 0.65, 0.7])
    diff = paired_band(vade, vanilla, 3840.0)
    # seed 0: 0.7 - 0.6 = 0.1 at 3840, 0.8 - 0.7 at 7680 (seed 1's vanilla never gets there);
    # seed 1: 0.6 - 0.7 = -0.1 at 3840  -> mean 0.0 at 3840 over 2 seeds; 7680 has 1: left out
    assert diff.x.tolist() == [0.0, 3840.0]
    assert diff.mean == pytest.approx([0.0, 0.0])
    assert diff.high[1] == pytest.approx(T975_DF1 * 0.1, rel=1e-3)
    # effective ratio per window: vade s0 running means 0.9, 0.8, 0.7 at steps 5, 10, 20 ->
    # windows 0.9, (8 - 4.5) / 5 = 0.7, (14 - 8) / 10 = 0.6; s1 0.6, (10 - 6) / 10 = 0.4
    eff = step_band(vade, "eff_generated")
    assert eff.x.tolist() == [10.0, 20.0]      # step 5 has one seed
    assert eff.mean == pytest.approx([0.65, 0.5])


def test_figure_records_its_table_and_check_names_a_stale_one(tmp_path, capsys):
    table = _table(tmp_path / "docs" / "data" / "t" / "runs.csv")
    doc = tmp_path / "docs" / "results.md"
    doc.write_text("# r\n\n<!-- figure: docs/data/t/runs.csv docs/figures/t.png -->\n"
                   "![t](figures/t.png)\n", encoding="utf-8")
    png = tmp_path / "docs" / "figures" / "t.png"
    assert docsync.check(doc, tmp_path) == [(
        f"{doc}: the figure docs/figures/t.png is missing or was drawn from another version of "
        f"docs/data/t/runs.csv or of its drawing code (run `vade results write {doc}`)")]
    assert main(["results", "write", str(doc), "--root", str(tmp_path)]) == 0
    with Image.open(png) as im:
        assert im.text[SOURCE_KEY] == source_digest([table])   # the default grid
        assert im.size[0] > im.size[1] > 100
    first = png.read_bytes()
    assert main(["results", "check", str(doc), "--root", str(tmp_path)]) == 0
    assert "1 of 1 generated blocks and figures agree" in capsys.readouterr().out
    # the table grows: the figure is now stale; write redraws it, deterministically
    rows = read_table(table)
    text = table.read_text(encoding="utf-8").replace("t-grpo-vade-s1,vade,1,20,0.6",
                                                     "t-grpo-vade-s1,vade,1,20,0.65")
    assert text != table.read_text(encoding="utf-8") and len(rows) == 4
    table.write_text(text, encoding="utf-8")
    assert main(["results", "check", str(doc), "--root", str(tmp_path)]) == 1
    assert main(["results", "write", str(doc), "--root", str(tmp_path)]) == 0
    assert png.read_bytes() != first
    redrawn = png.read_bytes()
    png.unlink()
    figure([table], png)
    assert png.read_bytes() == redrawn          # same table, same bytes
    # another grid on the mark: stale too, though the table and the code are the same
    doc.write_text(doc.read_text(encoding="utf-8").replace("t.png -->", "t.png grid_step=960 -->"),
                   encoding="utf-8")
    assert main(["results", "check", str(doc), "--root", str(tmp_path)]) == 1
    assert main(["results", "write", str(doc), "--root", str(tmp_path)]) == 0
    with Image.open(png) as im:
        assert im.text[SOURCE_KEY] == source_digest([table], grid_step=960)
    assert main(["results", "check", str(doc), "--root", str(tmp_path)]) == 0


def test_plot_refuses_an_empty_table_and_a_bad_grid(tmp_path, capsys):
    empty = write_table(tmp_path / "runs.csv", [])
    with pytest.raises(ValueError, match="no runs in"):
        figure([empty], tmp_path / "f.png")
    table = _table(tmp_path / "d" / "runs.csv")
    out = tmp_path / "f.png"
    assert main(["results", "plot", str(table), "--out", str(out), "--grid-step", "0"]) == 2
    assert "--grid-step must be > 0, got 0.0" in capsys.readouterr().err
    assert not out.exists()
    assert main(["results", "plot", str(table), "--out", str(out)]) == 0
    assert out.is_file()
