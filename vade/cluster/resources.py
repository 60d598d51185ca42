"""GPUs asked of SLURM (``resources.<stage>.gpu``) against what each stage's engines will use.

Why here, at config validation: a job given fewer GPUs than its tensor-parallel size queues,
loads, and only then fails inside vLLM or Ray, hours after submission. The workflow calls
``check_gpu_resources`` when it starts (every run and dry run), and ``vade plan`` and
``vade preflight`` call it too, so the refusal names the two keys that disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["allocated_cpus", "check_gpu_resources", "stage_gpus"]


def allocated_cpus(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(CPUs this job may use, where that came from). Ray counts every CPU of the node unless
    told (verl's ppo_trainer.yaml says to set ``ray_init.num_cpus`` under SLURM); a 16-CPU
    allocation on a 128-CPU node would otherwise get 128 worker slots."""
    import os
    import re

    env = os.environ if environ is None else environ
    per_task = env.get("SLURM_CPUS_PER_TASK", "").strip()
    if per_task.isdigit() and int(per_task) > 0:
        return int(per_task), "SLURM_CPUS_PER_TASK"
    per_node = env.get("SLURM_JOB_CPUS_PER_NODE", "").strip()
    m = re.match(r"^(\d+)", per_node)   # "16", "16(x2)" or "8,4": this (first) node's count
    if m and int(m.group(1)) > 0:
        return int(m.group(1)), "SLURM_JOB_CPUS_PER_NODE"
    return len(os.sched_getaffinity(0)), "os.sched_getaffinity (the CPUs this process may use)"


def stage_gpus(config: Mapping[str, Any], stage: str) -> int:
    """``resources.<stage>.gpu`` (0 when unset: a CPU job)."""
    return int(((config.get("resources") or {}).get(stage) or {}).get("gpu") or 0)


def _need(errors: list[str], stage: str, have: int, need: int, key: str, why: str) -> None:
    if have < need:
        errors.append(f"resources.{stage}.gpu = {have} but {key} = {need} ({why}): set "
                      f"resources.{stage}.gpu >= {need} or lower {key}")


def check_gpu_resources(config: Mapping[str, Any]) -> None:
    """Raise ValueError naming every ``resources.<stage>.gpu`` below what its stage uses."""
    from vade.eval.config import EvaluateConfig

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
        from vade.train.verl.config import VerlConfig

        verl = VerlConfig.from_dict(train.get("verl"))
        if verl.nnodes != 1:
            errors.append(f"train.verl.nnodes = {verl.nnodes}: a training job is one node "
                          "(resources.train), so set train.verl.nnodes: 1")
        _need(errors, "train", stage_gpus(config, "train"), verl.n_gpus_per_node,
              "train.verl.n_gpus_per_node", "Ray places verl's workers on that many GPUs")
    if (config.get("difficulty") or {}).get("engine") == "vllm":
        _need(errors, "difficulty", stage_gpus(config, "difficulty"), 1, "difficulty.engine",
              "vllm needs a GPU")
    if errors:
        raise ValueError("; ".join(errors))
