"""Does a difficulty level predict how hard an item is for the model? SEC's arms are only as
informative as that: the rank correlation (Spearman) between each training item's level
(``vade.data.synthetic.levels``) and the base model's pass rate on it (the initial difficulty
rollouts, r / G), overall and per domain. A correlation near 0 makes SEC near uniform sampling.
Beside it, each level's mean pass rate: the number a published per-level table (MATH's levels
1-5, which SEC's paper uses as arms) can be set against, since such tables give means, not items.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from vade.data.records import read_examples
from vade.data.synthetic.levels import sec_labels

__all__ = ["level_correlations", "level_lines", "level_means", "pass_rates", "spearman"]


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side is constant."""
    from scipy import stats  # lazy: scipy (about 0.5 s), only for this report line

    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(stats.spearmanr(a, b).statistic)


def level_correlations(levels: Sequence[float], pass_rates: Sequence[float],
                       domains: Sequence[str]) -> dict[str, tuple[float, int]]:
    """``all`` and each domain -> (Spearman of level vs pass rate, items)."""
    lv, pr, dom = np.asarray(levels, float), np.asarray(pass_rates, float), np.asarray(domains)
    out = {"all": (spearman(lv, pr), int(lv.size))}
    for d in sorted(set(dom.tolist())):
        keep = dom == d
        out[str(d)] = (spearman(lv[keep], pr[keep]), int(keep.sum()))
    return out


def level_means(levels: Sequence[float], pass_rates: Sequence[float]) -> dict[int, tuple[float, int]]:
    """level -> (mean pass rate of its items, items), levels in increasing order."""
    lv, pr = np.asarray(levels, float), np.asarray(pass_rates, float)
    return {int(v): (float(pr[lv == v].mean()), int((lv == v).sum())) for v in np.unique(lv)}


def pass_rates(difficulty: str | Path) -> dict[int, float]:
    """sample id -> r / G of an initial difficulty file."""

    t = pq.read_table(difficulty, columns=["sample_id", "correct", "rollouts"]).to_pydict()
    return {int(i): c / g for i, c, g in zip(t["sample_id"], t["correct"], t["rollouts"]) if g}


def level_lines(train: str | Path, difficulty: str | Path | Mapping[int, float]) -> list[str]:
    """One line per domain (and all): the correlation over the items with a pass rate
    (``difficulty``: an initial difficulty file, or sample id -> pass rate)."""
    initial = difficulty if isinstance(difficulty, Mapping) else pass_rates(difficulty)
    examples = read_examples(train, check=False)
    labels = sec_labels(examples)
    rows = [(float(lab), initial[e.index], e.domain) for e, lab in zip(examples, labels)
            if e.index in initial and lab is not None]
    if not rows:
        raise ValueError(f"{train}: no training row has both a level and an initial pass rate")
    levels, rates, domains = (np.asarray(c) for c in zip(*rows))
    lines = []
    for name, (rho, n) in level_correlations(levels, rates, domains).items():
        keep = np.ones(len(levels), bool) if name == "all" else domains == name
        means = "  ".join(f"L{lv} {m:.2f} ({k})"
                          for lv, (m, k) in level_means(levels[keep], rates[keep]).items())
        lines.append(f"{name}: Spearman(level, base pass rate) = {rho:+.3f} over {n} items; "
                     f"mean pass rate by level: {means}")
    return lines
