"""Peer selection rules (MoPPS, GRESO, MMR1, SEC) behind the same interface as VADE's sampler.

Each class has the sampler contract of ``vade.sampling.factory.Sampler`` (``select``,
``observe`` returning an ``Observation``, exact ``state_dict`` round trip), so the simulator and
the trainers use the same objects. Each class docstring cites the published code it follows
(``docs/methods.md``, "The peers as published", summarises them) and names what differs; the
variants that are not the published method (``greso-skip``, ``sec-passrate``) and the published
option ``mopps-prior`` have names of their own. numpy only.
"""

from vade.sampling.peers.base import PeerSampler
from vade.sampling.peers.greso import GresoSampler, GresoSkipSampler
from vade.sampling.peers.mmr1 import MMR1Sampler, MMR1StaleSampler
from vade.sampling.peers.mopps import MoPPSPriorSampler, MoPPSSampler
from vade.sampling.peers.sec import (
    SECPassRateSampler,
    SECSampler,
    difficulty_categories,
    label_categories,
    mean_abs_advantage,
)

# name -> class, for callers that build peers by name (the simulator; ``make_sampler`` for the
# method table's ``peer`` rows, which carry the same names).
PEERS = {"mopps": MoPPSSampler, "mopps-prior": MoPPSPriorSampler, "greso": GresoSampler,
         "greso-skip": GresoSkipSampler, "mmr1": MMR1Sampler, "mmr1-stale": MMR1StaleSampler, "sec": SECSampler,
         "sec-passrate": SECPassRateSampler}

__all__ = [
    "PEERS",
    "GresoSampler",
    "GresoSkipSampler",
    "MMR1Sampler",
    "MMR1StaleSampler",
    "MoPPSPriorSampler",
    "MoPPSSampler",
    "PeerSampler",
    "SECPassRateSampler",
    "SECSampler",
    "difficulty_categories",
    "label_categories",
    "mean_abs_advantage",
]
