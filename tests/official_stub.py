"""A stand-in for MathVerse's official prompt file (``evaluation/prompts.py``), staged as
``vade prefetch`` stages the real one, for the tests of the judged tasks.

Stand-in: the prompt text (short and ours, with the official placeholders ``{question}``,
``{gt}``, ``{extraction}`` and doubled braces, and a trailing "7." as the real extraction prompt
has) and the pinned sha256, which is the stand-in's. Real: the staging layout, the sha256 check,
the ``ast`` reading, and the official test-prompt assembly around the text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from vade.eval import official

EXTRACT = "STAND-IN extraction examples.\n\n1.\nModel response: 'so x is 3'\nExtracted Answer: 3\n\n7.\n"
SCORE = ("STAND-IN match examples, braces {{1}}.\n\n[Question]: {question}\n"
         "[Standard Answer]: {gt}\n[Model_answer] : {extraction}\nJudgement: ")
SOURCE = (f"demo_prompt_extract = {EXTRACT!r}\n\nx = 1\n\n"
          f"demo_prompt_score = {SCORE!r}\n")


def stage_stand_in(root: Path, monkeypatch) -> Path:
    """Write the stand-in where ``official_root`` looks (``VADE_OFFICIAL_DIR=root``) and pin its
    sha256; returns its path."""
    pin = official.PINNED["mathverse_prompts"]
    path = pin.under(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SOURCE, encoding="utf-8")
    digest = hashlib.sha256(SOURCE.encode("utf-8")).hexdigest()
    monkeypatch.setitem(official.PINNED, "mathverse_prompts",
                        official.OfficialFile(pin.repo, pin.commit, pin.path, digest))
    monkeypatch.setenv("VADE_OFFICIAL_DIR", str(root))
    return path
