"""DIVA variants of synthetic items: the answer is kept, hints are true, strength grows with D.

Real code throughout: the synthetic renderer makes the originals, ``make_variant`` the variants.
"""

from __future__ import annotations

import io
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from vade.data.config import SyntheticConfig
from vade.data.synthetic.generate import make_items
from vade.data.synthetic.variants import READ_FROM_IMAGE, REPHRASINGS, hint_steps, make_variant
from vade.diva import plan_variant


@pytest.fixture(scope="module")
def items():
    cfg = SyntheticConfig()
    return make_items(cfg, 7, "train", {"math": 12, "chart": 12, "science": 12}, set())


def _pixels(item):
    with Image.open(io.BytesIO(item.images[0])) as img:
        return np.asarray(img.convert("RGB"), dtype=float)


@pytest.mark.parametrize("offset", range(-8, 9))
def test_every_variant_keeps_the_answer_and_the_task(items, offset):
    for k, item in enumerate(items):
        v = make_variant(item, plan_variant(5, offset), np.random.default_rng(k))
        assert (v.answer, v.task, v.answer_type, v.domain) == (
            item.answer, item.task, item.answer_type, item.domain)
        assert v.row_id != item.row_id and v.row_id.startswith(item.row_id + "~d")
        assert _pixels(v).shape == _pixels(item).shape


def test_hints_are_true_and_grow_with_the_offset(items):
    for item in items:
        steps = hint_steps(item, np.random.default_rng(0))
        assert steps[-1].endswith(f" {item.answer}." if item.answer_type == "choice"
                                  else f" {item.answer} dots.")
        if item.answer_type == "choice":  # every ruled-out letter is a wrong option
            ruled_out = [s.split()[0] for s in steps[:-1]]
            assert item.answer not in ruled_out and len(set(ruled_out)) == len(ruled_out)
    item = next(i for i in items if i.task == "synthetic/chart")
    shown = [make_variant(item, plan_variant(9, d), np.random.default_rng(1)).question.count(".")
             for d in (-1, -3, -5, -8)]
    assert shown == sorted(shown) and shown[0] < shown[-1]
    full = make_variant(item, plan_variant(9, -8), np.random.default_rng(1)).question
    assert f"So the answer is {item.answer}." in full
    assert f"So the answer is {item.answer}." not in make_variant(
        item, plan_variant(9, -5), np.random.default_rng(1)).question


def test_rephrasings_never_repeat_the_original_wording(items):
    for k, item in enumerate(items):
        q = make_variant(item, plan_variant(5, 0), np.random.default_rng(k)).question
        assert q in REPHRASINGS[item.task] and q != item.question


def test_perturbation_strength_grows_with_the_offset(items):
    def change(offset):
        return np.mean([np.abs(_pixels(make_variant(it, plan_variant(3, offset),
                                                     np.random.default_rng(k))) - _pixels(it)).mean()
                        for k, it in enumerate(items)])
    weak, mid, strong = change(1), change(3), change(6)
    assert 0 < weak < mid < strong


def test_text_in_image_moves_the_question_into_the_picture(items):
    """The picture gains the question as text in a band on top and nothing else: another
    question of the same length changes only the band's rows, and the variant draws no random
    numbers (a perturbation would pass the old "pixels differ" check, and fails both of these)."""
    item = items[0]
    v = make_variant(item, plan_variant(1, 8), np.random.default_rng(0))
    assert v.question == READ_FROM_IMAGE
    assert np.abs(_pixels(v) - _pixels(item)).mean() > 1.0
    assert v.images == make_variant(item, plan_variant(1, 8), np.random.default_rng(1)).images
    other = make_variant(replace(item, question=item.question.swapcase()), plan_variant(1, 8),
                         np.random.default_rng(0))
    rows = np.flatnonzero(np.abs(_pixels(other) - _pixels(v)).max(axis=(1, 2)) > 0)
    height, width = _pixels(v).shape[:2]
    # the band: 11 px per line of about width/6 characters (PIL's bitmap font), + 2, then the
    # whole picture is scaled back to its height
    import textwrap

    band = 11 * len(textwrap.wrap(item.question, max(4, width // 6))) + 2
    band_rows = band * height / (height + band)
    assert rows.size and rows.min() == 0 and rows.max() <= band_rows + 1, (rows, band_rows)


def test_variants_are_deterministic_per_stream(items):
    plan = plan_variant(2, 5)
    a = make_variant(items[3], plan, np.random.default_rng(9))
    b = make_variant(items[3], plan, np.random.default_rng(9))
    assert a == b


def test_a_row_whose_answer_is_not_an_option_is_named(items):
    item = next(i for i in items if i.task == "synthetic/balance")
    with pytest.raises(ValueError, match=rf"row {item.row_id}: answer 'C'"):
        hint_steps(replace(item, answer="C"), np.random.default_rng(0))
