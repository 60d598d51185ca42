"""Statistics over seeds: means with 95% t-intervals, per method and paired by seed (numpy only).

Why: one run per method cannot rank methods (a 150-row validation score has a standard error of
about 0.04, and which step you read can flip the sign). With several seeds the report gives, per
method, the mean over seeds and a 95% t-interval of the final validation score, the run's mean
effective gradient ratio and the rollouts to a fraction (0.995) of DAPO's peak; and, paired by
seed (the same seed, hence the same model, data and seed stream), the per-seed difference of each
method to vanilla and of VADE to DAPO, with its own interval. An interval that contains 0 does
not show a difference.

The t quantile is computed without scipy: exact tabulated values for 1-30 degrees of freedom,
the Cornish-Fisher expansion beyond (error < 1e-4 there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "mean_interval", "paired_interval", "paired_sd_from_interval",
           "seeds_to_separate", "t_quantile_975"]

# Two-sided 95% (upper 0.975) quantiles of Student's t, df = 1..30.
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"t quantile needs df >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z, v = _Z975, float(df)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3))


@dataclass(frozen=True)
class Interval:
    """Mean over ``n`` values and its 95% t-interval (``low``/``high`` NaN when n < 2)."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def excludes_zero(self) -> bool:
        """True when the interval lies entirely above or below 0 (a difference is shown)."""
        return self.n >= 2 and (self.low > 0 or self.high < 0)

    def text(self, decimals: int = 3) -> str:
        """``mean [low, high]`` (n < 2: the mean and ``n=1``)."""
        if self.n == 0:
            return "n/a"
        if self.n < 2:
            return f"{self.mean:.{decimals}f} (n=1)"
        return f"{self.mean:.{decimals}f} [{self.low:.{decimals}f}, {self.high:.{decimals}f}]"


def mean_interval(values: Sequence[float]) -> Interval:
    """Mean and 95% t-interval: mean ± t(0.975, n-1) * sd / sqrt(n), sd with n-1."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, float("nan"), float("nan"), 1)
    half = t_quantile_975(n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired_interval(a: Mapping[int, float | None], b: Mapping[int, float | None]) -> Interval:
    """Interval of the per-seed differences ``a[seed] - b[seed]`` over the seeds both have a
    finite value for (a seed missing on either side is left out, never imputed)."""
    diffs = [float(a[s]) - float(b[s]) for s in sorted(set(a) & set(b))
             if a[s] is not None and b[s] is not None
             and math.isfinite(a[s]) and math.isfinite(b[s])]
    return mean_interval(diffs)


def paired_sd_from_interval(low: float, high: float, n: int) -> float:
    """The standard deviation of the per-seed differences behind a 95% t-interval over ``n``
    seeds: half-width x sqrt(n) / t(0.975, n - 1), for when only the interval was kept."""
    if n < 2 or not high >= low:
        raise ValueError(f"need n >= 2 and high >= low, got n = {n}, [{low}, {high}]")
    return (high - low) / 2 * math.sqrt(n) / t_quantile_975(n - 1)


_Z80 = 0.8416212335729143  # standard normal 0.8 quantile


def seeds_to_separate(sd: float, difference: float, power: float = 0.5,
                      most: int = 10_000) -> int:
    """Seeds (n >= 2) whose paired 95% t-interval excludes 0 when the true difference is
    ``difference`` and the per-seed differences have standard deviation ``sd``.

    ``power`` 0.5: the expected interval's half-width, t(0.975, n - 1) sd / sqrt(n), is at most
    the difference (a study of that size separates it about half the time); 0.8: the usual
    planning rule (t(0.975, n - 1) + z(0.8)) sd / sqrt(n) <= difference (normal approximation of
    the power term, slightly optimistic for small n).
    """
    if not sd > 0 or not difference > 0:
        raise ValueError(f"need sd > 0 and difference > 0, got {sd}, {difference}")
    if power not in (0.5, 0.8):
        raise ValueError(f"power must be 0.5 or 0.8, got {power}")
    extra = 0.0 if power == 0.5 else _Z80
    for n in range(2, most + 1):
        if (t_quantile_975(n - 1) + extra) * sd / math.sqrt(n) <= difference:
            return n
    raise ValueError(f"more than {most} seeds needed (sd {sd}, difference {difference})")
