"""The training methods, named once: what chooses the prompts, what shapes them, how they show.

Every layer that needs to know the methods reads this table and nothing else: the workflow
(wildcards, which config sections a run depends on, which runs need the initial difficulty
rollouts), the schema check (a test keeps ``workflow/schemas/config.schema.yaml``'s enum equal
to :data:`NAMES`), the training config, both trainers (through ``vade.sampling.make_sampler``),
the sampler lab and the report (labels, colours, which table a method belongs to). It imports
nothing beyond the standard library, so Snakemake and the report can read it without torch.

A method is a *chooser* (which prompts a step trains on: ``uniform`` epochs, the ``vade``
posterior with VadeSampler's options for the ablations, or a ``peer`` rule of
``vade.sampling.peers`` registered under the method's name) plus an optional *shaping* applied
after the choice: ``dapo`` (generate, then keep only informative groups, under the rollout cap)
or ``diva`` (DIVA-GRPO: one variant per chosen original and the difficulty-weighted advantage).
A peer row may take the ``dapo`` shaping (published GRESO runs its skip rule under DAPO's
filter); ``published`` says how a peer row differs from the published method, and the variants
that are not the published method sit in the ablation table under names of their own.
Adding a method that only changes the chooser is one row here (with its VadeSampler option in
``vade.sampling``, or its peer class in ``vade.sampling.peers``), the schema's enum, and a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "CHOOSERS",
    "LINESTYLES",
    "METHODS",
    "NAMES",
    "PALETTE",
    "SHAPINGS",
    "Method",
    "check_compared",
    "get",
    "names_where",
]

CHOOSERS = ("uniform", "vade", "peer")
SHAPINGS = (None, "dapo", "diva")
# The colours a reader tells apart (matplotlib's tab10 cycle); a method's variants share its
# colour with a line style of their own, so every (colour, style) pair is one method, in the
# report's figures, the simulator's and the demo's alike.
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
           "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
LINESTYLES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class Method:
    """One row of the method table."""

    name: str
    chooser: str                       # "uniform" | "vade" | "peer"
    label: str                         # the report's row label
    colour: str                        # matplotlib colour of its curves (PALETTE)
    table: str                         # "main" (Table 1) or "ablation" (Table 2)
    vade_options: Mapping[str, str] = field(default_factory=dict)  # VadeSampler keywords
    shaping: str | None = None         # None | "dapo" | "diva"
    reads_difficulty: bool = False     # a peer that starts from the initial difficulty rollouts
    reads_labels: bool = False         # a peer that reads the rows' extra_info.difficulty
    published: str = ""                # a peer: how the row differs from the published method
    linestyle: str = "-"               # a variant: its parent's colour, its own line style

    def __post_init__(self) -> None:
        if self.chooser not in CHOOSERS:
            raise ValueError(f"method {self.name}: chooser {self.chooser!r} not in {CHOOSERS}")
        if self.shaping not in SHAPINGS:
            raise ValueError(f"method {self.name}: shaping {self.shaping!r} not in {SHAPINGS}")
        if self.vade_options and self.chooser != "vade":
            raise ValueError(f"method {self.name}: vade_options need chooser 'vade'")
        if self.reads_difficulty and self.chooser != "peer":
            raise ValueError(f"method {self.name}: reads_difficulty is for chooser 'peer' "
                             "(VADE and DIVA read the initial difficulty anyway)")
        if self.chooser == "peer" and self.shaping not in (None, "dapo"):
            raise ValueError(f"method {self.name}: a peer chooser takes no shaping but dapo "
                             "(the filter GRESO runs under)")
        if self.reads_labels and self.chooser != "peer":
            raise ValueError(f"method {self.name}: reads_labels is for chooser 'peer'")
        if self.colour not in PALETTE or self.linestyle not in LINESTYLES:
            raise ValueError(f"method {self.name}: colour {self.colour!r} / line style "
                             f"{self.linestyle!r} not in PALETTE / LINESTYLES")
        if self.table not in ("main", "ablation"):
            raise ValueError(f"method {self.name}: table {self.table!r} not main/ablation")
        object.__setattr__(self, "vade_options", MappingProxyType(dict(self.vade_options)))

    @property
    def uses_posterior(self) -> bool:
        """Chooses with VADE's Beta posterior: reads the ``sampler`` section."""
        return self.chooser == "vade"

    @property
    def needs_difficulty(self) -> bool:
        """Starts from the initial difficulty rollouts (VADE's prior, DIVA's levels, a peer's
        first estimate or categories)."""
        return self.uses_posterior or self.shaping == "diva" or self.reads_difficulty

    @property
    def filters(self) -> bool:
        """Runs through DAPO's dynamic-sampling filter under its rollout cap (DAPO; GRESO)."""
        return self.shaping == "dapo"

    @property
    def sampler_name(self) -> str:
        """The method whose sampler chooses this method's prompts (DAPO filters and DIVA
        shapes them after the choice): ``dapo``/``diva`` -> ``vanilla``, ``vade-diva`` ->
        ``vade``; a peer row is its own (GRESO's skip rule draws, DAPO's filter keeps)."""
        if self.shaping is None or self.chooser == "peer":
            return self.name
        return "vade" if self.uses_posterior else "vanilla"

    @property
    def config_sections(self) -> tuple[str, ...]:
        """The config sections besides ``train`` that a run of this method reads (a peer reads
        ``sampler.snapshot_every``: how often its whole per-sample state is logged)."""
        return tuple(s for s, used in (("sampler", self.uses_posterior
                                        or self.chooser == "peer"),
                                       ("dapo", self.shaping == "dapo"),
                                       ("diva", self.shaping == "diva")) if used)


