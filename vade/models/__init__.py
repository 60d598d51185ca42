"""The policy model: a tiny Qwen2.5-VL built here (CPU demo) or a pretrained checkpoint.

Modules: ``config`` (the ``model`` section), ``tokenizer`` (byte-level BPE with Qwen's chat
tokens and template), ``tiny`` (model + processor factory), ``warmstart`` (supervised warm
start), ``build`` (the ``models/base`` folder), ``policy`` (load, encode, teacher-forced
log-probs: the trainer's interface), ``command`` (``vade build-model``), ``testing`` (fixtures).
No heavy import happens at package import.
"""

from vade.models.config import (
    ModelConfig,
    TinyArchConfig,
    WarmStartConfig,
    model_config_from_section,
)

__all__ = ["ModelConfig", "TinyArchConfig", "WarmStartConfig", "model_config_from_section"]
