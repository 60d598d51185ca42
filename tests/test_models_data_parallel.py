"""The data-parallel warm start: forked processes sum their gradients over gloo (real processes,
real gloo on this machine; nothing is a stand-in)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from vade.models.config import WarmStartConfig, model_config_from_section
from vade.models.data_parallel import DataParallel
from vade.models.testing import bar_examples, smallest_arch, tiny_policy
from vade.models.warmstart import warm_start


def test_sum_adds_every_process_share_and_only_the_caller_leaves():
    with DataParallel(3) as dp:
        a = torch.full((2, 3), float(dp.rank + 1))  # 1, 2, 3 in ranks 0, 1, 2
        b = torch.tensor([10.0 ** dp.rank])          # 1, 10, 100
        dp.sum_([a, b])
        rank = dp.rank
    assert rank == 0  # the forked copies exited inside the block
    assert torch.equal(a, torch.full((2, 3), 6.0)) and b.item() == 111.0


def test_a_failing_process_fails_the_caller():
    with pytest.raises(RuntimeError, match="1 of its 2 processes failed"), \
            DataParallel(2) as dp:
        if dp.rank == 1:
            raise ValueError("rank 1 breaks (expected in this test)")


@pytest.mark.e2e  # trains twice, forks: ~10-30 s on the shared 2-core machine
def test_two_processes_train_the_one_process_weights():
    """Rows 0, 2, .. in one process and 1, 3, .. in the other, each loss over the whole batch's
    tokens: the summed gradient is the one-process gradient, so the weights agree to float
    rounding after several steps; losses too."""
    exs = bar_examples(24, seed=5)
    cfg = WarmStartConfig(steps=4, lr=1e-2, batch_size=8, warmup_steps=1)
    runs = []
    for processes in (1, 2):
        policy = tiny_policy(exs, arch=smallest_arch())
        start = torch.cat([p.detach().reshape(-1) for p in policy.model.parameters()])
        info = warm_start(policy.model, policy.processor, exs,
                          WarmStartConfig(**{**cfg.__dict__, "processes": processes}),
                          seed=0, progress=False)
        runs.append((info, torch.cat([p.detach().reshape(-1)
                                      for p in policy.model.parameters()])))
    (one, w1), (two, w2) = runs
    assert two["processes"] == 2 and one["processes"] == 1
    assert (w1 - start).abs().max() > 1e-3  # trained: the comparison below is not of no-ops
    torch.testing.assert_close(w2, w1, rtol=0, atol=1e-5)
    assert two["loss_first"] == pytest.approx(one["loss_first"], abs=1e-5)
    assert two["loss_last"] == pytest.approx(one["loss_last"], abs=1e-4)


def test_processes_is_checked():
    assert model_config_from_section({"kind": "tiny"}).warm_start.processes == 1
    with pytest.raises(ValueError, match=r"model\.warm_start\.processes"):
        model_config_from_section({"warm_start": {"processes": 0}})
