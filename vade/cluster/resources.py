"""GPUs asked of SLURM (``resources.<stage>.gpu``) against what each stage's engines will use.

Why here, at config validation: a job given fewer GPUs than its tensor-parallel size queues,
loads, and only then fails inside vLLM or Ray, hours after submission. The workflow calls
``check_gpu_resources`` when it starts (every run and dry run), and ``vade plan`` and
``vade preflight`` call it too, so the refusal names the two keys that disagree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

__all__ = ["allocated_cpus", "check_gpu_resources", "idle_gpus", "stage_gpus", "used_gpus"]


def allocated_cpus(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(CPUs this job may use, where that came from). Ray counts every CPU of the node unless
    told (verl's ppo_trainer.yaml says to set ``ray_init.num_cpus`` under SLURM); a 16-CPU
    allocation on a 128-CPU node would otherwise get 128 worker slots. From SLURM's own record
    of the job: its variables, and where a job step sets none of the per-task/per-node ones
    (SLURM 22.05 sets neither SLURM_CPUS_PER_TASK nor SLURM_JOB_CPUS_PER_NODE in a step),
    ``scontrol show job``; the process's CPU affinity only outside SLURM (it is the allocation
    only where cgroups confine cores)."""
    env = os.environ if environ is None else environ
    for key in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE"):
        m = re.match(r"^(\d+)", env.get(key, "").strip())  # "16", "16(x2)", "8,4": this node's
        if m and int(m.group(1)) > 0:
            return int(m.group(1)), key
    job = env.get("SLURM_JOB_ID", "").strip()
    if job.isdigit():
        cpus = _scontrol_cpus(job, env)
        if cpus:
            return cpus, f"scontrol show job {job} (NumCPUs / NumNodes)"
    return len(os.sched_getaffinity(0)), "os.sched_getaffinity (the CPUs this process may use)"


def _scontrol_cpus(job: str, env: Mapping[str, str]) -> int | None:
    """CPUs per node of a job from ``scontrol show job -o``; None when it cannot say."""
    exe = shutil.which("scontrol", path=env.get("PATH"))
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "show", "job", "-o", job], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    cpus, nodes = re.search(r"\bNumCPUs=(\d+)", out), re.search(r"\bNumNodes=(\d+)", out)
    if not cpus or int(cpus.group(1)) < 1:
        return None
    return int(cpus.group(1)) // max(1, int(nodes.group(1)) if nodes else 1)


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
    from vade.cluster.models import shape_of
    from vade.grid import cells as grid_cells

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
    from vade.eval.config import EvaluateConfig

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
        from vade.train.verl.config import VerlConfig

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
