"""Every benchmark's task and dataset loaded and counted before the judge or the policy starts.

Why: lmms-eval loads a task's dataset inside ``simple_evaluate``, after the policy model is
loaded, and a paper job starts a 72B judge before that: a missing dataset, a task name typo or a
hub login demanded by a task YAML surfaced only after both models were up (tens of minutes of
four GPUs). Here the same ``TaskManager`` and ``get_task_dict`` lmms-eval uses build every task
first (offline jobs read the prefetched cache), and a task that fails to load or holds no item is
an error naming the benchmark and the key, in seconds. The manager is handed on to the
evaluation, so tasks are indexed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vade.eval.config import Benchmark
from vade.eval.official import NEEDED_BY, official_text

__all__ = ["preload_tasks"]


def _leaves(node: Any) -> list[tuple[str, Any]]:
    """(name, Task) of a (nested) task dict: a group maps to a dict of its subtasks."""
    out = []
    for key, value in node.items():
        if isinstance(value, dict):
            out += _leaves(value)
        else:
            out.append((getattr(key, "group_name", None) or str(key), value))
    return out


def preload_tasks(benchmarks: Sequence[Benchmark], manager: Any) -> dict[str, int]:
    """Items per benchmark (all its tasks' evaluation docs); ValueError naming the benchmark
    when its task is unknown to ``manager``, its dataset does not load, or it has no item."""
    from lmms_eval.tasks import get_task_dict  # lazy: lmms-eval: the eval envs only

    counts: dict[str, int] = {}
    for i, bench in enumerate(benchmarks):
        for task_name in bench.tasks:  # its own task, then its companions' (MathVerse's CoT)
            where = f"benchmark {bench.name} (evaluate.benchmarks[{i}]: task {task_name!r})"
            if task_name not in manager.all_tasks:
                raise ValueError(f"{where}: lmms-eval knows no task or group of that name")
            try:
                tasks = _leaves(get_task_dict([task_name], manager))
            except Exception as exc:  # noqa: BLE001  (dataset, hub, YAML: every failure named)
                raise ValueError(f"{where}: its dataset did not load ({type(exc).__name__}: "
                                 f"{str(exc)[:300]}); stage it with `vade prefetch` and run with "
                                 f"HF_HOME at cluster.cache_dir (the workflow does)") from None
            empty = [name for name, task in tasks if len(task.eval_docs) == 0]
            if not tasks or empty:
                raise ValueError(f"{where}: no item to evaluate in {empty or 'it'}")
            for name, needers in NEEDED_BY.items():  # its official judge prompts, before a load
                if task_name in needers:
                    try:
                        official_text(name)
                    except (OSError, ValueError) as exc:
                        raise ValueError(f"{where}: {exc}") from None
            if task_name == bench.task:
                counts[bench.name] = sum(len(task.eval_docs) for _, task in tasks)
    return counts
