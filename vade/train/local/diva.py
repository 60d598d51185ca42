"""DIVA-GRPO on the local trainer: each chosen original trains beside one variant of itself.

The sampler (uniform for ``diva``, VADE for ``vade-diva``) chooses B originals; this module gives
each one variant at an offset drawn from its difficulty level (``vade.diva``), so a step
generates G rollouts for 2B prompts (every one of them on the cost axis), scores them with the
DIVA advantage (local group: one prompt's rollouts; global group: an original and its variant),
moves each original's level by the step's mean reward over both, and reports to the sampler the
original's own group only (``vade-diva``: VADE's posterior stays a posterior of the original).

Every random choice for (seed, step, sample) comes from its own stream, so a resumed step
rebuilds exactly the variants of the interrupted one; the levels travel in the checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vade.data.splits import rng_for
from vade.data.variants import variant_example
from vade.diva import LEVELS, diva_advantages, draw_offsets, initial_levels, update_levels
from vade.diva.offsets import plan_variant

__all__ = ["DivaShaper", "DivaStep"]


class DivaStep:
    """One step's prompts: originals first, then their variants in the same order."""

    def __init__(self, ids: np.ndarray, prompts: list[Any], offsets: np.ndarray,
                 prompt_levels: np.ndarray) -> None:
        self.ids = ids
        self.prompts = prompts
        self.offsets = offsets
        self.prompt_levels = prompt_levels  # (2B,) level each prompt is scored at


class DivaShaper:
    """Difficulty levels of the training rows and the variants they ask for."""

    def __init__(self, examples: Sequence[Any], levels: np.ndarray, *, seed: int, k: float,
                 low_reward: float, low_reward_scale: float) -> None:
        lv = np.asarray(levels, dtype=np.int8)
        if lv.shape != (len(examples),):
            raise ValueError(f"{lv.size} levels for {len(examples)} training rows")
        self.examples = examples
        self.levels = lv
        self.seed = int(seed)
        self.k, self.low_reward, self.low_reward_scale = k, low_reward, low_reward_scale
        # the last step's (sample ids, levels after, offsets, mean accuracy over the original's
        # and its variant's rollouts), for the run's DuckDB history
        self.last_update: tuple[np.ndarray, ...] | None = None

    @classmethod
    def from_difficulty(cls, examples: Sequence[Any], alpha: np.ndarray, beta: np.ndarray,
                        seed: int, diva: Any) -> DivaShaper:
        """Levels from the initial rollouts (alpha = r, beta = G - r)."""
        return cls(examples, initial_levels(alpha, np.asarray(alpha) + np.asarray(beta)),
                   seed=seed, k=diva.k, low_reward=diva.low_reward,
                   low_reward_scale=diva.low_reward_scale)

    def prepare(self, ids: np.ndarray, step: int) -> DivaStep:
        """The originals ``ids`` and one variant of each, from per-(seed, step, sample) streams."""
        ids = np.asarray(ids, dtype=np.int64)
        originals = [self.examples[int(i)] for i in ids]
        offsets = np.empty(ids.size, dtype=np.int8)
        variants, variant_levels = [], np.empty(ids.size, dtype=np.int8)
        for j, (i, ex) in enumerate(zip(ids, originals)):
            rng = rng_for(self.seed, "diva", str(step), str(int(i)))
            level = int(self.levels[i])
            offsets[j] = draw_offsets(np.array([level]), rng)[0]
            variants.append(variant_example(ex, int(offsets[j]), level, rng))
            variant_levels[j] = plan_variant(level, int(offsets[j])).level
        return DivaStep(ids, originals + variants, offsets,
                        np.concatenate([self.levels[ids], variant_levels]))

    def advantages(self, prepared: DivaStep, rewards: np.ndarray,
                   prompt_pos: np.ndarray) -> np.ndarray:
        """The DIVA advantage per rollout row; ``prompt_pos`` indexes ``prepared.prompts``."""
        pos = np.asarray(prompt_pos, dtype=np.int64)
        return diva_advantages(rewards, pos, pos % prepared.ids.size,
                               prepared.prompt_levels[pos], k=self.k,
                               low_reward=self.low_reward,
                               low_reward_scale=self.low_reward_scale)

    def update(self, prepared: DivaStep, correct: np.ndarray, group_size: int) -> np.ndarray:
        """Move each original's level by the mean reward over its and its variant's rollouts;
        returns the new levels of ``prepared.ids``."""
        b = prepared.ids.size
        c = np.asarray(correct, dtype=float)
        mean = (c[:b] + c[b:]) / (2.0 * group_size)
        new = update_levels(self.levels[prepared.ids], mean)
        self.levels[prepared.ids] = new
        self.last_update = (prepared.ids, new, prepared.offsets, mean)
        return new

    def state_dict(self) -> dict[str, Any]:
        return {"levels": self.levels.copy(), "max_level": LEVELS}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        levels = np.asarray(state["levels"], dtype=np.int8)
        if levels.shape != self.levels.shape:
            raise ValueError(f"checkpoint holds {levels.size} DIVA levels, the data has "
                             f"{self.levels.size} rows")
        self.levels = levels.copy()
