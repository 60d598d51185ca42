"""Run lmms-eval k times on one checkpoint and turn its results into tidy ``EvalRow``s.

average@k needs k independent sampling runs: lmms-eval's ``--repeats`` does not aggregate
generation tasks, so ``simple_evaluate`` is called k times (it loads the model each time: its
``evaluate`` frees the model's modules at the end, so an instance cannot be reused) with
seeds ``seed + i`` (python, numpy, torch) and a sampling temperature. A benchmark may be an
lmms-eval group (MathVerse's vision subset): its score is the item-weighted mean of its
subtasks' metric. A metric lmms-eval does not report, or one outside [0, 100] after scaling,
is an error naming the benchmark, never a silent zero.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from vade.eval.config import Benchmark, EvaluateConfig
from vade.eval.pixels import limits_env
from vade.eval.store import EvalRow
from vade.grid import parse_run_id

__all__ = ["Target", "benchmark_score", "command_line", "evaluate_checkpoint", "gen_kwargs",
           "lmms_eval_call", "pixels_for", "policy_model", "target_for"]

MODEL = "qwen2_5_vl"  # lmms-eval's Qwen2.5-VL backend (chat interface, transformers)
VLLM_MODEL = "vllm"   # lmms-eval's vLLM backend (chat interface)


@dataclass(frozen=True)
class Target:
    """What is evaluated: the checkpoint and the run it belongs to."""

    run_id: str
    model: str
    algorithm: str | None
    method: str
    seed: int | None
    checkpoint: str


def target_for(run_id: str, checkpoint: str) -> Target:
    """Parse ``<model>-<algorithm>-<method>-s<seed>`` or ``<model>-base``."""
    key = parse_run_id(run_id)
    return Target(run_id, key.model, key.algorithm or None, key.method,
                  None if key.seed < 0 else key.seed, checkpoint)


def _metric(values: Mapping[str, Any], metric: str, task: str) -> float:
    for key in (f"{metric},none", metric):
        if key in values:
            v = values[key]
            break
    else:
        found = sorted(k for k in values if "," in k and not k.endswith("_stderr,none"))
        matches = [k for k in found if k.split(",")[0] == metric]
        if not matches:
            raise ValueError(f"lmms-eval reported no metric {metric!r} for task {task} "
                             f"(it reported {found})")
        v = values[matches[0]]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"metric {metric!r} of task {task} is {v!r}, not a number")  # noqa: TRY004
    return float(v)


def benchmark_score(results: Mapping[str, Any], bench: Benchmark) -> tuple[float, int]:
    """(score in percent, items) of one benchmark in one ``simple_evaluate`` result."""
    per_task = results.get("results", {})
    groups = results.get("group_subtasks", {})
    tasks = list(groups.get(bench.task) or [bench.task])
    values, counts = [], []
    for task in tasks:
        if task not in per_task:
            raise ValueError(f"benchmark {bench.name}: lmms-eval returned no result for task "
                             f"{task}")
        values.append(_metric(per_task[task], bench.metric, task))
        n = results.get("n-samples", {}).get(task, {})
        counts.append(int(n.get("effective", n.get("original", 0))))
    total = sum(counts)
    if total == 0:
        raise ValueError(f"benchmark {bench.name}: no items were evaluated")
    score = sum(v * n for v, n in zip(values, counts)) / total * bench.scale
    if not math.isfinite(score) or not -1e-9 <= score <= 100 + 1e-9:
        raise ValueError(f"benchmark {bench.name}: score {score} is not a percentage; check "
                         f"evaluate.benchmarks scale ({bench.scale}) for metric {bench.metric}")
    return score, total


def companion_scores(results: Mapping[str, Any], bench: Benchmark) -> str | None:
    """The benchmark's companions' numbers in one result, as the JSON stored beside its score
    (``{"<name>": {"score": percent, "task": ..., "metric": ...}}``); None without companions."""
    if not bench.companions:
        return None
    out = {}
    for c in bench.companions:
        score, _ = benchmark_score(results, dataclasses.replace(
            bench, name=f"{bench.name} ({c.name})", task=c.task, metric=c.metric, companions=()))
        out[c.name] = {"score": score, "task": c.task, "metric": c.metric}
    return json.dumps(out, sort_keys=True)


# Qwen2.5-VL's image processor limits (preprocessor_config.json of the Instruct models on the hub),
# which verl 0.7.1 keeps in training (it never resizes): what a trained checkpoint saw.
QWEN_MIN_PIXELS = 56 * 56
QWEN_MAX_PIXELS = 28 * 28 * 16384


def checkpoint_pixels(checkpoint: str) -> dict[str, int]:
    """min/max_pixels of a local checkpoint's image processor, so lmms-eval (which otherwise
    imposes its own, 256*28*28 .. 1605632) resizes images as the model saw them in training."""
    path = Path(checkpoint) / "preprocessor_config.json"
    if not path.is_file():
        return {}
    try:
        pre = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    size = pre.get("size") or {}
    found = {"min_pixels": pre.get("min_pixels", size.get("shortest_edge")),
             "max_pixels": pre.get("max_pixels", size.get("longest_edge"))}
    return {k: int(v) for k, v in found.items() if isinstance(v, (int, float))}


def pixels_for(cfg: EvaluateConfig, checkpoint: str) -> dict[str, int]:
    """The image limits of one evaluation: ``evaluate.min/max_pixels`` when set, else the
    checkpoint's saved processor, else (a hub id: a base model) Qwen2.5-VL's own limits. A base
    model is thereby evaluated at the same limits as the checkpoints trained from it, never at
    lmms-eval's smaller default."""
    saved = checkpoint_pixels(checkpoint)
    return {"min_pixels": cfg.min_pixels or saved.get("min_pixels", QWEN_MIN_PIXELS),
            "max_pixels": cfg.max_pixels or saved.get("max_pixels", QWEN_MAX_PIXELS)}


