"""The trained policy, its optimizer, the frozen reference and the generation engine, together.

One object so the loop and the checkpoint code need not know how ``vade.models`` loads a model
or how ``vade.rollout`` wraps it. The reference policy for the KL loss is the starting model
(``--model``), loaded a second time and frozen; on resume it is loaded from the same path again,
so checkpoints carry only the trained weights and the optimizer.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any

from vade.models.build import resolve_model_path
from vade.models.policy import load_policy, token_logprobs
from vade.rollout import HFEngine
from vade.train.config import TrainConfig

__all__ = ["LocalPolicy", "ModelOptimizerState"]


class ModelOptimizerState:
    """What a checkpoint holds of any trainer policy (the real one and the test toy): the
    trained weights and the optimizer; the reference model is reloaded, never saved."""

    model: Any
    optimizer: Any

    def state_dict(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


class LocalPolicy(ModelOptimizerState):
    """``model`` (trained), ``ref_model`` (frozen start, or None without a KL loss),
    ``optimizer``, ``engine`` (``HFEngine``) and ``token_logprobs`` at the rollout temperature."""

    def __init__(self, policy: Any, ref_model: Any | None, cfg: TrainConfig) -> None:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        self.policy = policy
        self.model = policy.model
        self.ref_model = ref_model
        self.engine = HFEngine(policy, batch_size=cfg.generation_batch_size)
        # verl's actor divides logits by the rollout temperature: the behaviour policy's log-probs
        self.token_logprobs = functools.partial(token_logprobs, temperature=cfg.temperature)
        self.optimizer = torch.optim.AdamW(
            [p for p in self.model.parameters() if p.requires_grad], lr=cfg.lr,
            weight_decay=cfg.weight_decay)
        self.model.eval()

    @classmethod
    def load(cls, path: str | Path, cfg: TrainConfig) -> LocalPolicy:
        resolved = resolve_model_path(path)
        policy = load_policy(resolved, threads=cfg.threads)
        ref = None
        if cfg.algo.kl_loss_coef > 0:
            ref = load_policy(resolved, threads=cfg.threads).model
            ref.eval()
            ref.requires_grad_(False)
        return cls(policy, ref, cfg)

    def save_final(self, folder: Path) -> None:
        """``save_pretrained`` of model + processor, written under a temporary name and renamed,
        so evaluation never sees half a model."""
        tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        self.policy.save(tmp)
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
            os.replace(folder, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, folder)
