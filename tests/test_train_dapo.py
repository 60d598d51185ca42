"""DAPO dynamic sampling with a deterministic fake generator: refills, cap, counts, reasons."""

from __future__ import annotations

import numpy as np
import pytest

from vade.sampling import make_sampler
from vade.train.dapo import dynamic_sample

B, G = 4, 8


def _fake(r_of):
    """generate(ids, attempt) -> (r per id from the table ``r_of``, payload = (ids, attempt))."""
    calls = []

    def generate(ids, attempt):
        calls.append((ids.copy(), attempt))
        return np.array([r_of[i] for i in ids]), ("payload", attempt)
    return generate, calls


def _stream(order, size=B):
    batches = [np.array(order[k:k + size]) for k in range(0, len(order), size)]
    it = iter(batches)
    return lambda: next(it)


def test_refills_until_full_and_counts_every_rollout_and_discarded_group():
    # ids 0-11; r: 0 and G are uninformative. batch 1 (0-3): two informative (1, 3);
    # batch 2 (4-7): 5 informative, 6 and 7 informative -> 5, 6 fill the batch, 7 is surplus
    r_of = {0: 0, 1: 3, 2: 8, 3: 5, 4: 8, 5: 1, 6: 7, 7: 4, 8: 2, 9: 2, 10: 2, 11: 2}
    gen, calls = _fake(r_of)
    res = dynamic_sample(_stream(list(range(12))), gen, batch_size=B, group_size=G,
                         max_rollouts=3 * B * G)
    assert res.reason == "full"
    assert res.kept_indices.tolist() == [1, 3, 5, 6]
    assert res.kept_correct.tolist() == [3, 5, 1, 7]
    assert res.rollouts_generated == 2 * B * G  # 64: both batches count, kept or not
    assert res.discarded_groups == 3 and res.surplus_groups == 1
    assert [a for _, a in calls] == [0, 1] and res.gen_batches == 2
    assert res.pieces[1].payload == ("payload", 1)


def test_cap_is_respected_exactly_and_cuts_the_last_candidate_batch():
    # every group uninformative: generation only stops at the cap. 2.5 x B x G = 80 rollouts
    # = 10 prompts: batches of 4, 4, then 2 (cut to fit), never 96.
    r_of = {i: (0 if i % 2 else G) for i in range(100)}
    gen, calls = _fake(r_of)
    res = dynamic_sample(_stream(list(range(100))), gen, batch_size=B, group_size=G,
                         max_rollouts=int(2.5 * B * G))
    assert res.reason == "rollout_cap"
    assert res.rollouts_generated == 80
    assert [c[0].size for c in calls] == [4, 4, 2]
    assert res.kept_indices.size == 0 and res.discarded_groups == 10
    # a cap of exactly 3x takes three full batches
    gen, calls = _fake(r_of)
    res3 = dynamic_sample(_stream(list(range(100))), gen, batch_size=B, group_size=G,
                          max_rollouts=3 * B * G)
    assert res3.rollouts_generated == 96 and len(calls) == 3


def test_partial_batch_when_cap_hit_trains_on_what_it_has():
    r_of = {i: (3 if i == 5 else 0) for i in range(100)}
    gen, _ = _fake(r_of)
    res = dynamic_sample(_stream(list(range(100))), gen, batch_size=B, group_size=G,
                         max_rollouts=3 * B * G)
    assert res.reason == "rollout_cap" and res.kept_indices.tolist() == [5]


def test_max_gen_batches_and_no_prompt_generated_twice_in_a_step():
    r_of = {i: 0 for i in range(100)}
    gen, calls = _fake(r_of)
    res = dynamic_sample(_stream(list(range(100))), gen, batch_size=B, group_size=G,
                         max_rollouts=100 * B * G, max_gen_batches=2)
    assert res.reason == "max_gen_batches" and len(calls) == 2
    # a pool of 6 prompts drawn in epochs by the uniform sampler: after 6 distinct prompts the
    # step stops instead of regenerating prompts it already tried
    r_of = {i: 0 for i in range(6)}
    gen, calls = _fake(r_of)
    sampler = make_sampler("vanilla", 6, 3, seed=0)
    res = dynamic_sample(sampler.select, gen, batch_size=3, group_size=G,
                         max_rollouts=100 * 3 * G)
    assert res.reason == "pool_exhausted"
    ids = np.concatenate([c[0] for c in calls])
    assert sorted(ids.tolist()) == list(range(6))


def test_bad_arguments_fail_before_generating():
    gen, calls = _fake({})
    with pytest.raises(ValueError, match="max_rollouts"):
        dynamic_sample(_stream([0, 1, 2, 3]), gen, batch_size=B, group_size=G, max_rollouts=10)
    with pytest.raises(ValueError, match="group_size"):
        dynamic_sample(_stream([0, 1, 2, 3]), gen, batch_size=B, group_size=1, max_rollouts=999)
    assert calls == []


def test_whole_draws_generate_repeats_and_skip_a_draw_that_would_pass_the_cap():
    # the simulator's accounting: draw 2 repeats id 1 (generated again, kept once, yet counted
    # towards the batch); a third draw would pass the cap of 2.5 batches, so none is generated
    r_of = {0: 0, 1: 3, 2: 8, 3: 8, 4: 8, 5: 8, 6: 2, 7: 8}
    gen, calls = _fake(r_of)
    res = dynamic_sample(_stream([0, 1, 2, 3, 1, 5, 6, 7, 4, 4, 4, 4]), gen, batch_size=B,
                         group_size=G, max_rollouts=int(2.5 * B * G), whole_draws=True)
    assert [c[0].tolist() for c in calls] == [[0, 1, 2, 3], [1, 5, 6, 7]]
    assert res.reason == "rollout_cap"
    assert res.rollouts_generated == 2 * B * G
    assert res.kept_indices.tolist() == [1, 6]
    assert res.kept_correct.tolist() == [3, 2]
