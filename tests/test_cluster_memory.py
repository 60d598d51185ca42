"""The training memory estimate against numbers worked out by hand, and against the layouts of
verl's own example scripts (which run on 80 GB GPUs).

Nothing stands in: the estimate is arithmetic on the config and the models' shapes (their
config.json values, ``vade.cluster.models``). The hand numbers below follow the formula in
``vade.cluster.memory``'s docstring term by term.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from vade.cluster.memory import Layout, check_layout, layout_of, phases
from vade.cluster.models import KNOWN, shape_of
from vade.cluster.preflight import run_checks

GIB = 2**30


@pytest.fixture(scope="module")
def paper() -> dict:
    with open("config/config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def _table4(paper: dict) -> dict:
    cfg = copy.deepcopy(paper)
    cfg["train"].pop("verl", None)   # VerlConfig's defaults: Table 4, 16 sequences per GPU
    return cfg


def test_3b_layout_by_hand(paper):
    x = layout_of(_table4(paper), "qwen2.5-vl-3b")
    # Qwen2.5-VL-3B: 3.75e9 params, 36 layers, hidden 2048, vocab 151936; 4 GPUs; 16 sequences
    # of 8192 + 2048 tokens
    assert (x.gpus, x.micro_batch, x.seq_len) == (4, 16, 10240)
    states = 16 * 3.75e9 / 4                                    # 15.0e9 B
    acts = 16 * 10240 * 2048 * (2 * 36 + 34)                    # 35,567,697,920 B
    logits = 4 * 16 * 10240 * 151936                            # 99,573,514,240 B
    update = (states + acts + logits) / GIB + 2.0               # 141.83 GiB
    assert phases(x, 79.0)[0].gib == pytest.approx(update)
    assert round(update, 1) == 141.8
    # 8 sequences: 13.97 + 16.56 + 46.37 + 2 = 78.90 GiB fits 79; 9 do not (86.77)
    assert check_layout(x) == ["update needs 141.8 GiB per GPU of 79: set "
                               "train.verl.ppo_micro_batch_size_per_gpu <= 8"]


def test_7b_layout_by_hand(paper):
    x = layout_of(_table4(paper), "qwen2.5-vl-7b")
    # Qwen2.5-VL-7B: 8.29e9 params, 28 layers, hidden 3584, vocab 152064
    states = 16 * 8.29e9 / 4                                    # 33.16e9 B = 30.88 GiB
    acts = 16 * 10240 * 3584 * (2 * 28 + 34)                    # 52,848,230,400 B
    logits = 4 * 16 * 10240 * 152064                            # 99,657,400,320 B
    assert phases(x, 79.0)[0].gib == pytest.approx((states + acts + logits) / GIB + 2.0)
    # log-probs: 12 B/param + one layer + bf16 logits of 16 sequences
    lp = (12 * 8.29e9 / 4 + 34 * 16 * 10240 * 3584 + 2 * 16 * 10240 * 152064) / GIB + 2.0
    assert phases(x, 79.0)[1].gib == pytest.approx(lp)           # 90.2 GiB
    # rollout: 0.6 of 79 GiB for vLLM + the 12 B/param left on the GPU
    assert phases(x, 79.0)[2].gib == pytest.approx(0.6 * 79 + 12 * 8.29e9 / 4 / GIB + 2.0)
    problems = check_layout(x)
    assert problems[0].endswith("set train.verl.ppo_micro_batch_size_per_gpu <= 5")
    assert problems[1].endswith("set train.verl.log_prob_micro_batch_size_per_gpu <= 13")
    # the shipped config's 4 and 8 fit
    assert check_layout(layout_of(paper, "qwen2.5-vl-7b")) == []


@pytest.mark.parametrize("name, gpus, micro, logprob_micro, seq, share", [
    # examples/grpo_trainer/run_qwen2_5_vl-7b.sh: 8 GPUs, 10 per GPU, 1024 + 2048 tokens
    ("Qwen2.5-VL-7B-Instruct", 8, 10, 20, 1024 + 2048, 0.6),
    # examples/grpo_trainer/run_qwen2_5_vl-3b-visualwebinstruct.sh: 6 GPUs, 4 per GPU,
    # 8192 + 3072 tokens
    ("Qwen2.5-VL-3B-Instruct", 6, 4, 8, 8192 + 3072, 0.4),
])
def test_verls_own_example_layouts_fit(name, gpus, micro, logprob_micro, seq, share):
    """They run on 80 GB GPUs with vLLM kept awake (free_cache_engine=False); the estimate
    assumes verl's default (vLLM asleep during the update), so only the phases are checked."""
    x = Layout(KNOWN[name], gpus, micro, logprob_micro, seq, share)
    assert check_layout(x) == []
    assert max(p.gib for p in phases(x, 79.0)) < 79.0


def test_offload_frees_the_rollout_phase_only():
    x = Layout(KNOWN["Qwen2.5-VL-7B-Instruct"], 4, 4, 8, 10240, 0.9)
    assert any(p.startswith("rollout needs") for p in check_layout(x))
    off = Layout(KNOWN["Qwen2.5-VL-7B-Instruct"], 4, 4, 8, 10240, 0.9, param_offload=True,
                 optimizer_offload=True)
    assert phases(off, 79.0)[0].gib == phases(x, 79.0)[0].gib     # the update reloads them
    assert phases(off, 79.0)[2].gib == pytest.approx(0.9 * 79 + 2.0)
    assert check_layout(off) == []


def test_preflight_refuses_a_layout_that_cannot_fit(paper):
    checks = run_checks(_table4(paper), "train", model="qwen2.5-vl-7b", profile=None,
                        probe=lambda: [79.2] * 4, importer=lambda m: None,
                        environ={}, free_gb=lambda p: 1e6)
    mem = [c for c in checks if c.name == "training memory qwen2.5-vl-7b"][0]
    assert not mem.ok and "train.verl.ppo_micro_batch_size_per_gpu <= 5" in mem.detail
    ok = run_checks(paper, "train", model="qwen2.5-vl-7b", profile=None,
                    probe=lambda: [79.2] * 4, importer=lambda m: None, environ={},
                    free_gb=lambda p: 1e6)
    assert [c.ok for c in ok if c.name.startswith("training memory")] == [True]


def test_a_staged_config_json_is_read_before_the_table(tmp_path):
    snap = tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-7B-Instruct" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(
        '{"text_config": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,'
        ' "num_key_value_heads": 2, "vocab_size": 100}}')
    shape = shape_of("Qwen/Qwen2.5-VL-7B-Instruct", tmp_path)
    assert (shape.layers, shape.hidden, shape.heads, shape.vocab) == (2, 64, 4, 100)
    assert shape.params == KNOWN["Qwen2.5-VL-7B-Instruct"].params
    assert shape_of("someone/unknown-model") is None
