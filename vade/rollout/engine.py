"""``make_engine``: a generation engine by config name, the CPU (transformers) or GPU (vLLM) one.

What every engine returns and promises (``Rollouts``, ``GenerationEngine``) is
``vade.models.rollouts``, below the engines; it is re-exported here.
"""

from __future__ import annotations

import importlib.util
from functools import partial
from typing import Any

from vade.models.hf_engine import HFEngine
from vade.models.policy import load_policy
from vade.models.rollouts import GenerationEngine, Rollouts
from vade.rollout.parallel import DataParallelEngine, gpu_groups, visible_gpus
from vade.rollout.vllm_engine import VLLMEngine, require_vllm

__all__ = ["ENGINES", "GenerationEngine", "Rollouts", "make_engine"]

ENGINES = ("hf", "vllm")


def make_engine(kind: str, model_path: str, *, batch_size: int = 64, threads: int | None = 1,
                tensor_parallel_size: int = 1, gpus: list[str] | None = None,
                **kwargs: Any) -> GenerationEngine:
    """An engine by config name (``difficulty.engine``): ``hf`` (CPU) or ``vllm`` (GPU).

    ``vllm`` uses every GPU of the job (``gpus``, default the visible ones): one engine of
    ``tensor_parallel_size`` GPUs when that is all of them, else one engine per group of that
    size, each in its own process (``vade.rollout.parallel``)."""
    if kind == "hf":
        model, processor = load_policy(model_path, threads=threads)
        return HFEngine(model, processor, batch_size=batch_size)
    if kind == "vllm":
        if importlib.util.find_spec("vllm") is None:   # said before the GPU count is
            require_vllm()   # (not imported here: the engines' processes import it)
        groups = gpu_groups(visible_gpus() if gpus is None else gpus, tensor_parallel_size)
        factory = partial(VLLMEngine, model_path, tensor_parallel_size=tensor_parallel_size,
                          **kwargs)
        return factory() if len(groups) == 1 else DataParallelEngine(factory, groups)
    raise ValueError(f"unknown generation engine {kind!r} (choose from {ENGINES})")
