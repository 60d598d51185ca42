"""Sampler lab: a non-stationary bandit simulator to compare selection rules without training.

The model (``dynamics``): N samples with latent pass rates; training on an informative group
(0 < r < G) raises a sample's pass rate, learning generalises to the rest of the dataset, some
samples are unlearnable and some are noisy (capped below 1); outcomes are Binomial(G, p). Its
defaults reproduce the qualitative shape of the VADE paper's Figure 1 under uniform sampling.
It is a model for comparing selection rules under stated assumptions, never a substitute for a
training run. ``runner`` runs one method under one rollout accounting, ``compare`` several
methods x seeds and the lambda sweep, ``report`` writes DuckDB/CSV/PNG, ``command`` is the CLI.
numpy only, except ``report`` (duckdb, pyarrow, matplotlib, imported when used).
"""

from vade.simulate.compare import compare, lambda_sweep, rollouts_to_target, summarise
from vade.simulate.config import SimConfig, SweepConfig, load_config
from vade.simulate.dynamics import DynamicsParams, PassRateEnv
from vade.simulate.runner import CURVES, METHODS, RunSettings, run_method

__all__ = [
    "CURVES",
    "METHODS",
    "DynamicsParams",
    "PassRateEnv",
    "RunSettings",
    "SimConfig",
    "SweepConfig",
    "compare",
    "lambda_sweep",
    "load_config",
    "rollouts_to_target",
    "run_method",
    "summarise",
]
