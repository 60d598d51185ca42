"""Logs a user can read: progress redraws become lines, validation shows mid-run.

Real: tqdm (ours and nested bars as libraries make them) in a child process whose stderr is a file,
the local trainer's loop with the toy policy (the tiny model's stand-in for speed; same loop).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import duckdb
from test_train_local import _cfg, _paths, data  # noqa: F401  (module fixture)

from vade.console import LogLines, log_friendly_output
from vade.train.local import train_local
from vade.train.local.toy import ToyPolicy


def test_redraws_become_lines_without_cursor_codes() -> None:
    out = io.StringIO()
    log = LogLines(out)
    for chunk in ("\rtrain:   0%|", "\rtrain:  50%|\x1b[A", "\x1b[2K\rtrain: 100%|", "\n",
                  "\n\n", "\rModel Responding: 3/3\x1b[A\x1b[31m!\x1b[0m\r\n", "done\n",
                  "\reval: 0/2", "a warning", " printed", " in parts\n", "\reval: 1/2"):
        log.write(chunk)
    log.close_line()
    assert out.getvalue() == ("train:   0%|\ntrain:  50%|\ntrain: 100%|\n"
                              "Model Responding: 3/3!\ndone\neval: 0/2\n"
                              "a warning printed in parts\neval: 1/2\n")


def test_a_command_logging_to_a_file_writes_lines(tmp_path: Path) -> None:
    script = (
        "from vade.console import log_friendly_output\n"
        "with log_friendly_output():\n"
        "    from tqdm import tqdm\n"
        "    for _ in tqdm(range(3), desc='outer', mininterval=0):\n"
        "        for _ in tqdm(range(4), desc='inner', mininterval=0, leave=False):\n"
        "            pass\n"
    )
    log = tmp_path / "job.log"
    with log.open("w") as fh:
        proc = subprocess.run([sys.executable, "-c", script], stderr=fh, timeout=120)
    assert proc.returncode == 0
    text = log.read_text()
    lines = text.splitlines()
    assert "\r" not in text and "\x1b" not in text
    assert all(line.strip() for line in lines)
    assert sum("inner" in line for line in lines) >= 3 * 4  # every redraw is a line of its own
    assert any(line.startswith("outer: 100%") for line in lines)


def test_training_log_shows_validation_as_it_happens(data: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "run"
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std), log_friendly_output():
        done = train_local(_cfg(tmp_path, steps=6, val_every=3), _paths(data, out),
                           progress=True, load_policy=ToyPolicy.load)
    text = err.getvalue() + std.getvalue()
    assert "\r" not in err.getvalue()
    shown = [line for line in text.splitlines() if ": val/acc = " in line]
    assert [line.split(" step ")[1].split(":")[0] for line in shown] == ["0/6", "3/6", "6/6"]
    assert f"val/acc = {done['val_acc']['3']:.3f}" in shown[1]
    # the step-0 baseline is in DuckDB too (the report's curves start there)
    con = duckdb.connect(str(out / "history.duckdb"), read_only=True)
    (v0,) = con.execute("SELECT value FROM metrics WHERE step = 0 AND name = 'val/acc'").fetchone()
    assert v0 == done["val_acc"]["0"]