_ROWS = (
    Method("vanilla", "uniform", "vanilla", "tab:blue", "main"),
    Method("dapo", "uniform", "DAPO", "tab:orange", "main", shaping="dapo"),
    Method("vade", "vade", "Ours (VADE)", "tab:red", "main"),
    Method("symmetric", "vade", "p(1-p)", "tab:red", "ablation",
           vade_options={"objective": "symmetric"}, linestyle="--"),
    Method("greedy", "vade", "greedy", "tab:red", "ablation",
           vade_options={"exploration": "greedy"}, linestyle=":"),
    Method("last-update", "vade", "last update", "tab:red", "ablation",
           vade_options={"decay": "last-update"}, linestyle="-."),
    Method("diva", "uniform", "DIVA-GRPO", "tab:cyan", "main", shaping="diva"),
    Method("vade-diva", "vade", "VADE + DIVA", "tab:pink", "main", shaping="diva"),
    # Peers (vade.sampling.peers; docs/methods.md "The peers as published"): the published
    # rules and defaults, each row naming what still differs; variants in the ablation table
    Method("mopps", "peer", "MoPPS", "tab:gray", "main",
           published="as published (flat prior; decay 0.5 of its Countdown/Geo3k scripts)"),
    Method("greso", "peer", "GRESO", "tab:olive", "main", shaping="dapo",
           published="as published: skip rule + DAPO's filter under DAPO's rollout cap; each "
                     "draw is B surviving prompts (GRESO: 1.5 B, adaptive refills)"),
    Method("mmr1", "peer", "MMR1 VAS", "tab:green", "main", reads_difficulty=True,
           published="as published: the initial rollouts are the first scoring, then the "
                     "whole pool re-scored with 8 fresh rollouts each every 4 steps (generated "
                     "and counted); the uniform half is drawn afresh each step"),
    Method("sec", "peer", "SEC", "tab:purple", "main", reads_labels=True,
           published="as published: arms are extra_info.difficulty, every arm decays, tau 0.4"),
    Method("mopps-prior", "peer", "MoPPS (prior)", "tab:gray", "ablation",
           reads_difficulty=True, linestyle="--",
           published="MoPPS's published option: prior a = 3 successes + 1 from the initial "
                     "rollouts (counted on its cost axis)"),
    Method("greso-skip", "peer", "GRESO skip only", "tab:olive", "ablation", linestyle="--",
           published="not GRESO: the skip rule without DAPO's filter, target split 1/2, p "
                     "in [0.01, 1] adapting from step 1"),
    Method("mmr1-stale", "peer", "MMR1 (stale estimates)", "tab:green", "ablation",
           reads_difficulty=True, linestyle="--",
           published="not MMR1: never re-scored; each estimate is the initial rollouts', then "
                     "the sample's latest training group (charged nothing beyond them)"),
    Method("sec-passrate", "peer", "SEC (pass-rate bins)", "tab:purple", "ablation",
           reads_difficulty=True, linestyle="--",
           published="not SEC: arms are 5 bins of the initial pass rate (VADE's initial "
                     "rollouts, counted on its cost axis), tau 0.5, only trained arms decay"),
)
METHODS: Mapping[str, Method] = MappingProxyType({m.name: m for m in _ROWS})
NAMES: tuple[str, ...] = tuple(METHODS)


def get(name: str) -> Method:
    """The method called ``name``; a ValueError listing the known names otherwise."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"method {name!r} is unknown (known: {', '.join(NAMES)})") from None


def names_where(**conditions: object) -> tuple[str, ...]:
    """Names of the methods whose attributes equal ``conditions``, in table order
    (``names_where(shaping=None)``: the methods that are a sampler alone)."""
    return tuple(m.name for m in _ROWS
                 if all(getattr(m, k) == v for k, v in conditions.items()))


def check_compared(names: Sequence[str], where: str) -> None:
    """``names`` are methods VADE is compared with (a pre-registered family: ``dapo`` for H1,
    then the methods at equal rollouts); ``where``, the key or option that gave them, leads
    the error."""
    unknown = [n for n in names if n not in METHODS or n == "vade"]
    if unknown:
        raise ValueError(f"{where}: {', '.join(map(repr, unknown))} is not a method VADE is "
                         f"compared with (one of {', '.join(n for n in NAMES if n != 'vade')})")
