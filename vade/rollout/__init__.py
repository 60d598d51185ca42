"""Rollouts: G sampled responses per prompt from the current policy, behind one interface.

``GenerationEngine.generate(examples, n, *, temperature, max_new_tokens, seed) -> Rollouts``
(``vade.rollout.engine``); ``HFEngine`` (``vade.rollout.hf``, CPU, transformers ``generate``) and
``VLLMEngine`` (``vade.rollout.vllm_engine``, GPU, vLLM) implement it. ``vade.rollout.difficulty``
runs Algorithm 1 lines 1-4 (initial per-sample difficulty) with any engine.

Nothing heavy is imported here: ``from vade.rollout import HFEngine`` loads torch only when used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GenerationEngine", "HFEngine", "Rollouts", "VLLMEngine", "make_engine"]


def __getattr__(name: str) -> Any:  # lazy: keep ``vade --help`` free of torch
    if name in ("Rollouts", "GenerationEngine"):
        from vade.rollout import engine
        return getattr(engine, name)
    if name == "HFEngine":
        from vade.rollout.hf import HFEngine
        return HFEngine
    if name == "VLLMEngine":
        from vade.rollout.vllm_engine import VLLMEngine
        return VLLMEngine
    if name == "make_engine":
        from vade.rollout.engine import make_engine
        return make_engine
    raise AttributeError(name)
