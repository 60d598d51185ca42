"""Warm-start rows replaced by DIVA variants: which rows, the answer kept, held-out rows untouched.

Real: synthetic rows, ``variant_example``, ``with_variants``; nothing is a stand-in.
"""

from __future__ import annotations

import numpy as np
import pytest

from vade.data.config import DEFAULT_PROMPT_TEMPLATE, SyntheticConfig
from vade.data.records import example_from_row
from vade.data.synthetic.generate import make_items
from vade.data.writer import verl_row
from vade.models.build import with_variants
from vade.models.config import model_config_from_section
from vade.models.testing import bar_examples


def _examples(n=30):
    items = make_items(SyntheticConfig(), 2, "warmstart", {"math": 10, "chart": 10, "science": 10},
                       set())
    return [example_from_row(verl_row(it, i, "warmstart", DEFAULT_PROMPT_TEMPLATE, False))
            for i, it in enumerate(items[:n])]


def test_a_share_of_training_rows_becomes_variants_with_the_same_answers():
    ex = _examples()
    train_pos, heldout = np.arange(0, 27), np.arange(27, 30)
    out = with_variants(ex, train_pos, 1 / 3, seed=4)
    changed = [i for i in range(30) if out[i] != ex[i]]
    assert len(changed) == 9 and all(i < 27 for i in changed)
    assert all(out[i] == ex[i] for i in heldout)
    assert [e.ground_truth for e in out] == [e.ground_truth for e in ex]
    assert out == with_variants(ex, train_pos, 1 / 3, seed=4)  # deterministic
    assert with_variants(ex, train_pos, 1 / 3, seed=5) != out


def test_non_synthetic_rows_are_refused_naming_the_key():
    ex = bar_examples(4, seed=1)
    with pytest.raises(ValueError, match="model.warm_start.variant_fraction: row index=.*"
                                         "has no variant builder"):
        with_variants(ex, np.arange(4), 0.5, seed=0)
    with pytest.raises(ValueError, match=r"'model.warm_start.variant_fraction' must be a number "
                                         r"in \[0, 1\], got 1.5"):
        model_config_from_section({"warm_start": {"variant_fraction": 1.5}})
