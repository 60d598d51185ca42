"""The ``vade`` command line as a newcomer meets it: its help and its errors (real argparse, real
verb modules; nothing runs past argument parsing)."""

from __future__ import annotations

import pytest

from vade.cli import COMMANDS, main

PIPELINE = ["build-data", "build-model", "init-difficulty", "train", "evaluate", "report",
            "simulate"]


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_the_verbs_in_pipeline_order_without_rest_markup(capsys):
    text = _help(capsys)
    assert "``" not in text and "`" not in text  # reST backticks are for docstrings, not a terminal
    listed = [line.split()[0] for line in text.splitlines()
              if line.startswith("    ") and line.split()[0] in COMMANDS]
    assert listed == list(COMMANDS) and listed[:len(PIPELINE)] == PIPELINE
    assert all(COMMANDS[v][1].startswith("tool: ") for v in listed[len(PIPELINE):])


def test_report_help_names_every_format_it_writes(capsys):
    assert "HTML" in _help(capsys, "report") and "Markdown" in _help(capsys, "report")


def test_every_demo_option_has_help(capsys):
    text = _help(capsys, "demo")
    for option in ("--out", "--n-samples", "--batch-size", "--steps", "--seed", "--methods"):
        line = next(line for line in text.splitlines() if line.strip().startswith(option))
        block = text[text.index(line):].split("\n  -")[0]
        assert "default" in block, f"{option} has no help: {block!r}"


def test_a_misspelled_option_gets_the_verbs_usage_and_the_closest_option(capsys):
    """``vade train --methd``: train's usage and 'did you mean --method?', not the top level's
    usage (which says nothing about train's options)."""
    with pytest.raises(SystemExit) as stop:
        main(["train", "--methd", "vade", "--config-json", "{}", "--data-dir", "d",
              "--model", "m", "--out", "o"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: vade train ")
    assert err.splitlines()[-1] == ("vade train: error: unrecognized arguments: --methd vade "
                                    "(did you mean --method?)")
    with pytest.raises(SystemExit):
        main(["bench", "sampler", "--sizs", "3"])  # a nested verb: its own usage too
    assert capsys.readouterr().err.splitlines()[-1] == (
        "vade bench sampler: error: unrecognized arguments: --sizs 3 (did you mean --sizes?)")
