"""Rollouts: G sampled responses per prompt from the current policy, behind one interface.

``GenerationEngine.generate(examples, n, *, temperature, max_new_tokens, seed) -> Rollouts``
(``vade.models.rollouts``); ``HFEngine`` (``vade.models.hf_engine``, CPU, transformers ``generate``) and
``VLLMEngine`` (``vade.rollout.vllm_engine``, GPU, vLLM) implement it. ``vade.rollout.difficulty``
runs Algorithm 1 lines 1-4 (initial per-sample difficulty) with any engine.

Nothing heavy is imported here: the engines load torch and vLLM only when used.
"""

from __future__ import annotations

from vade.models.hf_engine import HFEngine
from vade.models.rollouts import GenerationEngine, Rollouts
from vade.rollout.engine import make_engine
from vade.rollout.vllm_engine import VLLMEngine

__all__ = ["GenerationEngine", "HFEngine", "Rollouts", "VLLMEngine", "make_engine"]
