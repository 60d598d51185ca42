"""GPUs asked of SLURM (``resources.<stage>.gpu``) against what each stage's engines will use.

Why here, at config validation: a job given fewer GPUs than its tensor-parallel size queues,
loads, and only then fails inside vLLM or Ray, hours after submission. The workflow calls
``check_gpu_resources`` when it starts (every run and dry run), and ``vade plan`` and
``vade preflight`` call it too, so the refusal names the two keys that disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vade.cluster.models import shape_of
from vade.eval.config import EvaluateConfig
from vade.grid import cells as grid_cells
from vade.train.verl.config import VerlConfig

__all__ = ["check_gpu_resources", "idle_gpus", "stage_gpus", "used_gpus"]


def stage_gpus(config: Mapping[str, Any], stage: str) -> int:
    """``resources.<stage>.gpu`` (0 when unset: a CPU job)."""
    return int(((config.get("resources") or {}).get(stage) or {}).get("gpu") or 0)


def _need(errors: list[str], stage: str, have: int, need: int, key: str, why: str) -> None:
    if have < need:
        errors.append(f"resources.{stage}.gpu = {have} but {key} = {need} ({why}): set "
                      f"resources.{stage}.gpu >= {need} or lower {key}")


def check_gpu_resources(config: Mapping[str, Any]) -> None:
    """Raise ValueError naming every ``resources.<stage>.gpu`` below what its stage uses."""
    errors: list[str] = []
    ev = EvaluateConfig.from_dict(config.get("evaluate") or {})
    gpus = stage_gpus(config, "evaluate")
    if ev.policy.engine == "vllm":
        _need(errors, "evaluate", gpus, ev.policy.tensor_parallel_size,
              "evaluate.policy.tensor_parallel_size", "vLLM shards the policy over that many GPUs")
    if ev.judge.mode == "serve" and any(b.judge for b in ev.benchmarks) and ev.kind == "paper":
        _need(errors, "evaluate", gpus, ev.judge.tensor_parallel_size,
              "evaluate.judge.tensor_parallel_size", "the judge is served inside each job")
    train = config.get("train") or {}
    if train.get("backend") == "verl":
        verl = VerlConfig.from_dict(train.get("verl"))
        if verl.nnodes != 1:
            errors.append(f"train.verl.nnodes = {verl.nnodes}: a training job is one node "
                          "(resources.train), so set train.verl.nnodes: 1")
        _need(errors, "train", stage_gpus(config, "train"), verl.n_gpus_per_node,
              "train.verl.n_gpus_per_node", "Ray places verl's workers on that many GPUs")
    diff = config.get("difficulty") or {}
    if diff.get("engine") == "vllm":
        tp = int(diff.get("tensor_parallel_size", 1) or 1)
        have = stage_gpus(config, "difficulty")
        _need(errors, "difficulty", have, tp, "difficulty.tensor_parallel_size",
              "one vLLM engine spans that many GPUs")
        if have >= tp and have % tp:
            errors.append(f"resources.difficulty.gpu = {have} is not a multiple of "
                          f"difficulty.tensor_parallel_size = {tp} (one engine per {tp} GPUs: "
                          f"{have % tp} would sit idle): set resources.difficulty.gpu to "
                          f"{have - have % tp} or {have - have % tp + tp}")
    errors += _head_errors(config, ev)
    if errors:
        raise ValueError("; ".join(errors))


def _head_errors(config: Mapping[str, Any], ev: Any) -> list[str]:
    """Tensor-parallel sizes that do not split a model's attention heads (vLLM refuses them when
    the engine starts, after the weights were read)."""
    models = config.get("models") or {}
    trained = [str((models.get(m) or {}).get("name_or_path", ""))
               for m in dict.fromkeys(c.model for c in grid_cells(config))]
    pairs: list[tuple[str, int, str]] = []
    diff = config.get("difficulty") or {}
    if diff.get("engine") == "vllm":
        pairs += [(m, int(diff.get("tensor_parallel_size", 1) or 1),
                   "difficulty.tensor_parallel_size") for m in trained]
    train = config.get("train") or {}
    if train.get("backend") == "verl":
        tp = int((train.get("verl") or {}).get("tensor_model_parallel_size", 2))
        pairs += [(m, tp, "train.verl.tensor_model_parallel_size") for m in trained]
    if ev.policy.engine == "vllm":
        pairs += [(m, ev.policy.tensor_parallel_size, "evaluate.policy.tensor_parallel_size")
                  for m in trained]
    if ev.judge.mode == "serve":
        pairs.append((ev.judge.model, ev.judge.tensor_parallel_size,
                      "evaluate.judge.tensor_parallel_size"))
    found = []
    for name, tp, key in pairs:
        shape = shape_of(name)
        problem = shape.check_tensor_parallel(tp, key) if shape else None
        if problem and problem not in found:
            found.append(problem)
    return found


def used_gpus(config: Mapping[str, Any], stage: str) -> int:
    """GPUs a stage's engines occupy, whatever ``resources.<stage>.gpu`` asks for."""
    have = stage_gpus(config, stage)
    if stage == "difficulty":
        diff = config.get("difficulty") or {}
        if diff.get("engine") != "vllm":
            return 0
        tp = int(diff.get("tensor_parallel_size", 1) or 1)
        return have - have % tp
    if stage == "train":
        train = config.get("train") or {}
        if train.get("backend") != "verl":
            return 0

        return min(have, VerlConfig.from_dict(train.get("verl")).n_gpus_per_node)
    ev = EvaluateConfig.from_dict(config.get("evaluate") or {})
    sizes = [1]
    if ev.policy.engine == "vllm":
        sizes.append(ev.policy.tensor_parallel_size)
    if ev.judge.mode == "serve" and any(b.judge for b in ev.benchmarks) and ev.kind == "paper":
        sizes.append(ev.judge.tensor_parallel_size)
    return min(have, max(sizes))


def idle_gpus(config: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """(stage, idle GPUs, why) for each stage that asks SLURM for GPUs its engines never use."""
    why = {"difficulty": "difficulty.engine hf runs on CPU; vllm uses whole groups of "
                         "difficulty.tensor_parallel_size",
           "train": "train.verl.n_gpus_per_node (the local backend runs on CPU)",
           "evaluate": "the larger of evaluate.policy/judge.tensor_parallel_size share them"}
    out = []
    for stage in ("difficulty", "train", "evaluate"):
        idle = stage_gpus(config, stage) - used_gpus(config, stage)
        if idle > 0:
            out.append((stage, idle, why[stage]))
    return out
