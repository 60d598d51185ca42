"""``vade evaluate``: average@k of one checkpoint with lmms-eval, into DuckDB and MLflow.

Synthetic config: local tasks over ``<data-dir>/eval/<domain>.parquet``. Paper config: the
lmms-eval tasks in ``evaluate.benchmarks`` plus the variants shipped in ``vade/eval/tasks``, with
the judge endpoint of ``evaluate.judge`` (started and stopped here when ``mode: serve``).
Output: ``--out`` (``results/<name>/eval/<run_id>.duckdb``), written once at the end, atomically;
MLflow (the run named ``<run_id>``): per-repeat scores at step = repeat, and
``eval/<benchmark>/average_at_<k>`` (MLflow names allow no ``@``). A trained run's scores are added
to its training run without touching its status or duration; a base model's evaluation is a run of
its own (replacing an earlier one), with the evaluation settings as params.
MLflow is written first, so the DuckDB file (the rule's output) exists only after both.

On a cluster each repeat is its own job (``--repeat I``: rows of that repeat only, no MLflow),
and ``--merge`` joins the k files into the checkpoint's file (same schema) and logs MLflow. On CPU
(the demo) the workflow runs all k in one job (neither option): one process and one lmms-eval
start-up per checkpoint, the same rows and MLflow metrics.
Every evaluation job first prints its plan (``vade.eval.plan``) and refuses one that cannot
finish inside ``--runtime-min``; ``--plan`` prints it alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import tempfile
from pathlib import Path

from vade.config_io import add_config_arguments, load_config, section
from vade.eval import judge as judge_mod
from vade.eval import runner
from vade.eval.config import EvaluateConfig
from vade.eval.plan import make_plan
from vade.eval.preload import preload_tasks
from vade.eval.runner import MODEL, VLLM_MODEL, target_for
from vade.eval.store import merge_repeats, write_eval_results
from vade.eval.taskgen import SHIPPED_TASKS, local_benchmarks, write_local_tasks
from vade.eval.watchdog import WatchdogConfig, watching
from vade.provenance import code_version
from vade.tracking import Tracker, TrackingConfig

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--run-id", help="<model>-<algorithm>-<method>-s<seed>, or <model>-base")
    parser.add_argument("--checkpoint",
                        help="save_pretrained directory (or hub id / path of a base model)")
    parser.add_argument("--out", metavar="FILE",
                        help="evaluation DuckDB file (results/<name>/eval/<run_id>.duckdb)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="data/<name> (synthetic: its eval/*.parquet are the benchmarks)")
    parser.add_argument("--judge-log", metavar="FILE", help="log of a judge served here")
    parser.add_argument("--samples-log", metavar="FILE",
                        help="keep lmms-eval's per-sample records here (JSON lines)")
    parser.add_argument("--no-mlflow", action="store_true", help="skip MLflow logging")
    parser.add_argument("--repeat", type=int, metavar="I",
                        help="run only repeat I (0-based) of average@k; its rows go to --out and "
                             "MLflow waits for the merge")
    parser.add_argument("--merge", nargs="+", metavar="FILE",
                        help="merge per-repeat files (--repeat outputs) into --out: average@k")
    parser.add_argument("--plan", action="store_true",
                        help="print items x repeats x max tokens and GPU-hours per checkpoint; "
                             "exit 2 if a job cannot finish inside --runtime-min")
    parser.add_argument("--runtime-min", type=float, metavar="MIN",
                        help="the job's time limit (default: resources.evaluate.runtime)")
    parser.add_argument("--gpus", type=int, metavar="N",
                        help="GPUs per job (default: resources.evaluate.gpu, else 1)")


def _log_mlflow(config: dict, target, rows, averages: dict[str, float],
                k: int) -> None:
    tracking = TrackingConfig.from_dict(section(config, "tracking", required=False))
    if not tracking.enabled:
        return
    name = str(config.get("name", "vade"))
    uri = os.environ.get("MLFLOW_TRACKING_URI") or tracking.uri_for(name)
    experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or tracking.experiment or name
    base = target.method == "base"
    tracker = Tracker(uri, experiment, target.run_id, mode="new" if base else "attach")
    try:
        if base:
            tracker.log_params({"evaluate": section(config, "evaluate", required=False),
                                "checkpoint": target.checkpoint})
            tracker.set_tags({"run_id": target.run_id, "model": target.model, "kind": "base-model",
                              "backend": "lmms-eval", "code_version": code_version()})
        tracker.set_tags({f"eval/{r.benchmark}/judge": r.judge for r in rows if r.judge})
        by_repeat: dict[int, dict[str, float]] = {}
        for r in rows:
            by_repeat.setdefault(r.repeat, {})[f"eval/{r.benchmark}/score"] = r.score
        for repeat, metrics in sorted(by_repeat.items()):
            tracker.log_metrics(metrics, step=repeat)
        tracker.log_metrics({f"eval/{b}/average_at_{k}": v for b, v in averages.items()}, step=0)
    finally:
        tracker.close()


def _plan(args: argparse.Namespace, config: dict, cfg, benchmarks=None):
    res = (config.get("resources") or {}).get("evaluate") or {}
    runtime = args.runtime_min if args.runtime_min is not None else res.get("runtime")
    gpus = args.gpus if args.gpus is not None else int(res.get("gpu") or 1)
    return make_plan(cfg, runtime_min=runtime, gpus=gpus, benchmarks=benchmarks)


@contextlib.contextmanager
def _sigterm_raises():
    """SIGTERM (SLURM's cancel, a time limit) as SystemExit, so that every ``finally`` runs: the
    served judge is stopped, no half-written output is left."""
    def _raise(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _required(args: argparse.Namespace, *names: str) -> None:
    missing = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is None]
    if missing:
        raise ValueError(f"vade evaluate needs {', '.join(missing)}")


def _companions(rows) -> dict[str, dict[str, float]]:
    """benchmark -> companion name -> mean over the repeats (from each row's ``extras``)."""
    got: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        for name, v in (json.loads(r.extras) if r.extras else {}).items():
            got.setdefault(r.benchmark, {}).setdefault(name, []).append(float(v["score"]))
    return {b: {n: sum(v) / len(v) for n, v in c.items()} for b, c in got.items()}


def score_lines(run_id: str, rows) -> list[str]:
    """One line per benchmark: average@k, then its companions and its judge, named."""
    k = len({r.repeat for r in rows})
    companions = _companions(rows)
    lines = []
    for name in dict.fromkeys(r.benchmark for r in rows):
        mine = [r for r in rows if r.benchmark == name]
        line = f"{run_id} {name}: average@{k} = {sum(r.score for r in mine) / len(mine):.2f}"
        line += f" ({mine[0].metric})" if mine[0].metric else ""
        line += "".join(f"; {c} = {v:.2f}" for c, v in companions.get(name, {}).items())
        line += f"; judge {mine[0].judge}" if mine[0].judge else ""
        lines.append(line)
    return lines


def _report(args, config, cfg, target, rows) -> int:
    """MLflow (whole evaluations only: a single repeat waits for the merge), then the file."""
    averages = {}
    for name in dict.fromkeys(r.benchmark for r in rows):
        scores = [r.score for r in rows if r.benchmark == name]
        averages[name] = sum(scores) / len(scores)
    for name, comps in _companions(rows).items():
        averages.update({f"{name}/{c}": v for c, v in comps.items()})
    if not args.no_mlflow and args.repeat is None:
        _log_mlflow(config, target, rows, averages, cfg.repeats)
    out = write_eval_results(args.out, rows)
    print("\n".join(score_lines(args.run_id, rows)))
    print(f"wrote {len(rows)} rows to {out}")
    return 0


def _preload(cfg, benchmarks, include, defaults):
    """lmms-eval's TaskManager with every benchmark's task built and counted (vade.eval.preload);
    the evaluation reuses it."""
    from lmms_eval.tasks import TaskManager  # lazy: lmms-eval: the eval envs only

    manager = TaskManager("WARNING", include_path=list(include) or None,
                          include_defaults=defaults,
                          model_name=VLLM_MODEL if cfg.policy.engine == "vllm" else MODEL)
    counts = preload_tasks(benchmarks, manager)
    print("tasks loaded: " + ", ".join(f"{k} {v:,} items" for k, v in counts.items()), flush=True)
    return manager


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    cfg = EvaluateConfig.from_dict(section(config, "evaluate", required=False))
    if args.plan:
        local = None
        if cfg.kind == "synthetic" and args.data_dir:
            local = tuple(b for b, _ in local_benchmarks(Path(args.data_dir) / "eval"))
        plan = _plan(args, config, cfg, local)
        print("\n".join(plan.lines()))
        plan.check()
        return 0
    _required(args, "run_id", "out")
    if args.merge:
        rows = merge_repeats(args.merge, args.run_id, cfg.repeats)
        return _report(args, config, cfg, target_for(args.run_id, rows[0].checkpoint), rows)
    _required(args, "checkpoint")
    if args.repeat is not None and not 0 <= args.repeat < cfg.repeats:
        raise ValueError(f"--repeat {args.repeat} is not one of the {cfg.repeats} repeats "
                         "(evaluate.repeats)")
    target = target_for(args.run_id, args.checkpoint)
    if cfg.kind == "paper" and "/" not in args.checkpoint and not Path(args.checkpoint).exists():
        raise FileNotFoundError(f"checkpoint not found: {args.checkpoint}")
    if cfg.kind == "synthetic" and not Path(args.checkpoint).is_dir():
        raise FileNotFoundError(f"checkpoint directory not found: {args.checkpoint}")
    if cfg.kind == "synthetic":  # local files only: never reach for the hub
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if not args.data_dir:
            raise ValueError("--data-dir is required when evaluate.kind is synthetic")
    if cfg.threads:  # as under Snakemake: torch's default (all cores) is ~13x slower on 2 cores
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        torch.set_num_threads(cfg.threads)
    repeats = None if args.repeat is None else [args.repeat]
    with tempfile.TemporaryDirectory(prefix="vade-eval-tasks-") as tmp:
        if cfg.kind == "synthetic":
            local = local_benchmarks(Path(args.data_dir) / "eval")
            write_local_tasks(local, Path(tmp), max_new_tokens=cfg.output_tokens,
                              temperature=cfg.temperature, top_p=cfg.top_p)
            benchmarks, include, defaults = [b for b, _ in local], [tmp], False
            judge_cfg = judge_mod.JudgeConfig()  # no judged local task
            judged = []
        else:
            benchmarks, include, defaults = list(cfg.benchmarks), [str(SHIPPED_TASKS)], True
            judged = [b.name for b in benchmarks if b.judge]
            if judged and cfg.judge.mode == "none":
                raise ValueError(f"benchmarks {judged} need the LLM judge: set "
                                 "evaluate.judge.mode to external or serve")
            judge_cfg = cfg.judge if judged else judge_mod.JudgeConfig()
        plan = _plan(args, config, cfg, tuple(benchmarks))
        print("\n".join(plan.lines()), flush=True)
        plan.check()  # before loading anything: refuse what cannot finish in time
        manager = _preload(cfg, benchmarks, include, defaults)  # before the judge and policy
        tag = f"{args.run_id}-r{args.repeat}" if args.repeat is not None else args.run_id
        with _sigterm_raises(), judge_mod.running_judge(judge_cfg, args.judge_log,
                                                        tag=tag) as judge, \
                watching(judge, judge_cfg.watchdog or WatchdogConfig(),
                         judged=bool(judged)) as dog:
            if args.samples_log:
                Path(args.samples_log).parent.mkdir(parents=True, exist_ok=True)
                Path(args.samples_log).unlink(missing_ok=True)  # a rerun starts it afresh
            rows = runner.evaluate_checkpoint(cfg, target, benchmarks, include, defaults, repeats,
                                       after_repeat=dog.after_repeat,
                                       samples_log=args.samples_log, manager=manager)
    return _report(args, config, cfg, target, rows)
