"""Run one selection method for T training steps on the simulated environment.

One budget accounting for every method: a rollout is one generated response, counted whether it
is trained on, filtered out (DAPO), spent on re-scoring (MMR1) or on VADE's optional initial
difficulty rollouts (Algorithm 1, lines 1-4). Every method trains for the same number of steps,
as in the paper; what differs is how many rollouts each step costs and how informative the
trained groups are, which is what the curves and the rollouts-to-target table compare.

Methods:

* ``vanilla``: uniform epoch shuffling (``UniformSampler``), B groups trained per step.
* ``dapo``: DAPO dynamic sampling (``vade.train.dapo.dynamic_sample``, generate-then-filter):
  draw B prompts from the uniform dataloader, generate G rollouts each, drop groups with r in
  {0, G}, repeat until B
  informative groups are collected or the next round would exceed ``dapo_cap`` times the
  rollouts of a plain step (B * G); train on at most B informative groups. The effective ratio
  of a DAPO step is (informative groups trained) / B: short batches show up as a lower ratio.
* ``vade``, ``symmetric``, ``greedy``, ``last-update``: ``make_sampler`` (VADE and the Table 2
  ablations); options ``lambda1``/``lambda2``.
* the peers of ``vade.sampling.peers`` (``mopps``, ``greso``, ``mmr1``, ``sec`` as published,
  and ``mopps-prior``, ``greso-skip``, ``sec-passrate``); options are their constructor's
  keyword arguments. ``greso`` runs under DAPO's filter and cap like ``dapo``, with GRESO's skip
  rule as the draw (``vade.methods``: shaping ``dapo``). SEC's arms are the environment's
  difficulty levels (a label that costs nothing); ``sec-passrate`` bins measured initial pass
  rates and ``mopps-prior`` starts from the initial successes, both paying N x G rollouts at
  step 1; MMR1 pays each re-scoring pass (8 rollouts per prompt every 4 steps, the first at
  step 1).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from vade import methods as method_table
from vade.checks import check_number
from vade.sampling import UniformSampler, make_sampler
from vade.sampling.factory import SAMPLER_OPTIONS
from vade.sampling.peers import PEERS, difficulty_categories
from vade.simulate.dynamics import DynamicsParams, PassRateEnv
from vade.train.dapo import dynamic_sample, observe_filtered

__all__ = ["CURVES", "METHODS", "RunSettings", "build_sampler", "method_options", "run_method"]

# VADE and its Table 2 ablations: every named sampler method except the uniform baseline.
VADE_FAMILY = tuple(m for m, overrides in SAMPLER_OPTIONS.items() if overrides is not None)
METHODS = ("vanilla", "dapo", *VADE_FAMILY, *PEERS)
# the peers that start from the initial difficulty rollouts (paid N x G at step 1)
READS_INITIAL = tuple(m for m in PEERS if method_table.get(m).reads_difficulty and m != "mmr1")
FILTERED = tuple(m for m in PEERS if method_table.get(m).filters)  # under DAPO's filter
_DATA_ARGS = ("seed", "categories", "initial_correct", "initial_failed")  # not options
# Per-step arrays returned by run_method, in this order (also the columns of sim_steps).
CURVES = ("effective_ratio", "mean_pass_rate", "rollouts", "cumulative_rollouts", "n_trained")


@dataclass(frozen=True)
class RunSettings:
    """How every method is run: batch size, steps, DAPO's cap, VADE's initial rollouts.

    Defaults follow the paper: B = 512 and 15 epochs of 9,471 samples (18 full batches each,
    270 steps); DAPO's generation capped at 3x a plain step; VADE without initial rollouts
    (a flat prior), so that it costs exactly B * G rollouts per step like vanilla.
    """

    batch_size: int = 512
    steps: int = 270
    dapo_cap: float = 3.0
    initial_rollouts: bool = False

    def __post_init__(self) -> None:
        check_number("batch_size", self.batch_size, 1, 10**9, integer=True)
        check_number("steps", self.steps, 1, 10**9, integer=True)
        check_number("dapo_cap", self.dapo_cap, 1.0, 1e6)
        if not isinstance(self.initial_rollouts, bool):
            raise ValueError(f"initial_rollouts must be true or false, "
                             f"got {self.initial_rollouts!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def method_options(method: str) -> tuple[str, ...]:
    """The option names a method accepts (its sampler's tunable keyword arguments)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    if method in VADE_FAMILY:
        return ("lambda1", "lambda2")
    if method in PEERS:
        params = inspect.signature(PEERS[method].__init__).parameters.values()
        return tuple(p.name for p in params
                     if p.kind is p.KEYWORD_ONLY and p.name not in _DATA_ARGS)
    return ()


def build_sampler(method: str, env: PassRateEnv, batch_size: int, seed: int,
                  options: Mapping[str, Any] | None = None,
                  initial: np.ndarray | None = None) -> Any:
    """The sampler of ``method`` for this environment (not for ``dapo``, which filters)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(method_options(method)))
    if unknown:
        raise ValueError(f"unknown option {method}.{unknown[0]} "
                         f"(known: {', '.join(method_options(method)) or 'none'})")
    n = env.params.n_samples
    if method == "vanilla":
        return make_sampler("vanilla", n, batch_size, seed=seed)
    if method in VADE_FAMILY:
        g = env.params.group_size
        alpha, beta = (None, None) if initial is None else (initial, g - initial)
        return make_sampler(method, n, batch_size, seed=seed, alpha=alpha, beta=beta,
                            threads=1, **options)
    if method in PEERS:
        return PEERS[method](n, batch_size, seed=seed, **_peer_data(method, env, initial),
                             **options)
    raise ValueError(f"{method!r} is not a sampler")


def _peer_data(method: str, env: PassRateEnv, initial: np.ndarray | None) -> dict[str, Any]:
    """What a peer reads besides its options: SEC's arms (the environment's levels, or bins of
    the measured initial pass rate), MoPPS's optional prior from the initial successes."""
    if method == "sec":
        return {"categories": env.category}
    if method not in READS_INITIAL:
        return {}
    if initial is None:
        raise ValueError(f"{method} starts from the initial rollouts: pass initial")
    g = env.params.group_size
    if method == "sec-passrate":
        return {"categories": difficulty_categories(initial / g)}
    if method == "mmr1-stale":  # the initial rollouts are its only scoring pass
        return {"initial_p": initial / g}
    return {"initial_correct": initial, "initial_failed": g - initial}


