"""The ``model`` config section as typed, validated objects (one place that knows its keys).

Two kinds: ``tiny`` builds a Qwen2.5-VL-architecture model from scratch (tokenizer, processor,
weights) and warm-starts it on the synthetic ``warmstart`` split, the CPU stand-in for an Instruct
checkpoint; ``pretrained`` names an existing checkpoint (HF id or local folder) and builds nothing.

The architecture defaults are the sizes of ``shared/notes/tiny-rl.md`` (0.95M parameters); the
warm-start defaults are this project's measurement on the three-domain synthetic mix (600 steps
of 32 at lr 5e-4, see ``warmstart.py``). Types and ranges are the schema's (``models.<name>``,
``vade.config_schema``), checked once before any work starts, naming the key; the classes keep
the rules between keys (``mrope_section`` sums to head_dim/2, heads divide the hidden size).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vade.config_schema import build, check

__all__ = ["ModelConfig", "TinyArchConfig", "WarmStartConfig", "model_config_from_section"]


@dataclass(frozen=True)
class TinyArchConfig:
    """Architecture of the tiny Qwen2.5-VL (``model.tiny``)."""

    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 256
    mrope_section: tuple[int, ...] = (4, 6, 6)
    vision_hidden_size: int = 64
    vision_depth: int = 2
    vision_heads: int = 2
    vision_intermediate_size: int = 128
    patch_size: int = 14
    spatial_merge_size: int = 2
    # The processor's pixel budget: 56x56 images map to 4x4 patches -> 4 image tokens.
    min_pixels: int = 56 * 56
    max_pixels: int = 112 * 112
    # Upper bound on the byte-level BPE vocabulary (training stops earlier on a small corpus).
    vocab_size: int = 512
    max_position_embeddings: int = 1024

    def __post_init__(self) -> None:
        # Each key's type and range: the schema's models.<name>.tiny (vade.config_schema); here
        # the rules between keys.
        w = "model.tiny."
        if self.hidden_size % self.num_heads:
            raise ValueError(f"config key '{w}hidden_size' ({self.hidden_size}) must be divisible "
                             f"by '{w}num_heads' ({self.num_heads})")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"config key '{w}num_kv_heads' ({self.num_kv_heads}) must divide "
                             f"'{w}num_heads' ({self.num_heads})")
        if self.vision_hidden_size % self.vision_heads:
            raise ValueError(f"config key '{w}vision_heads' must divide '{w}vision_hidden_size'")
        head_dim = self.hidden_size // self.num_heads
        sec = tuple(self.mrope_section)
        if sum(sec) * 2 != head_dim:
            raise ValueError(f"config key '{w}mrope_section' must sum to head_dim/2 = {head_dim // 2}"
                             f" (hidden_size/num_heads/2), got sum {sum(sec)}")
        object.__setattr__(self, "mrope_section", sec)
        factor = self.patch_size * self.spatial_merge_size
        if self.min_pixels < factor * factor:
            raise ValueError(f"config key '{w}min_pixels' ({self.min_pixels}) must be at least "
                             f"(patch_size x spatial_merge_size)^2 = {factor * factor}")
        if self.max_pixels < self.min_pixels:
            raise ValueError(f"config key '{w}max_pixels' ({self.max_pixels}) must be at least "
                             f"'{w}min_pixels' ({self.min_pixels})")


@dataclass(frozen=True)
class WarmStartConfig:
    """Supervised warm start of the tiny model (``model.warm_start``); steps 0 skips it."""

    steps: int = 600
    lr: float = 5e-4
    batch_size: int = 32
    weight_decay: float = 0.0
    warmup_steps: int = 10
    # Held-out share of warmstart.parquet used to report the accuracy after the warm start.
    eval_fraction: float = 0.1
    # Share of warm-start training rows replaced by a DIVA variant of themselves (hint,
    # rephrasing, perturbation, question in the image; same answer), so that the tiny model, the
    # stand-in for an Instruct model, can read hints and rephrasings. 0 keeps the warm start as
    # it was (the demo's default); synthetic data only.
    variant_fraction: float = 0.0
    # Processes sharing each batch (vade.models.data_parallel): 2 uses both cores of the demo
    # machine while nothing else can run. The result equals one process's up to float rounding.
    processes: int = 1


@dataclass(frozen=True)
class ModelConfig:
    """The ``model`` section: what policy the pipeline starts from."""

    kind: str = "tiny"
    name_or_path: str | None = None
    threads: int = 1  # torch threads on CPU (tiny-rl.md: 1 thread ~5x faster beside other work)
    tiny: TinyArchConfig = field(default_factory=TinyArchConfig)
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)

    def __post_init__(self) -> None:
        if self.kind == "pretrained" and not self.name_or_path:
            raise ValueError("config key 'model.name_or_path' is required when model.kind is "
                             "'pretrained' (an HF id such as Qwen/Qwen2.5-VL-3B-Instruct or a folder)")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tiny"]["mrope_section"] = list(self.tiny.mrope_section)
        return d


def model_config_from_section(values: Mapping[str, Any]) -> ModelConfig:
    """The ``model`` section (one entry of ``models``), checked against the schema (a verb's
    ``kind`` defaults to tiny), then the rules between keys."""
    values = dict(values or {})
    check(values, "model", defaults=True)
    tiny = build(TinyArchConfig, values.pop("tiny", None) or {})
    warm = build(WarmStartConfig, values.pop("warm_start", None) or {})
    return build(ModelConfig, {**values, "tiny": tiny, "warm_start": warm})