def gen_kwargs(cfg: EvaluateConfig, seed: int | None = None) -> str:
    """lmms-eval's ``gen_kwargs``: they override every task YAML's generation settings, so one
    output limit and one temperature hold for all benchmarks. ``seed`` goes to each request (the
    vLLM backend fixes its engine seed, so repeats differ only through it)."""
    parts = [f"max_new_tokens={cfg.output_tokens}", f"temperature={cfg.temperature}"]
    sampling = [f"top_p={cfg.top_p}", "do_sample=True"]
    parts += sampling if cfg.temperature > 0 else ["do_sample=False"]
    if seed is not None:
        parts.append(f"seed={seed}")
    return ",".join(parts)


# The prompt budget of a served policy (the paper trains with prompts up to 8192 tokens, Table 4):
# vLLM's max_model_len = this + the output limit, unless evaluate.policy.max_model_len is set.
PROMPT_BUDGET = 8192


def policy_model(cfg: EvaluateConfig, target: Target) -> tuple[str, dict[str, Any]]:
    """lmms-eval's model name and ``model_args`` for the evaluated checkpoint.

    ``vllm``: lmms-eval's vLLM model in this process, on ``policy.tensor_parallel_size`` GPUs
    with ``policy.gpu_memory_utilization`` of each (the judge has its own share). Its
    ``max_new_tokens`` is set to the output limit because lmms-eval uses the larger of it and
    the request's (its default, 4096, would double the paper's 2048). Images are resized to the
    same ``max_pixels`` for base and trained models. ``hf``: transformers, batch 1.
    """
    pixels = pixels_for(cfg, target.checkpoint)
    if cfg.policy.engine == "vllm":
        p = cfg.policy
        return VLLM_MODEL, {
            "model": target.checkpoint, "tensor_parallel_size": p.tensor_parallel_size,
            "gpu_memory_utilization": p.gpu_memory_utilization,
            "max_model_len": p.max_model_len or PROMPT_BUDGET + cfg.output_tokens,
            "max_new_tokens": cfg.output_tokens, "max_pixels": pixels["max_pixels"],
            **cfg.model_args}
    return MODEL, {"pretrained": target.checkpoint, "device_map": cfg.device_map, **pixels,
                   **cfg.model_args}


def lmms_eval_call(cfg: EvaluateConfig, target: Target, benchmarks: Sequence[Benchmark],
                   repeat: int) -> dict[str, Any]:
    """The keyword arguments of ``simple_evaluate`` for one repeat (no task manager).

    No ``device`` for the vLLM model: lmms-eval hands a non-None ``device`` to the model, its
    vLLM model passes it on to ``vllm.LLM``, and vLLM 0.12's ``EngineArgs`` has no such
    argument (``TypeError``: every evaluation job with ``policy.engine: vllm`` failed at start;
    found with the real vLLM on CPU, ``tests/engines/test_vllm_eval.py``)."""
    model, args = policy_model(cfg, target)
    seed = cfg.seed + repeat
    vllm = cfg.policy.engine == "vllm"
    return {"model": model, "model_args": ",".join(f"{k}={v}" for k, v in args.items()),
            "tasks": list(dict.fromkeys(t for b in benchmarks for t in b.tasks)),
            "batch_size": cfg.policy.batch_size if vllm else cfg.batch_size,
            "limit": cfg.limit, "gen_kwargs": gen_kwargs(cfg, seed if vllm else None),
            "random_seed": seed, "numpy_random_seed": seed, "torch_random_seed": seed,
            "fewshot_random_seed": seed, "log_samples": False,
            "device": None if vllm else "cpu" if cfg.device_map == "cpu" else "cuda",
            "verbosity": "WARNING"}


