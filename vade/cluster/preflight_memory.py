"""Preflight's memory checks: a training layout per phase and the judge's KV cache room.

Why apart from ``vade.cluster.preflight``: the arithmetic lives in ``vade.cluster.memory`` and
``vade.cluster.models``; these turn it into ``Check`` lines, each naming its knob.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vade.cluster.memory import DEFAULT_GPU_GIB, RESERVE_GIB, check_layout, layout_of, summary
from vade.cluster.models import shape_of
from vade.cluster.preflight_check import Check
from vade.eval.judge import JUDGE_MAX_MODEL_LEN, judge_context_tokens
from vade.grid import cells as grid_cells
from vade.job.config import ClusterConfig

__all__ = ["check_judge_kv", "check_training_memory"]


def check_training_memory(config: Mapping[str, Any], model: str | None,
                          gpus: Sequence[float]) -> list[Check]:
    """The verl layout's memory per GPU and phase (``vade.cluster.memory``) against the
    smallest GPU seen (an 80 GB one when none is)."""
    gib = min(gpus) if gpus else DEFAULT_GPU_GIB
    cache = ClusterConfig.from_config(config).cache_dir
    models = [model] if model else list(dict.fromkeys(c.model for c in grid_cells(config)))
    checks = []
    for m in models:
        x = layout_of(config, m, cache)
        if x is None:
            continue
        problems = check_layout(x, gib)
        checks.append(Check(f"training memory {m}", not problems,
                            "; ".join(problems) if problems else summary(x, gib),
                            "the keys named (vade plan prints the same arithmetic)"))
    return checks


def check_judge_kv(ev: Any, free_gib: float) -> Check:
    """Room in the judge's share, after its weights, for the KV cache of one whole request at
    the context it is served with (vLLM refuses to start without it), and that context against
    what a request needs (``vade.eval.judge``)."""
    context = JUDGE_MAX_MODEL_LEN
    args = list(ev.judge.extra_args)
    for i, a in enumerate(args):
        if a.startswith("--max-model-len"):
            context = int(a.split("=", 1)[1] if "=" in a else args[i + 1])
    need_tokens = judge_context_tokens(ev.output_tokens)
    if need_tokens > context:
        return Check("evaluate.judge context", False,
                     f"a request needs up to {need_tokens} tokens (a {ev.output_tokens}-token "
                     f"response + template + verdict), the judge is served with {context}",
                     "lower evaluate.max_new_tokens or pass --max-model-len in "
                     "evaluate.judge.extra_args")
    shape = shape_of(ev.judge.model)
    if shape is None:
        return Check("evaluate.judge KV cache", True, f"context {context} tokens; KV room "
                     f"not checked ({ev.judge.model}'s shape is unknown here)")
    tp = ev.judge.tensor_parallel_size
    per_token = shape.kv_bytes_per_token() / tp
    kv = free_gib - RESERVE_GIB
    fits = int(kv * 2**30 // per_token) if kv > 0 else 0
    return Check("evaluate.judge KV cache", fits >= context,
                 f"{kv:.1f} GiB per GPU after weights and {RESERVE_GIB:g} GiB reserve: "
                 f"{fits} tokens of KV ({per_token / 1024:.0f} KiB each at TP {tp}), "
                 f"{fits // context} request(s) of {context} at once",
                 "raise evaluate.judge.gpu_memory_utilization or "
                 "evaluate.judge.tensor_parallel_size")
