"""Sample selection for group-based RL: the VADE sampler, its ablations and the uniform baseline.

numpy only: no torch, verl or DuckDB here. Trainers call ``select()`` before generation and
``observe()`` after rewards; adapters in ``vade.train`` translate framework batches.
"""

from vade.sampling.factory import SAMPLER_OPTIONS, Sampler, make_sampler
from vade.sampling.observation import Observation, effective_gradient_ratio
from vade.sampling.topk import top_k_random_ties
from vade.sampling.uniform import UniformSampler
from vade.sampling.vade import DECAYS, VadeSampler

__all__ = [
    "DECAYS",
    "SAMPLER_OPTIONS",
    "Observation",
    "Sampler",
    "UniformSampler",
    "VadeSampler",
    "effective_gradient_ratio",
    "make_sampler",
    "top_k_random_ties",
]
