"""GRESO: pre-rollout skipping of prompts that were zero-variance in a row, as published and as
this project's earlier skip-only variant (``greso-skip``, an ablation)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from vade.checks import check_number
from vade.sampling.observation import Observation, validate_observation
from vade.sampling.peers.base import PeerSampler

__all__ = ["GresoSampler", "GresoSkipSampler"]


class GresoSampler(PeerSampler):
    """Walk a shuffled epoch and skip, before rollout, prompts that keep giving r in {0, G}.

    The published method (Infini-AI-Lab/GRESO at b277843; paths below are in that repository):

    * skip rule: a prompt whose last k rollout groups were all correct (easy) or all wrong
      (hard) is skipped with probability 1 - max(p^k, 0.01), p = p_easy or p_hard
      (``verl/trainer/ttis/presampling_selector.py:102-147``; easy is checked first, :239-246);
    * every generated group is recorded before any filtering
      (``verl/trainer/ppo/ray_trainer.py:1131-1132``), then DAPO's dynamic-sampling filter drops
      the zero-variance groups and generation continues until B informative groups exist
      (``ttis.type=dynamic_sampling`` in all three ``train-scripts/*_greso.sh``;
      ``ray_trainer.py:1141-1182``). Here that filter is ``vade.train.dapo``: the method table's
      ``greso`` row has shaping ``dapo``, so it runs under DAPO's rollout cap, and the trainer
      hands ``observe`` every generated group of the step (``filter_feedback``);
    * adaptation, once per training step, over all groups generated in it
      (``ray_trainer.py:1112-1113, 1200-1219``): a share of all-correct groups at or above
      target_zero_variance / 3 lowers p_easy by 0.01, else raises it; all-wrong against 2/3 of
      the target likewise for p_hard (targets: ``ray_trainer.py:298-299``, 0.25 in every
      script); p stays in [0.05, 0.95] (``ray_trainer.py:1203-1219``) and adapts only after
      epoch 0 (``epoch > 0``, :1207); both start at 0.5 (``+data.p_easy=0.5 +data.p_hard=0.5``,
      ``train-scripts/math_qwen_1_5b_dm_greso.sh:19-20``). So p never reaches 1.0.

    Here: the epoch order is a seeded shuffle; walking it, each prompt is kept with probability
    max(p^k, ``min_keep``) and the first B kept prompts form one draw (a skipped prompt is not
    seen again that epoch, as GRESO's dataloader passes each prompt once an epoch). Epochs
    roll over without repeating a prompt within a draw; a fresh epoch that cannot fill a draw is
    completed at random. Several draws in one step (the filter's refills) continue the same
    walk. Easy is r = G and hard r = 0: GRESO's thresholds on the mean reward (>= 0.98, <= 0.11;
    ``presampling_selector.py:112, 137``) are the same for G <= 9 (the study's G is 8).

    Difference that remains: GRESO generates a fixed oversized batch (``sampling_batch_size``,
    1.5 B in its scripts) and sizes its refills adaptively (``ray_trainer.py:1149-1166``); here
    each draw is B surviving prompts, cut to what the rollout cap allows.

    ``Observation``: ``p_drawn`` is NaN (no estimate), ``gain`` the keep probability at the draw.
    """

    kind = "greso"
    # True: the trainer passes every generated group of the step to ``observe`` (GRESO records
    # rewards before its filter); the history still logs only the groups trained on.
    filter_feedback: ClassVar[bool] = True
    # a share equal to its target lowers p (``>=``, ray_trainer.py:1211, 1216)
    _lower_at_target: ClassVar[bool] = True
    DEFAULTS: ClassVar[dict[str, float]] = {
        "target_zero_variance": 0.25, "easy_share": 1.0 / 3.0, "initial_keep": 0.5,
        "adjust_step": 0.01, "min_keep": 0.01, "p_min": 0.05, "p_max": 0.95,
        "adapt_from_epoch": 1,
    }
    _STATE_ARRAYS = ("streak", "_perm")
    _STATE_SCALARS = ("p_easy", "p_hard", "_cursor", "epoch", "_pending")

    def __init__(
        self,
        n_samples: int,
        batch_size: int,
        *,
        target_zero_variance: float | None = None,
        easy_share: float | None = None,
        initial_keep: float | None = None,
        adjust_step: float | None = None,
        min_keep: float | None = None,
        p_min: float | None = None,
        p_max: float | None = None,
        adapt_from_epoch: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(n_samples, batch_size, seed)
        given = {"target_zero_variance": target_zero_variance, "easy_share": easy_share,
                 "initial_keep": initial_keep, "adjust_step": adjust_step,
                 "min_keep": min_keep, "p_min": p_min, "p_max": p_max,
                 "adapt_from_epoch": adapt_from_epoch}
        v = {k: self.DEFAULTS[k] if x is None else x for k, x in given.items()}
        check_number("target_zero_variance", v["target_zero_variance"], 0.0, 1.0)
        check_number("easy_share", v["easy_share"], 0.0, 1.0)
        check_number("min_keep", v["min_keep"], 0.0, 1.0, lo_open=True)
        check_number("p_min", v["p_min"], 0.0, 1.0, lo_open=True)
        check_number("p_max", v["p_max"], v["p_min"], 1.0)
        check_number("initial_keep", v["initial_keep"], v["p_min"], v["p_max"])
        check_number("adjust_step", v["adjust_step"], 0.0, 1.0)
        check_number("adapt_from_epoch", v["adapt_from_epoch"], 0, 10**9, integer=True)
        self.target_zero_variance = float(v["target_zero_variance"])
        self.easy_share = float(v["easy_share"])
        self.initial_keep = float(v["initial_keep"])
        self.adjust_step = float(v["adjust_step"])
        self.min_keep = float(v["min_keep"])
        self.p_min = float(v["p_min"])
        self.p_max = float(v["p_max"])
        self.adapt_from_epoch = int(v["adapt_from_epoch"])
        self.p_easy = self.initial_keep
        self.p_hard = self.initial_keep
        # +k: k consecutive all-correct observations; -k: all-wrong; 0: informative or unseen.
        self.streak = np.zeros(self.n_samples, dtype=np.int64)
        self.epoch = 0
        self._perm = self._rng.permutation(self.n_samples)
        self._cursor = 0
        self._pending = False  # a draw since the last observe (refills add to it)

    def _hyper(self) -> dict[str, Any]:
        return {"target_zero_variance": self.target_zero_variance,
                "easy_share": self.easy_share, "initial_keep": self.initial_keep,
                "adjust_step": self.adjust_step, "min_keep": self.min_keep,
                "p_min": self.p_min, "p_max": self.p_max,
                "adapt_from_epoch": self.adapt_from_epoch}

    def sample_state(self) -> dict[str, np.ndarray]:
        """The streak (+k all-correct, -k all-wrong in a row) and the keep probability it gives."""
        return {"streak": self.streak, "keep_probability": self.keep_probability()}

    def keep_probability(self) -> np.ndarray:
        """Per prompt: max(p^k, min_keep), p = p_easy for easy streaks, p_hard for hard ones."""
        base = np.where(self.streak > 0, self.p_easy, self.p_hard)
        return np.maximum(base ** np.abs(self.streak), self.min_keep)

    def _new_epoch(self) -> None:
        self._perm = self._rng.permutation(self.n_samples)
        self._cursor = 0
        self.epoch += 1

    def select(self) -> np.ndarray:
        """The next B prompts of the epoch order that survive their skip draw."""
        keep = self.keep_probability()
        taken = np.zeros(self.n_samples, dtype=bool)
        parts: list[np.ndarray] = []
        need = self.batch_size
        fresh_epochs = 0
        while need > 0:
            if self._cursor >= self.n_samples:
                if fresh_epochs == 1:  # a whole fresh epoch did not fill the batch
                    rest = np.flatnonzero(~taken)
                    parts.append(self._rng.choice(rest, size=need, replace=False))
                    break
                self._new_epoch()
                fresh_epochs += 1
            rest = self._perm[self._cursor:]
            ok = (self._rng.random(rest.size) < keep[rest]) & ~taken[rest]
            pos = np.flatnonzero(ok)[:need]
            parts.append(rest[pos])
            taken[rest[pos]] = True
            need -= pos.size
            self._cursor = self._cursor + int(pos[-1]) + 1 if need == 0 else self.n_samples
        chosen = np.concatenate(parts)
        p, gain = np.full(chosen.size, np.nan), keep[chosen]
        if self._pending:  # a refill within the step: the observation covers every draw
            sel, p0, g0 = self._last
            self._remember(np.concatenate([sel, chosen]), np.concatenate([p0, p]),
                           np.concatenate([g0, gain]))
        else:
            self._remember(chosen, p, gain)
        self._pending = True
        return chosen.astype(np.int64)

    def _adapt(self, p: float, share: float, target: float) -> float:
        # a share equal to its target up to rounding (2/12 vs 0.25 * 2/3) counts as equal
        high = share >= target - 1e-12 if self._lower_at_target else share > target + 1e-12
        moved = p - self.adjust_step if high else p + self.adjust_step
        return float(np.clip(moved, self.p_min, self.p_max))

    def observe(
        self, indices: np.ndarray, correct: np.ndarray, rollouts: np.ndarray | float
    ) -> Observation:
        """Update the zero-variance streaks; from ``adapt_from_epoch`` on, move p_easy / p_hard
        toward their targets (shares over the groups observed: every group generated in the
        step when the trainer runs the filter)."""
        idx, r, g = validate_observation(indices, correct, rollouts, self.n_samples)
        easy = r >= g
        hard = r <= 0
        s = self.streak[idx]
        self.streak[idx] = np.where(easy, np.maximum(s, 0) + 1,
                                    np.where(hard, np.minimum(s, 0) - 1, 0))
        if self.epoch >= self.adapt_from_epoch:
            target_easy = self.target_zero_variance * self.easy_share
            self.p_easy = self._adapt(self.p_easy, float(easy.mean()), target_easy)
            self.p_hard = self._adapt(self.p_hard, float(hard.mean()),
                                      self.target_zero_variance - target_easy)
        self.step += 1
        self._pending = False
        p, gain = self._last_for(idx)
        return Observation(step=self.step, indices=idx, correct=r, rollouts=g, p_drawn=p,
                           gain=gain)


class GresoSkipSampler(GresoSampler):
    """``greso-skip`` (an ablation, not GRESO): the skip rule alone, without DAPO's filter.

    What this project ran as "GRESO" before the published method was implemented: a batch may
    hold zero-variance groups (as VADE's may), and the settings are this project's: the target
    0.25 split 1/2 easy and 1/2 hard, p adapting from the first step, within [0.01, 1], a share
    above (not at) its target lowering p. Kept to show what the filter contributes.
    """

    kind = "greso-skip"
    filter_feedback: ClassVar[bool] = False
    _lower_at_target: ClassVar[bool] = False
    DEFAULTS: ClassVar[dict[str, float]] = {
        **GresoSampler.DEFAULTS, "easy_share": 0.5, "p_min": 0.01, "p_max": 1.0,
        "adapt_from_epoch": 0,
    }
