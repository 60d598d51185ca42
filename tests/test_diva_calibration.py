"""The DIVA calibration benchmark's plumbing on real parts: synthetic rows, variants, a tiny model.

Real: the synthetic renderer and verl-row writer, ``make_variant``, the HF generation engine on a
randomly initialised tiny Qwen2.5-VL (``vade.models.testing.tiny_policy``), the project's reward.
Nothing is a stand-in; the model is untrained, so only the bookkeeping is asserted, not that
accuracy falls with D (the benchmark measures that on the warm-started model).
"""

from __future__ import annotations

import numpy as np
import pytest

from vade.bench.diva_calibration import calibrate
from vade.data.config import DEFAULT_PROMPT_TEMPLATE, SyntheticConfig
from vade.data.records import example_from_row
from vade.data.splits import rng_for
from vade.data.synthetic.generate import make_items
from vade.data.variants import item_from_example, variant_example
from vade.data.writer import verl_row
from vade.models.testing import tiny_policy
from vade.rollout import HFEngine


@pytest.fixture(scope="module")
def examples():
    items = make_items(SyntheticConfig(), 3, "val", {"math": 2, "chart": 2, "science": 2}, set())
    return [example_from_row(verl_row(it, i, "val", DEFAULT_PROMPT_TEMPLATE, False))
            for i, it in enumerate(items)]


def test_variant_rows_keep_index_answer_and_template(examples):
    ex = examples[2]
    assert item_from_example(ex).images[0] == ex.images[0]
    hint = variant_example(ex, -8, 9, np.random.default_rng(0))
    assert (hint.index, hint.ground_truth, hint.answer_type) == (ex.index, ex.ground_truth,
                                                                  ex.answer_type)
    assert hint.messages[0]["content"].endswith("put the final answer in \\boxed{}.")
    assert f"So the answer is {ex.ground_truth}" in hint.messages[0]["content"] or \
        f"exactly {ex.ground_truth} dots" in hint.messages[0]["content"]
    perturbed = variant_example(ex, 6, 1, np.random.default_rng(0))
    assert perturbed.messages == ex.messages and perturbed.images != ex.images


def test_calibration_counts_every_offset_and_is_deterministic(examples):
    engine = HFEngine(tiny_policy(examples, seed=0), batch_size=32)
    kwargs = dict(rollouts=2, temperature=1.0, max_new_tokens=4, seed=1, offsets=(-8, 0, 8),
                  progress=False)
    a = calibrate(engine, examples, **kwargs)
    b = calibrate(engine, examples, **kwargs)
    assert [r["offset"] for r in a["table"]] == [None, -8, 0, 8]
    assert all(r["answers"] == len(examples) * 2 for r in a["table"])
    for r in a["table"]:
        assert r["stderr"] == pytest.approx(np.sqrt(r["accuracy"] * (1 - r["accuracy"]) / 12))
    assert [r["accuracy"] for r in a["table"]] == [r["accuracy"] for r in b["table"]]


def test_a_row_without_its_question_in_the_prompt_is_named(examples):
    ex = examples[0]
    broken = example_from_row({**verl_row(item_from_example(ex), 7, "val", "{question}", False),
                               "prompt": [{"role": "user", "content": "<image>something else"}]})
    with pytest.raises(ValueError, match="row index=7: its prompt does not hold its question"):
        variant_example(broken, 1, 5, rng_for(0, "x"))
