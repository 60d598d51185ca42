"""The shapes of the models a config names: what the memory estimate and the parallelism checks
need, read from the staged ``config.json`` when there is one, else from a table.

Why a table too: ``vade plan`` runs on a login node before anything is staged, and a wrong
tensor-parallel size or a layout that cannot fit should be refused there. The table's rows are
the models' own Hugging Face ``config.json`` values (the text config for the VL models) and the
parameter counts on their model cards.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KNOWN", "ModelShape", "shape_of"]


@dataclass(frozen=True)
class ModelShape:
    name: str
    params: float           # every parameter (vision tower included)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    source: str
    intermediate: int = 0   # the MLP's (SwiGLU) inner size; 0: unknown, taken as 4 x hidden
    tied: bool = False      # lm_head shares the embedding's weights (tie_word_embeddings)

    @property
    def mlp(self) -> int:
        return self.intermediate or 4 * self.hidden

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """K and V of every layer for one token (bf16), the whole model (before TP)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes

    def check_tensor_parallel(self, tp: int, key: str) -> str | None:
        """vLLM shards attention heads over TP ranks: TP must divide the heads (and the KV heads
        must divide evenly or be replicated: TP a multiple of them)."""
        if self.heads % tp:
            return (f"{key} = {tp} does not divide {self.name}'s {self.heads} attention heads: "
                    f"use one of {[d for d in (1, 2, 4, 8, 16) if self.heads % d == 0]}")
        if self.kv_heads % tp and tp % self.kv_heads:
            return (f"{key} = {tp} neither divides nor is a multiple of {self.name}'s "
                    f"{self.kv_heads} KV heads")
        return None


_CARD = "the model's config.json on the hub and its model card's parameter count"
KNOWN: dict[str, ModelShape] = {s.name: s for s in (
    ModelShape("Qwen2.5-VL-3B-Instruct", 3.75e9, 36, 2048, 16, 2, 151936, _CARD, 11008, True),
    ModelShape("Qwen2.5-VL-7B-Instruct", 8.29e9, 28, 3584, 28, 4, 152064, _CARD, 18944),
    ModelShape("Qwen2.5-7B-Instruct", 7.62e9, 28, 3584, 28, 4, 152064, _CARD, 18944),
    ModelShape("Qwen2.5-72B-Instruct", 72.7e9, 80, 8192, 64, 8, 152064, _CARD, 29568),
)}


def _from_config_json(path: Path, name: str, params: float) -> ModelShape | None:
    try:
        cfg: Mapping[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    text = cfg.get("text_config") or cfg

    def get(key: str) -> Any:   # VL configs keep some keys on top of text_config
        return text.get(key, cfg.get(key))

    try:
        return ModelShape(name, params, int(get("num_hidden_layers")), int(get("hidden_size")),
                          int(get("num_attention_heads")),
                          int(get("num_key_value_heads") or get("num_attention_heads")),
                          int(get("vocab_size")), str(path), int(get("intermediate_size") or 0),
                          bool(get("tie_word_embeddings")))
    except (TypeError, ValueError):
        return None


def shape_of(name_or_path: str, cache_dir: str | Path | None = None) -> ModelShape | None:
    """The shape of a hub id or local folder: its ``config.json`` (a local folder, or the staged
    hub cache's newest snapshot) when readable, else the table; None when neither knows it."""
    base = str(name_or_path).rstrip("/").split("/")[-1]
    known = KNOWN.get(base)
    params = known.params if known else None
    candidates = [Path(name_or_path) / "config.json"]
    if cache_dir is not None and "/" in str(name_or_path):
        repo = Path(cache_dir) / "hub" / ("models--" + str(name_or_path).replace("/", "--"))
        candidates += sorted(repo.glob("snapshots/*/config.json"),
                             key=lambda p: p.stat().st_mtime, reverse=True)
    if params is not None:
        for path in candidates:
            if path.is_file():
                found = _from_config_json(path, base, params)
                if found:
                    return found
    return known
