"""VADE: variance-aware dynamic sampling for group-based RL of vision-language models."""

__version__ = "0.1.0"
