"""Peer selection rules (MoPPS, GRESO, MMR1, SEC) behind the same interface as VADE's sampler.

Each class has the sampler contract of ``vade.sampling.methods.Sampler`` (``select``,
``observe`` returning an ``Observation``, exact ``state_dict`` round trip), so the simulator and
the trainers use the same objects. The published rules are summarised in ``notes/peers.md``;
each class docstring says which parts are implemented and what was simplified. numpy only.
"""

from vade.sampling.peers.base import PeerSampler
from vade.sampling.peers.greso import GresoSampler
from vade.sampling.peers.mmr1 import MMR1Sampler
from vade.sampling.peers.mopps import MoPPSSampler
from vade.sampling.peers.sec import SECSampler, difficulty_categories, mean_abs_advantage

# name -> class, for callers that build peers by name (the simulator; ``make_sampler`` for the
# method table's ``peer`` rows, which carry the same names).
PEERS = {"mopps": MoPPSSampler, "greso": GresoSampler, "mmr1": MMR1Sampler, "sec": SECSampler}

__all__ = [
    "PEERS",
    "GresoSampler",
    "MMR1Sampler",
    "MoPPSSampler",
    "PeerSampler",
    "SECSampler",
    "difficulty_categories",
    "mean_abs_advantage",
]
