"""``vade bench``'s wiring: each target parsed, measured, printed and written as JSON by one path.

Real: the ``vade`` parser and ``main``, the sampler benchmark (``vade.bench.sampler``) at a tiny
size, the JSON file. The reward benchmark is only parsed here: each of its worst answers runs
into the 1 s budget (``test_reliability_reward.py`` checks that budget).
"""

from __future__ import annotations

import argparse
import json

import pytest

from vade.bench.command import TARGETS, add_arguments
from vade.cli import build_parser, main


def test_every_target_has_a_runner_and_sizes_are_whole_numbers(capsys):
    p = argparse.ArgumentParser()
    add_arguments(p)
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(TARGETS)
    args = build_parser().parse_args(["bench", "sampler", "--sizes", "1e4", "250000"])
    assert args.sizes == [10_000, 250_000] and args.out == "reports/bench/sampler.json"
    args = build_parser().parse_args(["bench", "reward", "--repeats", "2"])
    assert (args.repeats, args.threads, args.out) == (2, 8, "reports/bench/reward.json")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "sampler", "--sizes", "0.5"])
    assert "not a positive whole number: 0.5" in capsys.readouterr().err


def test_bench_sampler_prints_its_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench" / "sampler.json"
    assert main(["bench", "sampler", "--sizes", "1e3", "2000", "--batch-size", "8", "--steps",
                 "2", "--log-steps", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [(r["n_samples"], r["batch_size"], r["steps"]) for r in result["sampler"]] == [
        (1000, 8, 2), (2000, 8, 2)]
    assert result["logging"]["events_per_step"] == 8
    printed = capsys.readouterr().out
    assert "VADE sampler, batch 8, median of 2 steps" in printed
    assert "       1,000 " in printed and "       2,000 " in printed
    assert printed.rstrip().endswith(f"wrote {out}")
