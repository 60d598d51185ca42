"""The engines tier: the real vLLM 0.12 (its CPU build) where the paper config uses vLLM.

These tests need ``.venv-engines`` (``make engines``; docs/installation.md): without vLLM they
skip, naming that command, and under ``CI=true`` (where ``.ci/run`` creates it) the skip is a
failure. The main venv deselects them (``-m "not engines"`` in the Makefile) and collects them
without importing vLLM: every vLLM import is inside a fixture or a test.

CPU settings for every engine these tests start (inherited by the subprocesses): a 1 GiB KV
cache (unset, vLLM takes 4 GiB), one OpenMP thread per engine and no core binding (two engines
stand for two GPUs on a 2-core machine; vLLM's automatic binding would put both on the same
cores).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

CPU_SETTINGS = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "OMP_NUM_THREADS": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def vllm_missing_reason() -> str | None:
    """Why the tier cannot run here, or None."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed in this environment: `make engines`, then `make test-engines`"
    return None


@pytest.fixture(scope="session", autouse=True)
def _needs_vllm() -> None:
    """Session-wide and autouse, so it runs before any module fixture starts an engine."""
    reason = vllm_missing_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the engines tier ({reason})")
    pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _cpu_engine_settings() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in CPU_SETTINGS}
    os.environ.update(CPU_SETTINGS)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory):
    """The project's tiny Qwen2.5-VL (``vade.models.tiny``, the default architecture: head size
    32, one vLLM's CPU attention takes), warm-started 60 steps on the bar task so that its
    answers are letters in \\boxed{} right about a quarter of the time (pass rates to compare,
    not all zero), saved with save_pretrained as ``vade build-model`` does. About 35 s, once
    per session."""
    import torch

    from vade.models.config import TinyArchConfig, WarmStartConfig
    from vade.models.testing import bar_examples
    from vade.models.tiny import build_tiny, corpus_from_examples
    from vade.models.warmstart import warm_start

    torch.set_num_threads(1)
    examples = bar_examples(200, seed=1)
    model, processor = build_tiny(corpus_from_examples(examples), TinyArchConfig(), 0)
    warm_start(model, processor, examples, WarmStartConfig(steps=60, batch_size=16, lr=2e-3),
               seed=0, progress=False)
    out = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(str(out))
    processor.save_pretrained(str(out))
    return out

