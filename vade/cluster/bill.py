"""The whole grid's bill before anything is queued: GPU-hours per stage and in total.

Why: ``vade evaluate --plan`` priced one checkpoint's evaluation, but a user deciding whether to
submit the paper grid needs the initial rollouts, every training cell and every evaluation
together, and needs to see which numbers are guesses. Each line is worst-case arithmetic (every
response at its length limit, DAPO at its rollout cap) over the config's own sizes; every rate it
divides by is named with its source (``ClusterConfig.plan``). ``vade plan`` prints it and every
dry run logs it (``workflow/rules/common.smk``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vade import methods
from vade.cluster.assets import missing_pins
from vade.cluster.disk import disk_warnings, runs_checkpoint_gb
from vade.cluster.memory import DEFAULT_GPU_GIB, check_layout, layout_of
from vade.cluster.prompt_length import (
    KEY,
    PADDING_SLACK,
    Longest,
    longest_prompt,
    prompt_means,
    too_short,
)
from vade.cluster.resources import check_gpu_resources, idle_gpus, stage_gpus, used_gpus
from vade.data.config import data_config_from_mapping
from vade.eval.config import Benchmark, EvaluateConfig
from vade.eval.plan import make_plan
from vade.grid import Cell, run_config
from vade.grid import cells as grid_cells
from vade.job.config import ClusterConfig
from vade.job.revisions import resolve_command
from vade.train.config import TrainConfig

__all__ = ["Bill", "Line", "make_bill", "pin_warnings", "split_rows"]


@dataclass(frozen=True)
class Line:
    """One priced job kind: ``jobs`` jobs of ``hours`` each on ``gpus`` GPUs."""

    stage: str
    what: str
    jobs: int
    hours: float
    gpus: int
    runtime_h: float | None = None   # the stage's resources.<stage>.runtime, in hours
    submissions: int = 1             # per job: SLURM submissions it needs (resumes between)
    note: str = ""                   # why it needs them, or that it cannot finish

    @property
    def gpu_hours(self) -> float:
        return self.jobs * self.hours * self.gpus


@dataclass(frozen=True)
class Bill:
    name: str
    lines: tuple[Line, ...]
    assumptions: tuple[tuple[str, str, str], ...]   # (name, value, source)
    warnings: tuple[str, ...] = ()                  # idle GPUs, layouts that do not fit

    def stage_total(self, stage: str) -> float:
        return sum(x.gpu_hours for x in self.lines if x.stage == stage)

    def retries(self, stage: str) -> int:
        """Snakemake retries a stage's jobs need to finish unattended: its most submissions,
        less the first (a job that checkpoints and stops before its limit ends as failed, and
        the retry resumes it)."""
        return max((x.submissions - 1 for x in self.lines if x.stage == stage), default=0)

    @property
    def total(self) -> float:
        return sum(x.gpu_hours for x in self.lines)

    def text(self) -> str:
        billed = [x for x in self.lines if x.gpus]
        if not billed:
            return (f"bill of config {self.name}: no stage asks for GPUs (resources.<stage>.gpu), "
                    "nothing to bill in GPU-hours")
        out = [f"bill of config {self.name}: GPU-hours, worst case (every response at its "
               "length limit, DAPO at its rollout cap)"]
        for stage in dict.fromkeys(x.stage for x in billed):
            for x in (y for y in billed if y.stage == stage):
                subs = ("" if x.submissions == 1 and "cannot" not in x.note else
                        ", cannot finish" if "cannot" in x.note else
                        f", {x.submissions} submissions")
                out.append(f"  {stage:<17} {x.what:<38} {x.jobs:>3} job(s) x {x.hours:7.1f} h x "
                           f"{x.gpus} GPUs = {x.gpu_hours:9.1f} GPU-h{subs}")
            out.append(f"  {stage + ' total':<60}{self.stage_total(stage):>26.1f} GPU-h")
            out += _over_runtime(stage, [y for y in billed if y.stage == stage])
        out.append(f"  {'TOTAL':<60}{self.total:>26.1f} GPU-h")
        out += [f"! {w}" for w in self.warnings]
        out.append("assumptions (value: source):")
        out += [f"  {n} = {v}: {src}" for n, v, src in self.assumptions]
        return "\n".join(out)


def _over_runtime(stage: str, lines: list[Line]) -> list[str]:
    """The stage's jobs (counted as jobs) that a submission cannot finish, and what happens."""
    if stage == "evaluation":
        over = [y for y in lines if y.runtime_h and y.hours > y.runtime_h]
    else:
        over = [y for y in lines if y.submissions > 1 or "cannot" in y.note]
    if not over:
        return []
    runtime = over[0].runtime_h
    key = _KEY[stage]
    if stage == "evaluation":   # nothing resumes an evaluation job: refused by vade.eval.plan
        return [f"  ! {sum(y.jobs for y in over)} {stage} job(s) may exceed resources.{key}.runtime ({runtime:g} h) "
                f"in the worst case: nothing resumes them: raise resources.{key}.runtime or "
                f"lower {key}.max_new_tokens"]
    stuck = [y for y in over if "cannot" in y.note]
    out = ([f"  ! {sum(y.jobs for y in stuck)} {stage} job(s) "
            f"{max(stuck, key=lambda y: y.hours).note}"] if stuck else [])
    rest = [y for y in over if "cannot" not in y.note]
    if not rest:
        return out
    worst = max(rest, key=lambda y: y.submissions)
    how = ("each checkpoints and stops itself before the limit" if stage == "training" else
           "a job killed at the limit loses only the chunk it was writing")
    counts = ", ".join(f"{n} x {k}" for k, n in sorted(
        Counter(y.submissions for y in rest).items()))
    return out + [f"  ! {sum(y.jobs for y in rest)} {stage} job(s) exceed resources.{key}.runtime "
                  f"({runtime:g} h) in the worst case: up to {worst.submissions} submissions "
                  f"each ({worst.note}; jobs x submissions: {counts}); {how}, and the next "
                  f"submission resumes (the workflow sets rule {_RULE[stage]}'s Snakemake retries "
                  f"to {worst.submissions - 1}, so one `snakemake --profile slurm` runs them "
                  "all)"]



