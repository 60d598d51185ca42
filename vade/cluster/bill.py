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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vade.cluster.config import ClusterConfig
from vade.cluster.resources import check_gpu_resources, stage_gpus
from vade.grid import Cell, run_config
from vade.grid import cells as grid_cells

__all__ = ["Bill", "Line", "checkpoint_gb", "make_bill", "split_rows"]


@dataclass(frozen=True)
class Line:
    """One priced job kind: ``jobs`` jobs of ``hours`` each on ``gpus`` GPUs."""

    stage: str
    what: str
    jobs: int
    hours: float
    gpus: int
    runtime_h: float | None = None   # the stage's resources.<stage>.runtime, in hours

    @property
    def gpu_hours(self) -> float:
        return self.jobs * self.hours * self.gpus


@dataclass(frozen=True)
class Bill:
    name: str
    lines: tuple[Line, ...]
    assumptions: tuple[tuple[str, str, str], ...]   # (name, value, source)

    def stage_total(self, stage: str) -> float:
        return sum(x.gpu_hours for x in self.lines if x.stage == stage)

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
                out.append(f"  {stage:<17} {x.what:<38} {x.jobs:>3} job(s) x {x.hours:7.1f} h x "
                           f"{x.gpus} GPUs = {x.gpu_hours:9.1f} GPU-h")
            out.append(f"  {stage + ' total':<60}{self.stage_total(stage):>26.1f} GPU-h")
            over = [y for y in billed if y.stage == stage and y.runtime_h
                    and y.hours > y.runtime_h]
            if over:
                worst = max(over, key=lambda y: y.hours)
                head = (f"  ! {len(over)} {stage} job(s) may exceed resources.{_KEY[stage]}"
                        f".runtime ({worst.runtime_h:g} h) in the worst case: ")
                out.append(head + (
                    f"up to {math.ceil(worst.hours / worst.runtime_h)} submissions each, "
                    "resuming from checkpoints (slurm/config.yaml retries once: run snakemake "
                    "again, or raise the runtime)" if stage == "training"
                    else f"nothing resumes them: raise resources.{_KEY[stage]}.runtime or lower "
                    f"{_KEY[stage]}.max_new_tokens"))  # evaluation: refused (vade.eval.plan)
        out.append(f"  {'TOTAL':<60}{self.total:>26.1f} GPU-h")
        out.append("assumptions (value: source):")
        out += [f"  {n} = {v}: {src}" for n, v, src in self.assumptions]
        return "\n".join(out)


def split_rows(config: Mapping[str, Any]) -> tuple[int, int, str]:
    """(train rows, val rows, source): the split ``vade build-data`` makes, computed from the
    config (paper: each task's ``floor(val_fraction * n + 0.5)`` rows to val, as
    ``vade.data.splits.stratified_split`` does)."""
    from vade.data.config import data_config_from_mapping

    # `skip_invalid` is a command-line flag of build-data, not a DataConfig key
    sec = {k: v for k, v in (config.get("data") or {}).items() if k != "skip_invalid"}
    data = data_config_from_mapping({**config, "data": sec})
    if data.kind == "synthetic":
        return data.synthetic.train, data.synthetic.val, "data.synthetic.train / .val"
    counts = list(data.paper.tasks.values())
    val = sum(int(math.floor(data.val_fraction * n + 0.5)) for n in counts)
    return sum(counts) - val, val, "data.paper.tasks split by data.val_fraction per task"


_KEY = {"initial rollouts": "difficulty", "training": "train", "evaluation": "evaluate"}


def _runtime_h(config: Mapping[str, Any], stage: str) -> float | None:
    minutes = ((config.get("resources") or {}).get(stage) or {}).get("runtime")
    return None if minutes is None else float(minutes) / 60.0


_PARAMS = re.compile(r"(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")


def params_of(model: Mapping[str, Any]) -> float:
    """Parameters of a model entry: the ``<N>B`` in a pretrained name (``Qwen2.5-VL-7B``), else
    a few million (the tiny model)."""
    m = _PARAMS.findall(str(model.get("name_or_path", "")))
    return float(m[-1]) * 1e9 if m else 5e6


def checkpoint_gb(config: Mapping[str, Any], model: str) -> float:
    """Disk of one training run's kept checkpoints plus its final model, in GB."""
    cluster = ClusterConfig.from_config(config)
    keep = int((config.get("train") or {}).get("keep_checkpoints", 2))
    per_param, _ = cluster.plan.value("bytes_per_param")
    params = params_of(config["models"][model])
    return params * (keep * per_param + 2.0) / 1e9


def _hours(tokens: float, rate: float, overhead_min: float) -> float:
    return (tokens / rate / 60.0 + overhead_min) / 60.0


def _training_line(config: Mapping[str, Any], cell: Cell, val_rows: int,
                   rates: Mapping[str, float], gpus: int) -> Line:
    from vade.train.config import TrainConfig

    t = TrainConfig.from_config(run_config(config, cell), algorithm=cell.algorithm,
                                method=cell.method, seed=cell.seed)
    per_step = t.batch_size * t.rollouts_per_prompt
    factor = t.dapo.max_rollout_factor if t.spec.shaping == "dapo" else 1.0
    generated = t.steps * per_step * t.max_new_tokens * factor
    updated = t.steps * per_step * (rates["prompt_tokens"] + t.max_new_tokens) * t.ppo_epochs
    passes = int(t.val_before_train) + (
        t.steps // t.val_every + (1 if t.steps % t.val_every else 0) if t.val_every else 1)
    rows = min(val_rows, t.val_max_samples) if t.val_max_samples else val_rows
    validated = passes * rows * t.val_n * t.max_new_tokens
    minutes = ((generated + validated) / rates["rollout_tokens_per_s"]
               + updated / rates["update_tokens_per_s"]) / 60.0 + rates["job_overhead_min"]
    return Line("training", cell.run_id, 1, minutes / 60.0, gpus,
                _runtime_h(config, "train"))


def make_bill(config: Mapping[str, Any]) -> Bill:
    """The bill of a whole config (``check_gpu_resources`` first: a refused layout has none)."""
    from vade import methods
    from vade.eval.config import Benchmark, EvaluateConfig
    from vade.eval.plan import make_plan

    check_gpu_resources(config)
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
    for m in needs:
        hours = _hours(train_rows * g * t_diff, rates["rollout_tokens_per_s"],
                       rates["job_overhead_min"])
        lines.append(Line("initial rollouts", f"{m}: {train_rows:,} x G={g} x {t_diff} tokens",
                          1, hours, stage_gpus(config, "difficulty"),
                          _runtime_h(config, "difficulty")))
    gpus = stage_gpus(config, "train")
    lines += [_training_line(config, c, val_rows, rates, gpus) for c in cells]
    assumptions.append(("training tokens", "steps x batch_size x rollouts_per_prompt x "
                        "max_new_tokens (x dapo.max_rollout_factor for DAPO) generated, + "
                        "prompt_tokens per response updated, + validation passes",
                        "train section of the config (vade.train.config.TrainConfig)"))

    ev_cfg = EvaluateConfig.from_dict(config.get("evaluate") or {})
    res = (config.get("resources") or {}).get("evaluate") or {}
    benches = None
    if ev_cfg.kind == "synthetic":
        from vade.data.config import data_config_from_mapping

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
                        "evaluate.plan.overhead_min (default: 45 with a served judge, else 5)"))
    return Bill(str(config.get("name", "?")), tuple(lines), tuple(assumptions))