def _dapo_step(env: PassRateEnv, drawer: Any, batch_size: int,
               cap: int) -> tuple[np.ndarray, np.ndarray, int]:
    """One step under DAPO's filter (``vade.train.dapo.dynamic_sample``, whole draws) with
    ``drawer`` as the draw: DAPO's uniform stream (told each generation batch, as before) or
    GRESO's skip rule (told the whole step at once, dropped groups included:
    ``observe_filtered``). Returns (idx, r, rollouts) of the informative groups trained on."""
    g = env.params.group_size
    feedback = getattr(drawer, "filter_feedback", False)

    def generate(idx: np.ndarray, attempt: int) -> tuple[np.ndarray, None]:
        r = env.rollout(idx)
        if not feedback:
            drawer.observe(idx, r, g)
        return r, None

    res = dynamic_sample(drawer.select, generate, batch_size=batch_size, group_size=g,
                         max_rollouts=cap, whole_draws=True)
    if feedback:
        observe_filtered(drawer, res)
    return res.kept_indices, res.kept_correct, res.rollouts_generated


def run_method(method: str, dynamics: DynamicsParams, settings: RunSettings, seed: int,
               options: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Train ``settings.steps`` steps with ``method``; per-step curves (see ``CURVES``).

    The environment is seeded by ``seed`` alone, so every method of one seed starts from the
    same dataset (a paired comparison); the sampler gets the same seed (independent streams).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    env = PassRateEnv(dynamics, seed)
    b, g, steps = settings.batch_size, dynamics.group_size, settings.steps
    if b > dynamics.n_samples:
        raise ValueError(f"batch_size = {b} exceeds n_samples = {dynamics.n_samples}")
    out = {name: np.zeros(steps) for name in CURVES}
    upfront = 0
    cap = int(settings.dapo_cap * b * g)
    if method == "dapo":
        if options:
            raise ValueError(f"unknown option dapo.{sorted(options)[0]} (dapo has none; "
                             "its cap is run.dapo_cap)")
        drawer = UniformSampler(dynamics.n_samples, b, seed=seed)
    else:
        initial = None
        if (settings.initial_rollouts and method in VADE_FAMILY) or method in READS_INITIAL:
            initial = env.rollout(np.arange(dynamics.n_samples)).astype(np.float64)
            upfront = dynamics.n_samples * g
        sampler = build_sampler(method, env, b, seed, options, initial)
        rescore = getattr(sampler, "rescore_request", None)
        if method in FILTERED:
            drawer = sampler
    for t in range(steps):
        spent = upfront if t == 0 else 0
        if method == "dapo" or method in FILTERED:
            idx, r, generated = _dapo_step(env, drawer, b, cap)
            spent += generated
            n_informative = idx.size  # all kept groups are informative
        else:
            request = rescore() if rescore is not None else None
            if request is not None:
                ridx, n = request
                sampler.observe_rescore(ridx, env.rollout(ridx, n), n)
                spent += ridx.size * n
            idx = sampler.select()
            r = env.rollout(idx)
            sampler.observe(idx, r, g)
            spent += idx.size * g
            n_informative = int(np.count_nonzero((r > 0) & (r < g)))
        env.train(idx, r)
        out["effective_ratio"][t] = n_informative / b
        out["mean_pass_rate"][t] = env.mean_pass_rate()
        out["rollouts"][t] = spent
        out["n_trained"][t] = idx.size
    out["cumulative_rollouts"] = np.cumsum(out["rollouts"])
    out["step"] = np.arange(1, steps + 1, dtype=np.float64)
    return out
