"""Config section ``evaluate``: which benchmarks, how many seeded repeats, the judge endpoint.

``kind: synthetic`` evaluates on local lmms-eval tasks generated over
``data/<name>/eval/<domain>.parquet`` (one benchmark per domain, score = the training reward's
accuracy). ``kind: paper`` runs the tasks named in ``benchmarks`` (default: ours in
``vade/eval/tasks``, scored as each benchmark's official code scores it; ``mathverse_subset`` and
``mathvision_variant`` pick among them); the LLM judge is the ``judge`` block.
average@k: ``repeats`` runs with seeds ``seed, seed+1, ...`` and sampling ``temperature``
(lmms-eval's ``--repeats`` does not aggregate generation tasks, so each repeat is a full run).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vade.config_schema import build, check
from vade.eval.watchdog_config import WatchdogConfig

__all__ = ["MATHVERSE_SUBSETS", "MATHVISION_VARIANTS", "PAPER_BENCHMARKS", "Benchmark", "Companion",
           "EvaluateConfig", "JudgeConfig", "PlanConfig", "PolicyConfig", "paper_benchmarks"]

# Types, ranges and choices of every key: the ``evaluate`` section of
# workflow/schemas/config.schema.yaml (vade.config_schema). The classes below are built from
# checked mappings and check only what the schema cannot say: one key against another.


@dataclass(frozen=True)
class Companion:
    """A named number printed and stored beside a benchmark's table number, never a column of
    its own: another setting of the benchmark (MathVerse's CoT prompt, its own task) or another
    scorer of the same responses (the training reward's verdict on ChartQA)."""

    name: str
    task: str
    metric: str



@dataclass(frozen=True)
class Benchmark:
    """One table column: an lmms-eval task (or group) and the metric that scores it.

    ``scale`` turns the metric into percent (100 for metrics in [0, 1], 1 for ones already in
    percent). A group's score is the item-weighted mean over its subtasks. ``companions``: named
    numbers stored beside it (``Companion``).
    """

    name: str
    task: str
    metric: str
    scale: float = 100.0
    judge: bool = False  # needs the LLM judge endpoint
    items: int | None = None  # items per pass (for `vade evaluate --plan`; None: unknown)
    companions: tuple[Companion, ...] = ()

    @property
    def tasks(self) -> tuple[str, ...]:
        """Every lmms-eval task this column runs (its own, then its companions' new ones)."""
        return tuple(dict.fromkeys([self.task, *(c.task for c in self.companions)]))

    @classmethod
    def from_checked(cls, v: Mapping[str, Any], where: str) -> Benchmark:
        """From an entry of ``evaluate.benchmarks`` the schema has checked."""
        companions = tuple(build(Companion, c) for c in v.get("companions") or ())
        if len({c.name for c in companions}) != len(companions):
            raise ValueError(f"config key '{where}.companions' must name each companion once, "
                             f"got {[c.name for c in companions]}")
        return build(cls, {**v, "companions": companions})


# The paper's five benchmarks (Section 4.1). The three math benchmarks are our own lmms-eval tasks
# (vade/eval/tasks) scored as each benchmark's official code scores it, with the LLM judge and the
# official judge prompts; MathVerse's number is the official primary setting (query_wo), its CoT
# setting (query_cot) a companion. ChartQA and ScienceQA are the reasoning-length variants: the
# number is lmms-eval's official metric on the final \boxed{} answer, the training reward's
# verdict (one answer semantics) a companion. Metrics are means of 0/1 per item (scale 100).
# MathVerse subset (evaluate.mathverse_subset): "testmini", all five versions with a diagram
# (3,940 items: the MathVerse paper's overall score; the default, since the VADE paper names no
# subset), or "vision_only" (788). MathVision variant (evaluate.mathvision_variant): "judge" (the
# default: the paper says it judged all three) or "rule" (mathllm/MATH-V's official code).
# Items per pass (the plan's arithmetic): MathVista testmini 1,000; MathVision testmini 304;
# ScienceQA-IMG test 2,017; ChartQA test 2,500.
MATHVERSE_SUBSETS = {"testmini": ("vade_mathverse_testmini", 3940),
                     "vision_only": ("vade_mathverse_testmini_vision_only", 788)}
REWARD = "reward"  # the companion that scores ChartQA / ScienceQA with the training reward
MATHVISION_VARIANTS = {"judge": ("vade_mathvision_testmini", True),
                       "rule": ("vade_mathvision_testmini_rule", False)}


def paper_benchmarks(mathverse_subset: str = "testmini",
                     mathvision_variant: str = "judge") -> tuple[Benchmark, ...]:
    """The five benchmarks with the chosen MathVerse subset and MathVision variant."""
    verse_task, verse_items = MATHVERSE_SUBSETS[mathverse_subset]
    vision_task, vision_judged = MATHVISION_VARIANTS[mathvision_variant]
    sqa, chart = "vade_scienceqa_img_reasoning", "vade_chartqa_reasoning"
    return (
        Benchmark("MathVista", "vade_mathvista_testmini", "accuracy", 100.0, True, 1000),
        Benchmark("MathVerse", verse_task, "accuracy", 100.0, True, verse_items,
                  (Companion("CoT", f"{verse_task}_cot", "accuracy"),)),
        Benchmark("MathVision", vision_task, "accuracy", 100.0, vision_judged, 304),
        Benchmark("ScienceQA", sqa, "exact_match", 100.0, False, 2017,
                  (Companion(REWARD, sqa, "exact_match_reward"),)),
        Benchmark("ChartQA", chart, "relaxed_overall", 100.0, False, 2500,
                  (Companion(REWARD, chart, "relaxed_overall_reward"),)),
    )


PAPER_BENCHMARKS = paper_benchmarks()


PAPER_RESPONSE_LENGTH = 2048    # max response length in training (paper, Table 4)
SYNTHETIC_RESPONSE_LENGTH = 64  # vade.train.config's default max_new_tokens


@dataclass(frozen=True)
class JudgeConfig:
    """The OpenAI-compatible judge endpoint (vLLM serving Qwen2.5-72B-Instruct in the paper).

    mode: ``none`` (no judge: judge benchmarks are refused), ``external`` (an endpoint that
    already runs at ``url``), ``serve`` (``vade.eval.judge.serve`` starts vLLM; a workflow rule
    owns its lifetime).
    """

    mode: str = "none"
    url: str | None = None            # base URL, e.g. http://host:8000/v1
    model: str = "Qwen/Qwen2.5-72B-Instruct"  # what vLLM loads (serve)
    served_name: str = "judge"        # MODEL_VERSION the tasks send (serve: made unique per job)
    api_key_env: str = "OPENAI_API_KEY"  # the variable that holds the key (never the key itself)
    host: str = "127.0.0.1"
    port: int | None = None           # serve: None = a free port chosen at run time
    tensor_parallel_size: int = 4
    gpu_memory_utilization: float = 0.55  # serve: vLLM's share of each GPU (72B bf16 TP4: 36 GB
    #                                       weights + KV cache on an 80 GB GPU)
    extra_args: tuple[str, ...] = ()
    command: tuple[str, ...] = ()     # full server command line instead of vLLM's (serve);
    #                                   "{port}" and "{served_name}" are filled in
    ready_timeout_s: int = 1800
    max_error_fraction: float = 0.02  # failed or empty judge calls above which a job scores nothing
    watchdog: Any = None              # evaluate.judge.watchdog (vade.eval.watchdog.WatchdogConfig)

    @classmethod
    def from_dict(cls, v: Mapping[str, Any] | None) -> JudgeConfig:
        """``evaluate.judge``, checked."""
        check(v, "evaluate.judge")
        return cls.from_checked(v or {})

    @classmethod
    def from_checked(cls, v: Mapping[str, Any]) -> JudgeConfig:
        if v.get("mode") == "external" and not v.get("url"):
            raise ValueError("config key 'evaluate.judge.url' is required when "
                             "evaluate.judge.mode is external")
        return build(cls, {**v, "watchdog": WatchdogConfig.from_checked(v.get("watchdog"))})

    @property
    def label(self) -> str:
        """The judge as printed beside every judged number: the model vLLM loads (serve), the
        model name sent to the endpoint (external; set served_name to e.g. gpt-4o-2024-08-06)."""
        return self.model if self.mode == "serve" else self.served_name

    @property
    def base_url(self) -> str:
        if self.url:
            return self.url
        if self.port is None:
            raise ValueError("evaluate.judge.port is chosen at run time (vade.eval.judge.for_job)")
        return f"http://{self.host}:{self.port}/v1"


@dataclass(frozen=True)
class PolicyConfig:
    """How lmms-eval runs the evaluated model (``evaluate.policy``).

    engine ``hf``: lmms-eval's ``qwen2_5_vl`` (transformers, one request at a time; the CPU
    demo). engine ``vllm``: lmms-eval's ``vllm`` model (vLLM in the job's process, continuous
    batching), on ``tensor_parallel_size`` GPUs with at most ``gpu_memory_utilization`` of each,
    which together with the judge's share must leave the GPUs' memory unshared.
    """

    engine: str = "hf"
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.35   # 7B bf16 TP4: 4 GB weights + KV cache per 80 GB GPU
    max_model_len: int | None = None       # None: prompt budget (8192, the paper) + output limit
    batch_size: int = 256                  # vllm: requests per vLLM call

# Output tokens per second of one evaluation job's policy, all requests together, assumed by the
# plan when evaluate.plan.tokens_per_s is null: vLLM with continuous batching of a 7B model on
# 4 x 80 GB (a conservative fraction of its batched decode rate), and transformers at batch 1.
DEFAULT_TOKENS_PER_S = {"vllm": 2000.0, "hf": 25.0}


@dataclass(frozen=True)
class PlanConfig:
    """The arithmetic of ``vade evaluate --plan`` (``evaluate.plan``): every item is assumed to
    use the whole output limit (the worst case, which the job's runtime must survive)."""

    tokens_per_s: float | None = None  # None: DEFAULT_TOKENS_PER_S[policy.engine]
    overhead_min: float | None = None  # per job: model loads, judge start, judging tail, writing
    #                                    (None: 45 with a judge served in the job, else 5)


@dataclass(frozen=True)
class EvaluateConfig:
    kind: str = "synthetic"              # synthetic | paper
    repeats: int = 4                     # k of average@k
    seed: int = 0                        # repeat i uses seed + i
    temperature: float = 0.6             # sampling temperature of the repeats
    top_p: float = 1.0
    max_new_tokens: int | None = None    # every benchmark's output limit (None: see output_tokens)
    batch_size: int = 1
    threads: int = 1                     # torch CPU threads (0: torch's default, all cores)
    limit: int | None = None             # items per task (None: all)
    device_map: str = "cpu"              # cpu | auto | cuda...
    min_pixels: int | None = None        # image resize limits (None: see pixels_for)
    max_pixels: int | None = None
    model_args: Mapping[str, Any] = field(default_factory=dict)  # extra qwen2_5_vl args
    mathverse_subset: str = "testmini"   # testmini (3,940) | vision_only (788)
    mathvision_variant: str = "judge"    # judge (the paper's wording) | rule (official code)
    benchmarks: tuple[Benchmark, ...] = PAPER_BENCHMARKS
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    plan: PlanConfig = field(default_factory=PlanConfig)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> EvaluateConfig:
        """The ``evaluate`` section: checked against the schema, then the rules between keys."""
        check(values, "evaluate")
        v = dict(values)
        v["model_args"] = dict(v.get("model_args", {}))
        bad = {"pretrained", "device", "device_map"} & set(v["model_args"])
        if bad:
            raise ValueError(f"config key 'evaluate.model_args.{min(bad)}' is set by vade "
                             "evaluate (evaluate.device_map, the checkpoint)")
        if "benchmarks" in v and ({"mathverse_subset", "mathvision_variant"} & set(v)):
            raise ValueError("evaluate.mathverse_subset / mathvision_variant choose tasks of the "
                             "default benchmarks: set them or evaluate.benchmarks, not both")
        if "benchmarks" in v:
            parsed = tuple(Benchmark.from_checked(x, f"evaluate.benchmarks[{i}]")
                           for i, x in enumerate(v["benchmarks"]))
            if len({x.name for x in parsed}) != len(parsed):
                raise ValueError("config key 'evaluate.benchmarks' must name each benchmark "
                                 f"once, got {[x.name for x in parsed]}")
            v["benchmarks"] = parsed
        else:
            v["benchmarks"] = paper_benchmarks(v.get("mathverse_subset", "testmini"),
                                               v.get("mathvision_variant", "judge"))
        for key, make in (("judge", JudgeConfig.from_checked),
                          ("policy", lambda p: build(PolicyConfig, p)),
                          ("plan", lambda p: build(PlanConfig, p))):
            if key in v:
                v[key] = make(v[key] or {})
        out = build(cls, v)
        shared = out.judge.gpu_memory_utilization + out.policy.gpu_memory_utilization
        if out.judge.mode == "serve" and out.policy.engine == "vllm" and shared > 0.95:
            raise ValueError(
                f"evaluate.judge.gpu_memory_utilization ({out.judge.gpu_memory_utilization}) + "
                f"evaluate.policy.gpu_memory_utilization ({out.policy.gpu_memory_utilization}) "
                f"= {shared:.2f} > 0.95: judge and policy share the job's GPUs and would overlap")
        if out.kind == "synthetic" and "benchmarks" in values:
            raise ValueError("evaluate.benchmarks applies to kind: paper only (synthetic "
                             "benchmarks are the held-out sets' domains)")
        if out.min_pixels and out.max_pixels and out.min_pixels > out.max_pixels:
            raise ValueError(f"evaluate.min_pixels ({out.min_pixels}) exceeds evaluate.max_pixels "
                             f"({out.max_pixels})")
        if out.repeats > 1 and out.temperature == 0:
            raise ValueError("evaluate.temperature must be > 0 when evaluate.repeats > 1 "
                             "(greedy repeats are identical)")
        return out

    @property
    def output_tokens(self) -> int:
        """The one output limit of every benchmark (task YAMLs' own limits are overridden through
        ``gen_kwargs``): ``max_new_tokens``, else the training response length of the kind
        (paper: 2048, Table 4 of the paper; synthetic: the local trainer's 64)."""
        if self.max_new_tokens is not None:
            return self.max_new_tokens
        return PAPER_RESPONSE_LENGTH if self.kind == "paper" else SYNTHETIC_RESPONSE_LENGTH
