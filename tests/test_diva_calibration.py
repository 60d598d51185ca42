"""The DIVA calibration benchmark's plumbing on real parts: synthetic rows, variants, a tiny model.

Real: the synthetic renderer and verl-row writer, ``make_variant``, the HF generation engine on a
randomly initialised tiny Qwen2.5-VL (``vade.models.testing.tiny_policy``), the project's reward.
The model is untrained, so on it only the bookkeeping is asserted; the numbers of the table are
checked with a scripted engine of known accuracy per offset (the benchmark measures how accuracy
falls with D on the warm-started model).
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


class ScriptedEngine:
    """Stand-in for the generation engine, with a known accuracy per calibration pass: pass k
    (the original, then each offset; ``calibrate`` seeds pass k with ``seed * 1000 + k``)
    answers the first ``SHARE[k]`` of its rollouts with the row's own ground truth, the rest
    with a wrong answer. It records every batch it is given."""

    SHARE = {0: 1.0, 1: 0.25, 2: 0.5, 3: 0.75}

    def __init__(self) -> None:
        self.batches: list[list] = []

    def generate(self, batch, n, *, temperature, max_new_tokens, seed):
        from types import SimpleNamespace

        self.batches.append(list(batch))
        pos = np.repeat(np.arange(len(batch)), n)
        right = round(self.SHARE[seed % 1000] * pos.size)
        texts = [rf"\boxed{{{batch[p].ground_truth}}}" if i < right else r"\boxed{nothing}"
                 for i, p in enumerate(pos)]
        return SimpleNamespace(texts=texts, example_pos=pos)


def test_calibration_counts_every_offset_and_is_deterministic(examples):
    """Real: ``calibrate``, the variants, the project's reward. Stand-in: the engine (scripted,
    known accuracy per offset), so the table's numbers are checked, not only its shape."""
    kwargs = dict(rollouts=2, temperature=1.0, max_new_tokens=4, offsets=(-8, 0, 8),
                  progress=False)
    engine = ScriptedEngine()
    a = calibrate(engine, examples, seed=1, **kwargs)
    assert [r["offset"] for r in a["table"]] == [None, -8, 0, 8]
    assert [r["accuracy"] for r in a["table"]] == [1.0, 0.25, 0.5, 0.75]  # 12, 3, 6, 9 of 12
    assert all(r["answers"] == len(examples) * 2 == 12 for r in a["table"])
    assert [r["stderr"] for r in a["table"]] == pytest.approx(
        [0.0, 0.125, np.sqrt(0.25 / 12), 0.125])  # sqrt(p (1 - p) / 12)
    assert a["spearman_accuracy_vs_offset"] == pytest.approx(1.0)
    first = engine.batches
    assert first[0] == list(examples)  # the originals, then a variant of each row per offset
    assert all(len(b) == len(examples) and all(v != e for v, e in zip(b, examples))
               for b in first[1:])
    again, other = ScriptedEngine(), ScriptedEngine()
    assert calibrate(again, examples, seed=1, **kwargs)["table"] == a["table"]
    assert again.batches == first  # same seed, same variants
    calibrate(other, examples, seed=2, **kwargs)
    assert other.batches[1:] != first[1:]  # another seed draws other variants


def test_calibration_runs_on_the_tiny_model(examples):
    """The same on the real HF engine with a random tiny Qwen2.5-VL: the bookkeeping only (an
    untrained model scores about 0 everywhere)."""
    engine = HFEngine(tiny_policy(examples, seed=0), batch_size=32)
    a = calibrate(engine, examples, rollouts=2, temperature=1.0, max_new_tokens=4, seed=1,
                  offsets=(-8, 8), progress=False)
    assert [r["offset"] for r in a["table"]] == [None, -8, 8]
    assert all(r["answers"] == len(examples) * 2 for r in a["table"])


def test_a_row_without_its_question_in_the_prompt_is_named(examples):
    ex = examples[0]
    broken = example_from_row({**verl_row(item_from_example(ex), 7, "val", "{question}", False),
                               "prompt": [{"role": "user", "content": "<image>something else"}]})
    with pytest.raises(ValueError, match="row index=7: its prompt does not hold its question"):
        variant_example(broken, 1, 5, rng_for(0, "x"))
