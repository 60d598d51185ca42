"""DAPO dynamic sampling as a pure function: generate, drop uninformative groups, refill, cap.

DAPO (and verl-recipe's ``dapo_ray_trainer``) fills each training batch with groups that carry a
gradient: a group whose G rewards are all 0 or all 1 gets a zero group-normalised advantage, so it
is dropped and further candidate prompts are generated until ``batch_size`` informative groups
exist. verl-recipe raises once ``max_num_gen_batches`` is exceeded; the paper instead capped DAPO's
rollouts at 3x those of the other methods. Here both limits are stopping rules, never errors: when
one is hit the step trains on the informative groups it has and the reason is reported.

Candidates come from ``draw()`` (the trainer passes its uniform sampler: shuffled epochs, without
replacement within an epoch, seeded and checkpointed), a prompt already generated in the same step
is not generated twice (possible when an epoch ends mid-step), and every generated rollout counts,
kept or not, because that is the cost the comparison at equal rollouts is about.

``draw`` may be any sampler's ``select``, not only the uniform stream: published GRESO draws with
its skip rule and keeps with this filter (``vade.sampling.peers.greso``). A sampler that learns
from the groups the filter drops (``filter_feedback``: GRESO records every generated group
before filtering) is told about all of them by :func:`observe_filtered`, while the observation
the history logs stays the trained groups, as for DAPO.

The simulator (``vade.simulate.runner``) models verl-recipe's loop more literally
(``whole_draws``): every draw is generated as the dataloader gave it, repeats included, and a
draw that does not fit under the cap is not generated at all. Its published numbers rest on that
accounting, so it is an option here rather than a second implementation there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["STOP_REASONS", "DapoPiece", "DapoResult", "dynamic_sample", "observe_filtered"]

T = TypeVar("T")
# full: B informative groups; rollout_cap: the next candidate would pass the rollout cap;
# max_gen_batches: generation batches exhausted; pool_exhausted: no prompt left to try this step
STOP_REASONS = ("full", "rollout_cap", "max_gen_batches", "pool_exhausted")


@dataclass(frozen=True)
class DapoPiece(Generic[T]):
    """One generation batch: prompts, their r (correct out of G), the engine's output, and which
    positions of it went into the training batch."""

    indices: np.ndarray
    correct: np.ndarray
    payload: T
    kept: np.ndarray  # positions into ``indices`` (in order) that were kept


@dataclass(frozen=True)
class DapoResult(Generic[T]):
    pieces: list[DapoPiece[T]]
    rollouts_generated: int
    reason: str
    group_size: int
    discarded_groups: int = 0  # r in {0, G}
    surplus_groups: int = 0    # informative but beyond batch_size (dropped, as verl-recipe does)

    @property
    def gen_batches(self) -> int:
        return len(self.pieces)

    @property
    def kept_indices(self) -> np.ndarray:
        return np.concatenate([p.indices[p.kept] for p in self.pieces]).astype(np.int64)

    @property
    def kept_correct(self) -> np.ndarray:
        return np.concatenate([p.correct[p.kept] for p in self.pieces]).astype(np.float64)

    @property
    def all_indices(self) -> np.ndarray:
        return np.concatenate([p.indices for p in self.pieces]).astype(np.int64)

    @property
    def all_correct(self) -> np.ndarray:
        return np.concatenate([p.correct for p in self.pieces]).astype(np.float64)


def dynamic_sample(
    draw: Callable[[], np.ndarray],
    generate: Callable[[np.ndarray, int], tuple[np.ndarray, T]],
    *,
    batch_size: int,
    group_size: int,
    max_rollouts: int,
    max_gen_batches: int = 0,
    whole_draws: bool = False,
) -> DapoResult[T]:
    """Generate groups until ``batch_size`` informative ones, or a limit stops the step.

    ``draw()`` gives the next candidate prompt ids; ``generate(ids, attempt)`` returns (r per
    prompt, payload) for G rollouts of each id (``attempt`` numbers the generation batches of the
    step, for seeding). At most ``max_rollouts`` rollouts are generated: a candidate batch that
    would pass the cap is cut to fit it. ``max_gen_batches`` = 0 means no limit on batches.

    ``whole_draws`` (the simulator's accounting): a draw is generated whole, prompts already
    generated in the step included, or not at all when ``batch_size`` more prompts would pass
    the cap (so ``draw()`` must give ``batch_size`` ids); a repeat is kept at most once, but every
    informative group generated, repeat or not, counts towards filling the batch.
    """
    if batch_size < 1 or group_size < 2:
        raise ValueError(f"need batch_size >= 1 and group_size >= 2, got {batch_size}, "
                         f"{group_size}")
    if max_rollouts < batch_size * group_size:
        raise ValueError(f"max_rollouts = {max_rollouts} is below one batch of "
                         f"{batch_size} x {group_size} rollouts")
    if max_gen_batches < 0:
        raise ValueError(f"max_gen_batches must be >= 0 (0: no limit), got {max_gen_batches}")
    pieces: list[DapoPiece[T]] = []
    seen: set[int] = set()
    kept: set[int] = set()
    generated = kept_total = informative_total = discarded = surplus = 0
    reason = "full"
    # without whole_draws no prompt repeats, so informative_total < batch_size <=> not yet full
    while informative_total < batch_size:
        if max_gen_batches and len(pieces) >= max_gen_batches:
            reason = "max_gen_batches"
            break
        room = (max_rollouts - generated) // group_size
        if room < (batch_size if whole_draws else 1):
            reason = "rollout_cap"
            break
        drawn = np.asarray(draw(), dtype=np.int64)
        fresh = drawn if whole_draws else np.array(
            [i for i in drawn.tolist() if i not in seen], dtype=np.int64)[:room]
        if fresh.size == 0:
            reason = "pool_exhausted"
            break
        seen.update(fresh.tolist())
        correct, payload = generate(fresh, len(pieces))
        r = np.asarray(correct, dtype=np.float64)
        if r.shape != fresh.shape:
            raise ValueError(f"generate returned {r.shape} rewards for {fresh.size} prompts")
        generated += fresh.size * group_size
        informative = np.flatnonzero((r > 0) & (r < group_size))
        new = np.array([k for k in informative.tolist() if int(fresh[k]) not in kept],
                       dtype=np.int64)
        take = new[: batch_size - kept_total]
        kept.update(fresh[take].tolist())
        discarded += fresh.size - informative.size
        surplus += informative.size - take.size
        kept_total += take.size
        informative_total += informative.size
        pieces.append(DapoPiece(indices=fresh, correct=r, payload=payload, kept=take))
    return DapoResult(pieces=pieces, rollouts_generated=generated, reason=reason,
                      group_size=group_size, discarded_groups=discarded, surplus_groups=surplus)


def observe_filtered(sampler: Any, result: DapoResult[Any]) -> Any:
    """Tell ``sampler`` one filtered step and return the observation the history logs.

    A sampler without ``filter_feedback`` (DAPO's uniform draw) observes the trained groups.
    One with it (GRESO) observes every group generated in the step, first occurrence of a
    repeated prompt only (the simulator's whole draws may repeat one across an epoch's end), and
    the returned observation is cut to the trained groups. With no trained group at all (nothing
    informative within the cap) every generated group is observed and logged.
    """
    g = result.group_size
    kept = result.kept_indices
    if kept.size and not getattr(sampler, "filter_feedback", False):
        return sampler.observe(kept, result.kept_correct, g)
    first = np.sort(np.unique(result.all_indices, return_index=True)[1])
    obs = sampler.observe(result.all_indices[first], result.all_correct[first], g)
    if not kept.size:
        return obs
    pos = {int(i): k for k, i in enumerate(obs.indices.tolist())}
    take = np.array([pos[int(i)] for i in kept.tolist()], dtype=np.int64)
    cut = {f.name: getattr(obs, f.name)[take] for f in fields(obs)
           if isinstance(getattr(obs, f.name), np.ndarray)}
    cut["correct"] = result.kept_correct  # the trained group (a repeat's first may differ)
    return replace(obs, **cut)