def _submissions(hours: float, overhead_h: float, runtime_h: float | None, units: int,
                 margin: float) -> tuple[int, float, int]:
    """(submissions, billed hours, units per submission) of a job of ``units`` equal units
    (steps, chunks) of ``(hours - overhead_h) / units`` each, that stops once its time left is
    under ``margin`` units and pays the overhead again on every submission. 0 units per
    submission: one unit does not fit."""
    work = hours - overhead_h
    if runtime_h is None or hours <= runtime_h or units < 1:
        return 1, hours, units
    unit = work / units
    usable = runtime_h - overhead_h
    # after unit j it goes on while (usable - j * unit) >= margin * unit
    per = max(0, math.floor(usable / unit - margin + 1)) if unit > 0 else units
    per = min(per, units)
    if per < 1:
        return 0, hours, 0
    subs = math.ceil(units / per)
    return subs, work + subs * overhead_h, per


def split_rows(config: Mapping[str, Any]) -> tuple[int, int, str]:
    """(train rows, val rows, source): the split ``vade build-data`` makes, computed from the
    config (paper: each task's ``floor(val_fraction * n + 0.5)`` rows to val, as
    ``vade.data.splits.stratified_split`` does)."""
    # `skip_invalid` is a command-line flag of build-data, not a DataConfig key
    sec = {k: v for k, v in (config.get("data") or {}).items() if k != "skip_invalid"}
    data = data_config_from_mapping({**config, "data": sec})
    if data.kind == "synthetic":
        return data.synthetic.train, data.synthetic.val, "data.synthetic.train / .val"
    counts = list(data.paper.tasks.values())
    val = sum(int(math.floor(data.val_fraction * n + 0.5)) for n in counts)
    return sum(counts) - val, val, "data.paper.tasks split by data.val_fraction per task"


_KEY = {"initial rollouts": "difficulty", "training": "train", "evaluation": "evaluate"}
_RULE = {"initial rollouts": "init_difficulty", "training": "train"}


def _runtime_h(config: Mapping[str, Any], stage: str) -> float | None:
    minutes = ((config.get("resources") or {}).get(stage) or {}).get("runtime")
    return None if minutes is None else float(minutes) / 60.0


REFERENCE_GPUS = 4   # the GPUs of the job the default rates assume (PLAN_DEFAULTS)
TIME_MARGIN = 1.5    # a job stops when its time left is under this many of its slowest steps


def _hours(tokens: float, rate: float, overhead_min: float) -> float:
    return (tokens / rate / 60.0 + overhead_min) / 60.0


def padded(config: Mapping[str, Any]) -> bool:
    """Whether verl computes the update and log-prob passes over padded sequences. verl 0.7.1
    removes padding (``use_remove_padding``) for Qwen2.5-VL only through flash-attn: its patched
    attention (``verl/models/transformers/qwen2_vl.py``) calls ``flash_attn_varlen_func`` or
    transformers' flash-attention forward, and the actor unpads with
    ``flash_attn.bert_padding`` (``verl/utils/attention_utils.py``). So with the SDPA default
    (``vade.train.verl.overrides``) every sequence is ``max_prompt_length`` (prompts are
    left-padded to it) + ``max_new_tokens`` positions."""
    train = config.get("train") or {}
    return (train.get("backend") == "verl"
            and (train.get("verl") or {}).get("attention", "sdpa") != "flash_attention_2")


