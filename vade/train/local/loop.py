"""The local trainer: verl's step loop in one CPU process, with VADE's sampler in front.

Per step: select a batch (``vade.sampling`` sampler; DAPO: the uniform stream, refilled by
``vade.train.dapo``) -> G rollouts per prompt (``vade.rollout.HFEngine``) -> rewards
(``vade.rewards.score_one``: score and acc) -> group advantages -> policy loss + KL loss against the frozen
starting model -> optimizer step(s) -> ``sampler.observe`` -> one DuckDB transaction (RunStore)
and one MLflow batch. Validation every ``val_every`` steps, checkpoints every
``checkpoint_every`` steps; a restart resumes from the newest checkpoint and rewrites the steps
after it, so the history has each step exactly once and equals an uninterrupted run's. DAPO's
rollout cap covers the whole run (``TrainConfig.rollout_budget``, as the verl entry): a step may
regenerate as long as the budget lasts, and the run stops early, validated and checkpointed, once
the budget cannot pay for another batch (``done.json``: ``stopped_by``).

Determinism (what resume equivalence rests on): one torch thread, deterministic algorithms, the
engine seeded per (seed, step, generation batch), the sampler's own RNGs in its state_dict, and
the global RNGs saved in each checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from vade.data.records import read_examples
from vade.data.synthetic.levels import sec_labels
from vade.job.timelimit import TimeGuard, TimeLimitReached
from vade.provenance import code_version
from vade.sampling import make_sampler
from vade.train.checkpoint import capture_rng, save_checkpoint
from vade.train.config import TrainConfig
from vade.train.dapo import dynamic_sample, observe_filtered
from vade.train.local.batch import StepBatch, derive_seed, generate_groups, score_rollouts
from vade.train.local.diva import DivaShaper
from vade.train.local.inputs import RunPaths, check_train_rows, count_rows, load_initial_difficulty
from vade.train.local.policy import LocalPolicy
from vade.train.local.resume import budget_spent, checkpoint_info
from vade.train.local.start import open_run
from vade.train.local.timing import PHASES, Phases
from vade.train.recorder import step_metrics
from vade.train.run_folder import RunLock

__all__ = ["train_local"]

_VAL_STREAM = 1_000_003  # seed-stream id of validation generations (apart from steps)
_RESCORE_STREAM = 2_000_000  # MMR1's re-scoring generations: apart from DAPO's refill attempts
_RESCORE_CHUNK = 64  # prompts per re-scoring generation (x 8 rollouts: 4 training steps' worth)


def _write_json(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _validate(engine: Any, examples: list[Any], cfg: TrainConfig, step: int) -> float:
    """Mean reward on the validation rows (greedy at ``val_temperature`` 0, else average@n)."""
    if not examples:
        return float("nan")
    ro = engine.generate(examples, cfg.val_n, temperature=cfg.val_temperature,
                         max_new_tokens=cfg.max_new_tokens,
                         seed=derive_seed(cfg.seed, _VAL_STREAM, step))
    _, acc = score_rollouts(list(ro.texts), examples, np.asarray(ro.example_pos, np.int64))
    return float(np.mean(acc))


def _setup_torch(cfg: TrainConfig) -> None:
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed % 2**32)
    torch.manual_seed(cfg.seed)


def train_local(cfg: TrainConfig, paths: RunPaths, *, progress: bool = True,
                crash_after_step: int | None = None,
                load_policy: Callable[[str, TrainConfig], Any] | None = None,
                guard: TimeGuard | None = None) -> dict[str, Any]:
    """Train, log, checkpoint; return the final metrics (also written to ``done.json``).

    ``crash_after_step`` raises after that step is logged and checkpointed (tests use it to
    simulate a kill). ``load_policy(path, cfg)`` builds the policy bundle (default:
    ``LocalPolicy.load``: the tiny/pretrained Qwen2.5-VL via ``vade.models``; tests and the
    plumbing benchmark may pass ``vade.train.local.toy.ToyPolicy.load``). ``guard``: the job's
    time-limit guard, already installed by the caller (``vade train`` installs it first thing,
    so a signal during start-up is not lost); else one is installed here, before anything is
    read, and its handlers are given back at the end, after MLflow is closed (a second signal
    while closing must not find the default handler, which ends the process with no message).
    """
    own = guard is None
    guard = TimeGuard.from_env().install() if guard is None else guard
    try:
        return _train_local(cfg, paths, progress=progress, crash_after_step=crash_after_step,
                            load_policy=load_policy, guard=guard)
    finally:
        if own:
            guard.restore()


def _train_local(cfg: TrainConfig, paths: RunPaths, *, progress: bool,
                 crash_after_step: int | None,
                 load_policy: Callable[[str, TrainConfig], Any] | None,
                 guard: TimeGuard) -> dict[str, Any]:

    # ---- inputs, checked before any model is loaded
    n_train = count_rows(paths.train)
    cfg.check_data(n_train)
    if cfg.needs_difficulty and paths.difficulty is None:
        raise ValueError(f"train.method = {cfg.method} needs --difficulty (initial.parquet)")
    examples = read_examples(paths.train)
    check_train_rows(examples)
    val_examples = read_examples(paths.val) if paths.val.is_file() else []
    if cfg.val_max_samples:
        val_examples = val_examples[:cfg.val_max_samples]
    alpha = beta = None
    if cfg.needs_difficulty:
        alpha, beta = load_initial_difficulty(paths.difficulty, n_train)
    with RunLock(paths.out):  # one writer per folder, from here to done.json
        return _train(cfg, paths, progress=progress, crash_after_step=crash_after_step,
                      load_policy=load_policy or LocalPolicy.load, examples=examples,
                      val_examples=val_examples, alpha=alpha, beta=beta, guard=guard)


def _train(cfg: TrainConfig, paths: RunPaths, *, progress: bool, crash_after_step: int | None,
           load_policy: Callable[[str, TrainConfig], Any], examples: list[Any],
           val_examples: list[Any], alpha: np.ndarray | None, beta: np.ndarray | None,
           guard: TimeGuard) -> dict[str, Any]:
    n_train = len(examples)
    _setup_torch(cfg)
    policy = load_policy(paths.model, cfg)
    stop = guard.reason()
    if stop:   # a signal while loading: stop before the folder or MLflow is touched
        raise TimeLimitReached(f"{paths.run_id}: stopped before training, nothing changed in "
                               f"{paths.out}: {stop}; run it again to resume")
    vade_prior = cfg.sampler_method != "vanilla"
    sampler = make_sampler(cfg.sampler_method, n_train, cfg.batch_size, seed=cfg.seed,
                           lambda1=cfg.sampler.lambda1, lambda2=cfg.sampler.lambda2,
                           alpha=alpha if vade_prior else None,
                           beta=beta if vade_prior else None,
                           labels=sec_labels(examples) if cfg.spec.reads_labels else None)
    shaper = None
    if cfg.is_diva:
        shaper = DivaShaper.from_difficulty(examples, alpha, beta, cfg.seed, cfg.diva)
    # the resume decision, the folder's cleanup and the store and tracker (vade.train.local.start)
    run = open_run(cfg, paths, policy=policy, sampler=sampler, shaper=shaper)
    state, store, recorder = run.state, run.store, run.recorder
    run_id = paths.run_id
    status = "FAILED"
    try:
        store.start_run(method=cfg.method, sampler_config=sampler.config, config=cfg.to_dict())
        if state["step"] == 0:
            store.log_initial_state(alpha if vade_prior else None,
                                    beta if vade_prior else None, n_samples=n_train,
                                    state=sampler)
            if shaper is not None:
                store.log_levels(0, np.arange(n_train), shaper.levels)
        recorder.log_params({"train": cfg.to_dict(), "seed": cfg.seed, "method": cfg.method,
                             "algorithm": cfg.algorithm, "n_train": n_train,
                             "n_val": len(val_examples)})
        recorder.set_tags({"code_version": code_version(), "backend": "local",
                           "run_id": run_id, "model": str(paths.model), "seed": cfg.seed,
                           "method": cfg.method, "algorithm": cfg.algorithm})
        if state["step"] == 0 and cfg.val_before_train:
            state["val"][0] = _validate(policy.engine, val_examples, cfg, 0)
            baseline = {"val/acc": state["val"][0], "val/n": float(len(val_examples))}
            store.log_metrics(0, baseline)  # the curves' first point
            recorder.log_metrics(baseline, step=0)
            if progress:
                tqdm.write(f"{run_id} step 0/{cfg.steps}: val/acc = {state['val'][0]:.3f}")

        start = state["step"]
        bar = tqdm(range(start + 1, cfg.steps + 1), initial=start, total=cfg.steps,
                   desc=run_id, unit="step", disable=not progress,
                   mininterval=1.0 if sys.stderr.isatty() else 10.0)  # a log: a line per 10 s
        t_run = time.perf_counter()
        generated_here = 0
        timing: dict[str, list[float]] = {k: [] for k in PHASES}  # per step, this process
        for step in bar:
            t_step = time.perf_counter()
            phases = Phases()
            if budget_spent(cfg, state["rollouts_cumulative"]):
                break  # a resumed DAPO run that had already stopped at the rollout cap
            metrics, obs, sampler_s, generated = _train_step(
                cfg, policy, sampler, examples, step,
                max_rollouts=cfg.rollout_budget - state["rollouts_cumulative"], phases=phases,
                shaper=shaper)
            state["rollouts_cumulative"] += generated
            generated_here += generated
            metrics["vade/rollouts_cumulative"] = float(state["rollouts_cumulative"])
            last = step == cfg.steps or budget_spent(cfg, state["rollouts_cumulative"])
            if cfg.val_every and step % cfg.val_every == 0 or last:
                with phases.time("validate"):
                    state["val"][step] = _validate(policy.engine, val_examples, cfg, step)
                metrics["val/acc"] = state["val"][step]
                metrics["val/n"] = float(len(val_examples))  # items: the report's error bars
                if progress:
                    bar.write(f"{run_id} step {step}/{cfg.steps}: val/acc = "
                              f"{state['val'][step]:.3f}, reward = "
                              f"{metrics['critic/score/mean']:.3f}")
            with phases.time("log"):  # seen in done.json's timing_s (it follows the metrics)
                recorder.log_step(obs, metrics, sampler_seconds=sampler_s,
                                  rollouts_generated=generated, state=sampler)
                if shaper is not None:
                    store.log_levels(step, *shaper.last_update)
            state["step"] = step
            guard.step_done(time.perf_counter() - t_step)
            stop = None if last else guard.reason()
            if stop or cfg.checkpoint_every and (step % cfg.checkpoint_every == 0 or last):
                with phases.time("checkpoint"):
                    save_checkpoint(paths.checkpoints, step, {
                        "policy": policy.state_dict(),
                        "sampler": sampler.state_dict(), "rng": capture_rng(), **state,
                        **({"diva": shaper.state_dict()} if shaper is not None else {}),
                    }, keep=cfg.keep_checkpoints, info=checkpoint_info(
                        cfg, state["val"], state["rollouts_cumulative"], run.inputs))
            for phase in PHASES:
                timing[phase].append(phases.seconds.get(phase, 0.0))
            elapsed = time.perf_counter() - t_run
            bar.set_postfix(reward=f"{metrics['critic/score/mean']:.2f}",
                            eff=f"{obs.effective_ratio:.2f}",
                            rollouts_s=f"{generated_here / max(elapsed, 1e-9):.1f}",
                            refresh=False)
            if crash_after_step is not None and step == crash_after_step:
                raise RuntimeError(f"simulated crash after step {step}")
            if stop:
                raise TimeLimitReached(f"{run_id}: checkpointed step {step} of {cfg.steps} and "
                                       f"stopped: {stop}; run it again (the next submission) "
                                       "to resume from there")
            if last:
                break
        wall = time.perf_counter() - t_run
        store.check_file()   # a history deleted after the last step: no done.json without it
        policy.save_final(paths.out / "final")
        eff = [r[0] for r in store.con.execute(
            "SELECT effective_ratio FROM steps WHERE run_id = ? ORDER BY step",
            [run_id]).fetchall()]
        done = {
            "run_id": run_id, "method": cfg.method, "algorithm": cfg.algorithm,
            "seed": cfg.seed, "backend": "local", "steps": state["step"],
            "stopped_by": _stopped_by(cfg, state),
            "rollouts_cumulative": int(state["rollouts_cumulative"]),
            "effective_ratio_mean": float(np.mean(eff)) if eff else None,
            "val_acc": {str(k): v for k, v in sorted(state["val"].items())},
            "val_acc_final": state["val"].get(state["step"]),
            "seconds_per_step_this_process": wall / max(state["step"] - start, 1),
            "timing_s": timing,
            "mlflow_run_id": recorder.run_id, "code_version": code_version(),
            "history": str(paths.history), "final_model": str(paths.out / "final"),
        }
        status = "FINISHED"
    except TimeLimitReached:
        status = "KILLED"   # stopped on purpose, checkpointed: the next submission resumes
        raise
    finally:
        recorder.close(status)
    _write_json(paths.out / "done.json", done)
    return done


def _stopped_by(cfg: TrainConfig, state: dict[str, Any]) -> str:
    """Why the run ended: its last step, or (DAPO) a rollout budget that cannot pay for another
    batch. Anything else is a bug, not a result to record."""
    if state["step"] == cfg.steps:
        return "completed"
    if budget_spent(cfg, state["rollouts_cumulative"]):
        return "rollout_cap"
    raise RuntimeError(f"the run ended at step {state['step']} of train.steps = {cfg.steps} "
                       "without a reason (a bug: please report it)")


def _train_step(cfg: TrainConfig, policy: Any, sampler: Any, examples: list[Any],
                step: int, *, max_rollouts: int, phases: Phases, shaper: Any = None,
                ) -> tuple[dict[str, float], Any, float, int]:
    """One step: generate (DAPO: refills, at most ``max_rollouts``, what is left of the run's
    budget), update, observe. Returns metrics, the observation, sampler seconds and rollouts
    generated; ``phases`` gets the seconds of each phase."""
    from vade.train.local.update import actor_update  # lazy: torch

    g = cfg.rollouts_per_prompt
    sampler_s = 0.0

    def draw() -> np.ndarray:
        nonlocal sampler_s
        t = time.perf_counter()
        with phases.time("sampler"):
            ids = sampler.select()
        sampler_s += time.perf_counter() - t
        return ids

    def generate(ids: np.ndarray, attempt: int) -> tuple[np.ndarray, Any]:
        return generate_groups(policy.engine, examples, ids, g, temperature=cfg.temperature,
                               max_new_tokens=cfg.max_new_tokens,
                               seed=derive_seed(cfg.seed, step, attempt), phases=phases)

    t0 = time.perf_counter()
    metrics: dict[str, float] = {}
    # MMR1 as published (LengSicong/MMR1 examples/mmr1.yaml: curriculum_update_freq 4,
    # curriculum_rollout_n 8; ray_trainer re-scores the whole training set): when the sampler
    # asks, G' fresh rollouts of every prompt before the draw, counted in this step's rollouts
    # (the cost axis charges what was done). mmr1-stale never asks.
    rescored = 0
    request = sampler.rescore_request() if hasattr(sampler, "rescore_request") else None
    if request is not None:
        pool, n = request
        hits = np.empty(pool.size)
        for lo in range(0, pool.size, _RESCORE_CHUNK):  # bounded memory: a chunk at a time
            part = pool[lo:lo + _RESCORE_CHUNK]
            hits[lo:lo + part.size], _ = generate_groups(
                policy.engine, examples, part, n, temperature=cfg.temperature,
                max_new_tokens=cfg.max_new_tokens,
                seed=derive_seed(cfg.seed, step, _RESCORE_STREAM + lo // _RESCORE_CHUNK),
                phases=phases)
        sampler.observe_rescore(pool, hits, n)
        rescored = int(pool.size * n)
        metrics["mmr1/rescore_rollouts"] = float(rescored)
    advantages = None  # None: GRPO's group advantage
    filtered = None  # DAPO's filter ran (GRESO learns from the groups it drops)
    if cfg.spec.filters:
        res = dynamic_sample(draw, generate, batch_size=cfg.batch_size, group_size=g,
                             max_rollouts=max_rollouts,
                             max_gen_batches=cfg.dapo.max_num_gen_batches)
        batch = StepBatch([(p.payload, p.kept) for p in res.pieces])
        if res.kept_indices.size:
            obs_ids, obs_r = res.kept_indices, res.kept_correct
        else:  # nothing informative within the cap: record what was generated
            obs_ids, obs_r = res.all_indices, res.all_correct
        generated = res.rollouts_generated
        filtered = res
        all_r = res.all_correct
        metrics.update({
            "dapo/num_gen_batches": float(res.gen_batches),
            "dapo/discarded_groups": float(res.discarded_groups),
            "dapo/surplus_groups": float(res.surplus_groups),
            "dapo/kept_groups": float(res.kept_indices.size),
            "dapo/stopped_by_cap": float(res.reason != "full"),
            "dapo/generated_effective_ratio": float(np.mean((all_r > 0) & (all_r < g))),
        })
        if res.reason != "full":
            tqdm.write(f"step {step}: DAPO kept {res.kept_indices.size}/{cfg.batch_size} "
                       f"informative groups ({res.reason}, {generated} rollouts)")
    elif shaper is not None:  # DIVA: each original beside one variant of itself
        ids = draw()
        prepared = shaper.prepare(ids, step)
        correct_all, piece = generate_groups(
            policy.engine, prepared.prompts, np.arange(2 * ids.size), g,
            temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens,
            seed=derive_seed(cfg.seed, step, 0), phases=phases)
        batch = StepBatch([(piece, np.arange(2 * ids.size))])
        advantages = shaper.advantages(prepared, batch.rewards, batch.sample_ids)
        obs_ids, obs_r, generated = ids, correct_all[:ids.size], 2 * ids.size * g
        shaper.update(prepared, correct_all, g)
        variant_r = correct_all[ids.size:]
        metrics.update({
            "diva/level_mean": float(shaper.levels.mean()),
            "diva/variant_accuracy": float(variant_r.mean() / g),
            "diva/effective_ratio_with_variants": float(np.mean((correct_all > 0)
                                                                & (correct_all < g))),
        })
    else:
        ids = draw()
        correct, piece = generate(ids, 0)
        batch = StepBatch([(piece, np.arange(ids.size))])
        obs_ids, obs_r, generated = ids, correct, ids.size * g
    generated += rescored
    t_gen = time.perf_counter() - t0

    t1 = time.perf_counter()
    if len(batch):
        metrics.update(actor_update(policy, batch, cfg, advantages=advantages, phases=phases))
        metrics["critic/score/mean"] = float(batch.rewards.mean())
        metrics["response_length/mean"] = float(batch.response_lengths().mean())
    else:
        metrics["critic/score/mean"] = float(np.mean(obs_r) / g)
    t_update = time.perf_counter() - t1

    t2 = time.perf_counter()
    with phases.time("sampler"):
        obs = (observe_filtered(sampler, filtered) if filtered is not None
               else sampler.observe(obs_ids, obs_r, g))
    sampler_s += time.perf_counter() - t2
    metrics.update(step_metrics(obs, rollouts=generated, sampler_seconds=sampler_s))
    metrics.update({
        "timing_s/gen": t_gen, "timing_s/update": t_update,
        "timing_s/step": time.perf_counter() - t0, **phases.metrics(),
    })
    return metrics, obs, sampler_s, generated