def command_line(call: Mapping[str, Any]) -> list[str]:
    """The ``python -m lmms_eval`` command equivalent to ``call`` (written to the job's log)."""
    return ["python", "-m", "lmms_eval", "--model", call["model"], "--model_args",
            call["model_args"], "--tasks", ",".join(call["tasks"]), "--batch_size",
            str(call["batch_size"]), "--gen_kwargs", call["gen_kwargs"], "--seed",
            ",".join(str(call[k]) for k in ("random_seed", "numpy_random_seed",
                                            "torch_random_seed", "fewshot_random_seed")),
            *(["--device", call["device"]] if call["device"] else []),
            *(["--limit", str(call["limit"])] if call["limit"] else [])]


def write_samples(path: str | Path, repeat: int, result: Mapping[str, Any]) -> None:
    """Append lmms-eval's per-sample records of one repeat to ``path`` (JSON lines: task,
    repeat, then lmms-eval's own fields: response, target, judged scores), so a judge decision
    or an extraction can be read afterwards."""
    with open(path, "a", encoding="utf-8") as f:
        for task, samples in sorted((result.get("samples") or {}).items()):
            f.writelines(json.dumps({"task": task, "repeat": repeat, **sample}, default=str,
                                    ensure_ascii=False) + "\n" for sample in samples)


def evaluate_checkpoint(cfg: EvaluateConfig, target: Target, benchmarks: Sequence[Benchmark],
                        include_path: Sequence[str], include_defaults: bool,
                        repeats: Sequence[int] | None = None,
                        after_repeat: Callable[[int], None] | None = None,
                        samples_log: str | Path | None = None,
                        manager: Any = None) -> list[EvalRow]:
    """Seeded lmms-eval runs of ``benchmarks`` on ``target.checkpoint`` (``repeats``: which of
    the k, default all): one row per (benchmark, repeat). ``after_repeat(repeat)`` runs after
    each repeat, before its rows count (the judge's liveness and error check); ``samples_log``
    keeps every sample (``write_samples``); ``manager``: lmms-eval's TaskManager when the caller
    built one already (``vade.eval.preload``)."""
    from lmms_eval.evaluator import simple_evaluate  # lazy: lmms-eval: the eval envs only
    from lmms_eval.tasks import TaskManager  # lazy: lmms-eval: the eval envs only

    model = VLLM_MODEL if cfg.policy.engine == "vllm" else MODEL
    manager = manager or TaskManager("WARNING", include_path=list(include_path) or None,
                                     include_defaults=include_defaults, model_name=model)
    todo = list(range(cfg.repeats)) if repeats is None else list(repeats)
    # every engine gets images inside the same limits: our task hooks resize (vade.eval.pixels)
    os.environ.update(limits_env(pixels_for(cfg, target.checkpoint)))
    rows: list[EvalRow] = []
    for repeat in tqdm(todo, desc=f"evaluate {target.run_id}", unit="repeat"):
        call = lmms_eval_call(cfg, target, benchmarks, repeat)
        call["log_samples"] = samples_log is not None
        print("repeat", repeat, ":", " ".join(command_line(call)), flush=True)
        result = simple_evaluate(task_manager=manager, **call)
        if result is None:
            raise RuntimeError("lmms-eval returned no results (not the main process?)")
        if samples_log is not None:
            write_samples(samples_log, repeat, result)
        if after_repeat is not None:
            after_repeat(repeat)
        for bench in benchmarks:
            score, n = benchmark_score(result, bench)
            rows.append(EvalRow(target.run_id, target.model, target.algorithm, target.method,
                                target.seed, bench.name, repeat, call["random_seed"], score, n,
                                target.checkpoint, bench.task, bench.metric,
                                cfg.judge.label if bench.judge else None,
                                companion_scores(result, bench)))
    return rows
