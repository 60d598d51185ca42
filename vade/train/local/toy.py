"""A toy policy with the local trainer's policy interface, for testing the loop's plumbing fast.

Not a language model: each prompt has four logits (answers A-D: a per-prompt embedding plus a
shared bias), a response is one answer letter written as ``\\boxed{X}`` plus one padding
position (so masks matter), and rewards come from ``vade.rewards`` like any other response.
It learns with the same loss, optimizer, sampler, logging and checkpoints as the real model,
in milliseconds per step, which is what resume-equivalence and DAPO integration tests need;
"does RL work on a VLM" is tested with the tiny Qwen2.5-VL instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vade.train.config import TrainConfig
from vade.train.local.policy import ModelOptimizerState

__all__ = ["ToyPolicy"]

LETTERS = "ABCD"
_TABLE = 4096  # prompt ids are hashed into this many embedding rows


@dataclass
class ToyRollouts:
    example_pos: np.ndarray
    texts: list[str]
    response_ids: Any      # (N, 2) long: letter, pad
    response_mask: Any     # (N, 2) float: 1, 0
    prompt_inputs: Any     # (N,) long: prompt id

    def select(self, rows: Sequence[int]) -> ToyRollouts:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        idx = torch.as_tensor(list(rows), dtype=torch.long)
        return ToyRollouts(self.example_pos[np.asarray(rows, dtype=np.int64)],
                           [self.texts[i] for i in rows], self.response_ids[idx],
                           self.response_mask[idx], self.prompt_inputs[idx])


def _model(init_seed: int) -> Any:
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    class Toy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            gen = torch.Generator().manual_seed(init_seed)
            self.emb = torch.nn.Parameter(torch.randn(_TABLE, 4, generator=gen) * 1.5)
            self.bias = torch.nn.Parameter(torch.zeros(4))

        def forward(self, prompt_ids: Any) -> Any:
            return self.emb[prompt_ids % _TABLE] + self.bias

    return Toy()


def token_logprobs(model: Any, prompt_inputs: Any, response_ids: Any, response_mask: Any) -> Any:
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    logp = torch.log_softmax(model(prompt_inputs), dim=-1)
    first = logp.gather(1, response_ids[:, :1]).squeeze(1)
    return torch.stack([first, torch.zeros_like(first)], dim=1) * response_mask


class ToyEngine:
    def __init__(self, model: Any) -> None:
        self.model = model

    def generate(self, examples: Sequence[Any], n: int, *, temperature: float,
                 max_new_tokens: int, seed: int) -> ToyRollouts:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        ids = torch.tensor([ex.index for ex in examples], dtype=torch.long)
        with torch.no_grad():
            logits = self.model(ids)
        if temperature == 0:
            picks = logits.argmax(-1, keepdim=True).repeat(1, n)
        else:
            gen = torch.Generator().manual_seed(int(seed))
            picks = torch.multinomial(torch.softmax(logits / temperature, -1), n,
                                      replacement=True, generator=gen)
        picks = picks.reshape(-1)
        pos = np.repeat(np.arange(len(examples)), n)
        resp = torch.stack([picks, torch.zeros_like(picks)], dim=1)
        mask = torch.tensor([[1.0, 0.0]]).repeat(len(pos), 1)
        texts = [f"The answer is \\boxed{{{LETTERS[int(k)]}}}" for k in picks]
        return ToyRollouts(pos, texts, resp, mask, ids[torch.as_tensor(pos)])


class ToyPolicy(ModelOptimizerState):
    """The bundle the loop expects: model, optimizer, ref_model, engine, token_logprobs."""

    def __init__(self, cfg: TrainConfig, init_seed: int = 1234) -> None:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        self.model = _model(init_seed)
        self.ref_model = None
        if cfg.algo.kl_loss_coef > 0:
            self.ref_model = _model(init_seed).requires_grad_(False)
        self.engine = ToyEngine(self.model)
        self.token_logprobs = token_logprobs
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr,
                                           weight_decay=cfg.weight_decay)

    @classmethod
    def load(cls, path: str | Path, cfg: TrainConfig) -> ToyPolicy:
        """``path`` is ignored: every run starts from the same seeded toy model."""
        return cls(cfg)

    def save_final(self, folder: Path) -> None:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".toy.pt.tmp-{os.getpid()}"
        torch.save(self.model.state_dict(), tmp)
        os.replace(tmp, folder / "toy.pt")
