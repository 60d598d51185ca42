"""Synthetic multimodal tasks rendered locally: the CPU demo's and the tests' training data.

Three domains, one question template each, answers of one token (a digit or a letter), a strong
visual cue whose strength is set per item by a difficulty ``d`` in [0, 1]. Each domain has its own
kind of image, so the task is told by the picture, not by the question (tiny-rl.md: mixes told
apart only by the question stayed at chance). In 600 warm-start steps at lr 5e-4 the ~1M-parameter
tiny Qwen2.5-VL learns the balance well and the other two in part (``vade.models.warmstart``). See
``render`` for the tasks, ``generate`` for splits and determinism.
"""

from vade.data.synthetic.generate import build_synthetic

__all__ = ["build_synthetic"]
