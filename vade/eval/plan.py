"""What one checkpoint's evaluation costs, and whether each of its jobs fits its time limit.

Evaluation runs one job per (checkpoint, repeat) (``workflow/rules/evaluate.smk``). A job's
worst case is every item generating the whole output limit: ``items x max_new_tokens`` output
tokens at the policy's throughput (``evaluate.plan.tokens_per_s``, all requests together), plus
a fixed overhead (model loads, the judge's start, the judging tail). ``vade evaluate --plan``
prints this per checkpoint; every evaluation job checks it before loading anything and refuses a
plan that cannot finish inside the rule's runtime, naming the knob that would make it fit,
rather than being killed by SLURM hours later with nothing written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vade.eval.config import DEFAULT_TOKENS_PER_S, Benchmark, EvaluateConfig

__all__ = ["EvalPlan", "PlanError", "make_plan"]


class PlanError(ValueError):
    """The evaluation plan cannot finish inside the job's runtime."""


@dataclass(frozen=True)
class EvalPlan:
    """Per-checkpoint arithmetic of one evaluation config (see module doc)."""

    items: tuple[tuple[str, int], ...]   # (benchmark, items per repeat)
    repeats: int
    max_new_tokens: int
    tokens_per_s: float
    overhead_min: float
    gpus: int                           # per job; 0: a CPU job (its hours count as one device)
    runtime_min: float | None           # the rule's runtime per job (None: not checked)

    @property
    def items_per_repeat(self) -> int:
        return sum(n for _, n in self.items)

    @property
    def tokens_per_repeat(self) -> int:
        return self.items_per_repeat * self.max_new_tokens

    @property
    def minutes_per_job(self) -> float:
        """Worst-case wall-clock minutes of one (checkpoint, repeat) job."""
        return self.overhead_min + self.tokens_per_repeat / self.tokens_per_s / 60.0

    @property
    def gpu_hours_per_checkpoint(self) -> float:
        return self.repeats * self.minutes_per_job / 60.0 * max(1, self.gpus)

    def fitting_max_new_tokens(self) -> int:
        """The largest output limit with which a job still fits ``runtime_min`` (0: none)."""
        if self.runtime_min is None:
            return self.max_new_tokens
        budget_s = (self.runtime_min - self.overhead_min) * 60.0
        return max(0, math.floor(budget_s * self.tokens_per_s / max(1, self.items_per_repeat)))

    def lines(self) -> list[str]:
        """The plan as text: one line per benchmark, then the totals."""
        out = [(f"evaluation plan per checkpoint: {self.repeats} repeats (one job each), "
                f"max_new_tokens {self.max_new_tokens}, {self.tokens_per_s:g} output tokens/s "
                f"per job, {self.overhead_min:g} min overhead per job, {self.gpus} GPUs per job")]
        out += [f"  {name:<12} {n:>7,} items x {self.max_new_tokens} tokens = "
                f"{n * self.max_new_tokens:>13,} tokens per repeat" for name, n in self.items]
        out.append(f"  total        {self.items_per_repeat:>7,} items x {self.repeats} repeats x "
                   f"{self.max_new_tokens} tokens = "
                   f"{self.tokens_per_repeat * self.repeats:,} tokens (worst case)")
        limit = "" if self.runtime_min is None else f" (runtime {self.runtime_min:g} min)"
        unit = "GPU-hours" if self.gpus else "CPU job-hours"
        out.append(f"  per job: {self.minutes_per_job:.1f} min{limit}; per checkpoint: "
                   f"{self.gpu_hours_per_checkpoint:.1f} {unit}")
        return out

    def check(self) -> None:
        """Raise PlanError, naming the knobs, when one job cannot finish inside its runtime."""
        if self.runtime_min is None or self.minutes_per_job <= self.runtime_min:
            return
        fit = self.fitting_max_new_tokens()
        hint = (f"evaluate.max_new_tokens <= {fit} would fit" if fit > 0 else
                "no output limit fits")
        raise PlanError(
            f"evaluation plan cannot finish: one (checkpoint, repeat) job needs up to "
            f"{self.minutes_per_job:.0f} min ({self.items_per_repeat:,} items x "
            f"{self.max_new_tokens} tokens at {self.tokens_per_s:g} tokens/s + "
            f"{self.overhead_min:g} min) but resources.evaluate.runtime is "
            f"{self.runtime_min:g} min: raise resources.evaluate.runtime, lower "
            f"evaluate.max_new_tokens ({hint}) or evaluate.limit, or serve the policy faster "
            f"(evaluate.policy.engine: vllm; evaluate.plan.tokens_per_s is the assumed rate)")


def _items(bench: Benchmark, index: int, limit: int | None) -> int:
    if bench.items is None:
        raise PlanError(f"evaluate.benchmarks[{index}].items is not set: the plan needs the "
                        f"number of items of {bench.name} ({bench.task})")
    return bench.items if limit is None else min(bench.items, limit)


def make_plan(cfg: EvaluateConfig, *, runtime_min: float | None, gpus: int,
              benchmarks: tuple[Benchmark, ...] | None = None) -> EvalPlan:
    """The plan of ``cfg`` (``benchmarks`` overrides ``cfg.benchmarks``: the synthetic sets).

    ``evaluate.limit`` caps each task; a group (MathVerse) is counted as capped once, which
    underestimates it: the plan is meant for full runs."""
    benches = cfg.benchmarks if benchmarks is None else benchmarks
    # a companion with a task of its own (MathVerse's CoT setting) is another generation pass
    items = tuple((label, _items(b, i, cfg.limit)) for i, b in enumerate(benches)
                  for label in [b.name, *(f"{b.name} ({c.name})" for c in b.companions
                                          if c.task != b.task)])
    tps = cfg.plan.tokens_per_s or DEFAULT_TOKENS_PER_S[cfg.policy.engine]
    overhead = cfg.plan.overhead_min
    if overhead is None:
        overhead = 45.0 if cfg.judge.mode == "serve" else 5.0
    return EvalPlan(items, cfg.repeats, cfg.output_tokens, tps, overhead, max(0, gpus),
                    runtime_min)
