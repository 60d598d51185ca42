"""DIVA-GRPO's numpy core: difficulty levels, variant offsets and the difficulty-weighted advantage.

DIVA-GRPO (arXiv 2603.01106) fights gradient vanishing from the data side: instead of choosing
*which* problems to train on (VADE), it changes *what each problem looks like* (harder variants of
easy problems, hint variants of hard ones) and scores each response against both its own prompt's
group and the group of the original and all its variants. The method's facts, as its reference
code does them, are in ``shared/notes/diva-grpo.md``; this package holds the pure math, with no
framework imports, so the local trainer, the simulator and the verl adapter share one copy.
"""

from vade.diva.advantage import diva_advantages
from vade.diva.levels import LEVELS, initial_levels, update_levels
from vade.diva.offsets import VariantPlan, draw_offsets, plan_variant

__all__ = [
    "LEVELS",
    "VariantPlan",
    "diva_advantages",
    "draw_offsets",
    "initial_levels",
    "plan_variant",
    "update_levels",
]