def _update_positions(config: Mapping[str, Any], t: Any, prompt: float) -> float:
    """Positions per response the update and log-prob passes compute: the padded length under
    ``padded``, else the mean prompt (the data's, else assumed) plus the response limit."""
    if padded(config):
        return float(t.verl.max_prompt_length + t.max_new_tokens)
    return prompt + t.max_new_tokens


def _run(config: Mapping[str, Any], cell: Cell) -> TrainConfig:
    return TrainConfig.from_config(run_config(config, cell), algorithm=cell.algorithm,
                                   method=cell.method, seed=cell.seed)


def _training_line(config: Mapping[str, Any], cell: Cell, val_rows: int,
                   rates: Mapping[str, float], gpus: int, working: int,
                   means: Mapping[str, float]) -> Line:
    """One run's line: billed on ``gpus`` (what SLURM holds), timed at the speed of
    ``working`` (the GPUs verl's workers use; more asked for are idle, not faster); ``means``
    the data's mean prompt per model (``cluster.plan.prompt_tokens`` where not recorded)."""
    t = _run(config, cell)
    per_step = t.batch_size * t.rollouts_per_prompt
    factor = t.dapo.max_rollout_factor if t.spec.shaping == "dapo" else 1.0
    generated = t.steps * per_step * t.max_new_tokens * factor
    prompt = means.get(cell.model, rates["prompt_tokens"])
    updated = t.steps * per_step * _update_positions(config, t, prompt) * t.ppo_epochs
    passes = int(t.val_before_train) + (
        t.steps // t.val_every + (1 if t.steps % t.val_every else 0) if t.val_every else 1)
    rows = min(val_rows, t.val_max_samples) if t.val_max_samples else val_rows
    validated = passes * rows * t.val_n * t.max_new_tokens
    scale = max(working, 1) / REFERENCE_GPUS
    minutes = ((generated + validated) / (rates["rollout_tokens_per_s"] * scale)
               + updated / (rates["update_tokens_per_s"] * scale)) / 60.0 \
        + rates["job_overhead_min"]
    runtime = _runtime_h(config, "train")
    over_h = rates["job_overhead_min"] / 60.0
    subs, hours, per = _submissions(minutes / 60.0, over_h, runtime, t.steps, TIME_MARGIN)
    if subs == 0:
        step = (minutes / 60.0 - over_h) / t.steps
        note = (f"cannot finish: one step takes up to {step:.1f} h and needs {TIME_MARGIN:g}x "
                f"that before resources.train.runtime ({runtime:g} h): raise it")
    else:
        note = (f"{per} of {t.steps} steps per submission, checkpointed when the time left is "
                f"under {TIME_MARGIN:g} steps") if subs > 1 else ""
    return Line("training", cell.run_id, 1, hours, gpus, runtime, max(subs, 1), note)


def pin_warnings(config: Mapping[str, Any], config_path: str = "<config>") -> list[str]:
    """One line naming the dataset repositories the build would refuse as unpinned, and the
    command that pins them (``vade.job.revisions``): said before prefetch stages anything."""
    missing = missing_pins(config)
    if not missing:
        return []
    return [f"data.paper.require_pinned: {len(missing)} dataset repositories have no commit in "
            f"cluster.revisions or cluster.revisions_lock ({', '.join(missing)}); "
            f"{resolve_command(config, config_path)}"]


def make_bill(config: Mapping[str, Any], config_path: str = "<config>",
              free_gb: Callable[[Path], float] | None = None,
              data_dir: str | Path | None = None) -> Bill:
    """The bill of a whole config (``check_gpu_resources`` first: a refused layout has none);
    ``free_gb`` the free disk under a path (the checkpoints' check; tests pass a stand-in);
    ``data_dir`` the built data whose manifest records the prompts' lengths (default
    ``data/<name>``): a ``max_prompt_length`` below the longest is refused."""
    check_gpu_resources(config)
    longest = longest_prompt(config, data_dir)
    refusal = too_short(config, longest)
    if refusal:
        raise ValueError(refusal)
    means = prompt_means(config, data_dir)
    cluster = ClusterConfig.from_config(config)
    keys = ("rollout_tokens_per_s", "update_tokens_per_s", "prompt_tokens", "job_overhead_min")
    rates = {k: cluster.plan.value(k)[0] for k in keys}
    train_rows, val_rows, rows_src = split_rows(config)
    cells = grid_cells(config)
    assumptions = [("train rows", f"{train_rows:,}", rows_src),
                   ("val rows", f"{val_rows:,}", rows_src)]
    assumptions += [(f"cluster.plan.{k}", f"{rates[k]:g}", cluster.plan.value(k)[1])
                    for k in keys]
    lines: list[Line] = []

    diff = config.get("difficulty") or {}
    needs = [m for m in dict.fromkeys(c.model for c in cells)
             if any(methods.get(c.method).needs_difficulty for c in cells if c.model == m)]
    g, t_diff = int(diff.get("rollouts", 8)), int(diff.get("max_new_tokens", 16))
    engines_gpus = used_gpus(config, "difficulty")
    tp = int(diff.get("tensor_parallel_size", 1) or 1)
    chunks = math.ceil(train_rows / max(1, int(diff.get("batch_size", 256)) // g))
    for m in needs:
        hours = _hours(train_rows * g * t_diff,
                       rates["rollout_tokens_per_s"] * max(engines_gpus, 1) / REFERENCE_GPUS,
                       rates["job_overhead_min"])
        runtime = _runtime_h(config, "difficulty")
        subs, hours, per = _submissions(hours, rates["job_overhead_min"] / 60.0, runtime,
                                        chunks, 1.0)
        note = (f"{per} of {chunks} written chunks per submission" if subs > 1 else
                "cannot finish: one chunk (difficulty.batch_size rollouts) outlasts "
                "resources.difficulty.runtime" if subs == 0 else "")
        what = f"{m}: {train_rows:,} x G={g} x {t_diff} tokens"
        if engines_gpus:
            what += f", {engines_gpus // tp} engine(s)"
        lines.append(Line("initial rollouts", what, 1, hours, stage_gpus(config, "difficulty"),
                          runtime, max(subs, 1), note))
    gpus = stage_gpus(config, "train")
    working = used_gpus(config, "train") or gpus   # the local backend: no verl workers
    lines += [_training_line(config, c, val_rows, rates, gpus, working, means) for c in cells]
    assumptions.append(("training tokens", "steps x batch_size x rollouts_per_prompt x "
                        "max_new_tokens (x dapo.max_rollout_factor for DAPO) generated, + "
                        "the positions of each response's update and log-prob passes, + "
                        "validation passes",
                        "train section of the config (vade.train.config.TrainConfig)"))
    if padded(config) and cells:
        t = _run(config, cells[0])
        real = rates["prompt_tokens"] + t.max_new_tokens
        pad = t.verl.max_prompt_length + t.max_new_tokens
        assumptions.append((
            "update positions", f"{pad:,} per response (train.verl.max_prompt_length "
            f"{t.verl.max_prompt_length:,} + train.max_new_tokens {t.max_new_tokens:,}), "
            f"{pad / real:.1f}x the {real:,.0f} of a mean prompt (cluster.plan.prompt_tokens) "
            "and its response",
            "train.verl.attention: sdpa: verl 0.7.1 removes padding for Qwen2.5-VL only with "
            "flash-attn, so every prompt is left-padded to max_prompt_length; "
            "train.verl.attention: flash_attention_2 (VADE_FLASH_ATTN=1 when the env is "
            "built) removes it, or lower train.verl.max_prompt_length to the data's longest "
            "prompt"))
    if means and not padded(config):
        assumptions.append(("mean prompt", ", ".join(f"{m} {v:,.1f}" for m, v in means.items()),
                            f"{longest.source or 'the data manifest'}: counted by each "
                            "model's processor (vade build-data); replaces "
                            "cluster.plan.prompt_tokens"))
    if longest.tokens is None:
        assumptions.append(("longest prompt", "not known", longest.reason))
    else:
        assumptions.append(("longest prompt", f"{longest.tokens:,} tokens ({longest.model}'s "
                            f"processor; 99th percentile {longest.p99:,})",
                            f"{longest.source} (vade build-data); {KEY} below it is refused"))

    ev_cfg = EvaluateConfig.from_dict(config.get("evaluate") or {})
    res = (config.get("resources") or {}).get("evaluate") or {}
    benches = None
    if ev_cfg.kind == "synthetic":
        syn = data_config_from_mapping({**config, "data": {
            k: v for k, v in config["data"].items() if k != "skip_invalid"}}).synthetic
        benches = tuple(Benchmark(d, d, "acc", items=syn.eval) for d in syn.domains)
    plan = make_plan(ev_cfg, runtime_min=res.get("runtime"), gpus=stage_gpus(config, "evaluate"),
                     benchmarks=benches)
    checkpoints = len(cells) + len(dict.fromkeys(c.model for c in cells))
    lines.append(Line("evaluation", f"{checkpoints} checkpoints x {plan.repeats} repeats",
                      checkpoints * plan.repeats, plan.minutes_per_job / 60.0, plan.gpus,
                      _runtime_h(config, "evaluate")))
    assumptions.append(("evaluate.plan.tokens_per_s", f"{plan.tokens_per_s:g}",
                        "evaluate.plan (vade evaluate --plan: the per-checkpoint arithmetic)"))
    assumptions.append(("evaluation overhead", f"{plan.overhead_min:g} min per job",
                        "evaluate.plan.overhead_min (default 45 with a served judge, else 5): "
                        "assumed, not measured: the judge's and the policy's weights read from "
                        "the shared cache, two vLLM engines started, the judging after the last "
                        "response; the first job's log gives the real figure"))
    assumptions.append(("time margin", f"{TIME_MARGIN:g} x the slowest step",
                        "vade.job.timelimit: a training job checkpoints and stops when its "
                        "time left is under this; the next submission resumes"))
    assumptions.append(("GPUs of the default rates", f"{REFERENCE_GPUS}",
                        "cluster.plan's rates are for a 4-GPU job: a stage using n GPUs runs "
                        "at n/4 of them"))
    warnings = [f"resources.{st}.gpu asks for {n} GPU(s) no engine uses ({why}): "
                f"{sum(x.hours * x.jobs for x in lines if _KEY[x.stage] == st) * n:.1f} "
                "GPU-h idle in this bill" for st, n, why in idle_gpus(config)]
    warnings += _padding_warnings(config, cells, longest, val_rows, rates, gpus, working,
                                  means, lines)
    warnings += _memory_warnings(config, cells)
    warnings += pin_warnings(config, config_path)
    warnings += disk_warnings(config, free_gb)
    disk, runs = runs_checkpoint_gb(config)
    if disk:
        assumptions.append(("checkpoint disk", f"{disk:,.0f} GB for {runs} runs at once",
                            "cluster.plan.bytes_per_param x parameters x "
                            "(train.keep_checkpoints + a final bf16 copy) per run, all runs "
                            "concurrently (vade preflight --stage train checks it too)"))
    return Bill(str(config.get("name", "?")), tuple(lines), tuple(assumptions),
                tuple(warnings))


def _padding_warnings(config: Mapping[str, Any], cells: list[Cell], longest: Longest,
                      val_rows: int, rates: Mapping[str, float], gpus: int, working: int,
                      means: Mapping[str, float], lines: list[Line]) -> list[str]:
    """What padding every prompt to ``max_prompt_length`` costs, where it is more than
    ``PADDING_SLACK`` of a response's positions above the data's longest prompt: the training
    GPU-hours at ``max_prompt_length`` = the longest, priced as this bill prices them."""
    if longest.tokens is None or not padded(config) or not cells:
        return []
    verl = dict((config.get("train") or {}).get("verl") or {})
    t = _run(config, cells[0])
    pad = t.verl.max_prompt_length + t.max_new_tokens
    need = longest.tokens + t.max_new_tokens
    if pad <= (1 + PADDING_SLACK) * need:
        return []
    tight = {**config, "train": {**config["train"],
                                 "verl": {**verl, "max_prompt_length": longest.tokens}}}
    now = sum(x.gpu_hours for x in lines if x.stage == "training")
    then = sum(_training_line(tight, c, val_rows, rates, gpus, working, means).gpu_hours
               for c in cells)
    return [f"{KEY} = {t.verl.max_prompt_length:,} pads every prompt to it (train.verl."
            f"attention: sdpa, no padding removal), but the data's longest prompt is "
            f"{longest.tokens:,} tokens ({longest.model}'s processor, {longest.source}): each "
            f"update and log-prob pass computes {pad:,} positions per response where {need:,} "
            f"would do ({pad / need:.1f}x); {KEY}: {longest.tokens} bills training "
            f"{then:,.1f} GPU-h instead of {now:,.1f}"]


def _memory_warnings(config: Mapping[str, Any], cells: list[Cell]) -> list[str]:
    """Training layouts that cannot fit an 80 GB GPU (``vade.cluster.memory``; preflight
    checks the job's real GPUs)."""
    out = []
    for m in dict.fromkeys(c.model for c in cells):
        x = layout_of(config, m)
        if x is not None:
            out += [f"training memory of {m}: {p} (vade.cluster.memory, {DEFAULT_GPU_GIB:g} GiB "
                    "GPUs assumed)" for p in check_layout(x)]
    return out
