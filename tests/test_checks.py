"""The one set of value checks (vade/checks.py): errors name the key, booleans are not numbers,
the bounds are the ones asked for. All real; no stand-ins."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vade.checks import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_number,
    reject_unknown,
)


def test_check_int_bounds_and_types():
    assert check_int("train.steps", 5, 1, 5) == 5 and check_int("n", np.int64(3), 1, 5) == 3
    for bad in (0, 6):
        with pytest.raises(ValueError, match=rf"train\.steps = {bad} is out of range \[1, 5\]"):
            check_int("train.steps", bad, 1, 5)
    for bad in (True, 2.0, "3", None):
        with pytest.raises(ValueError, match=r"train\.steps must be an integer, got "):
            check_int("train.steps", bad, 1, 5)


def test_check_float_open_and_closed_lower_bound():
    out = check_float("t", 2, 0, 2, open_lo=True)
    assert out == 2.0 and isinstance(out, float)
    assert check_float("t", 0, 0, 2) == 0.0
    with pytest.raises(ValueError, match=r"t = 0 is out of range \(0, 2\]"):
        check_float("t", 0, 0, 2, open_lo=True)
    with pytest.raises(ValueError, match=r"t = 2.5 is out of range \[0, 2\]"):
        check_float("t", 2.5, 0, 2)
    for bad in (False, "1", math.nan, math.inf):
        with pytest.raises(ValueError, match="t must be a number, got"):
            check_float("t", bad, 0, 2)


def test_check_number_returns_the_value_and_keeps_numpy_types():
    v = np.float32(0.5)
    assert check_number("p", v, 0, 1) is v


def test_check_bool_takes_only_yaml_booleans():
    assert check_bool("data.paper.use_hub", False) is False
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match=r"data\.paper\.use_hub must be true or false, got "):
            check_bool("data.paper.use_hub", bad)


def test_check_choice_and_unknown_keys():
    assert check_choice("train.algorithm", "gspo", ("grpo", "gspo")) == "gspo"
    with pytest.raises(ValueError, match=r"train\.algorithm = 'ppo' is unknown \(allowed: grpo, "
                                         r"gspo\)"):
        check_choice("train.algorithm", "ppo", ("grpo", "gspo"))
    reject_unknown({"steps": 1}, {"steps", "lr"}, "train")
    with pytest.raises(ValueError, match="unknown key 'train.step'"):
        reject_unknown({"step": 1, "lr": 1}, {"steps", "lr"}, "train")
