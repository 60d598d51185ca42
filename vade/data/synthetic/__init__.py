"""Synthetic multimodal tasks rendered locally: the CPU demo's and the tests' training data.

Three domains, one question template each, answers of one token (a digit or a letter), a strong
visual cue whose strength is set per item by a difficulty ``d`` in [0, 1]: a ~1M-parameter
Qwen2.5-VL learns such tasks from 56x56 images in a few hundred SFT steps (shared/notes/tiny-rl.md),
while question-conditioned mixes stayed at chance. See ``render`` for the tasks, ``generate`` for
splits and determinism.
"""

from vade.data.synthetic.generate import build_synthetic

__all__ = ["build_synthetic"]
