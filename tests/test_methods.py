"""The method table (vade/methods.py) is the one list of methods: everything else follows it.

All real: the table, the schema file Snakemake validates against, and the readers of the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vade import methods

ROOT = Path(__file__).resolve().parents[1]


def test_schema_enum_is_the_table():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["$defs"]["method"]["enum"] == list(methods.NAMES)


def test_rows_by_hand():
    """What each method reads and needs, written out from the paper and DIVA-GRPO."""
    expect = {  # name: (config sections besides train, needs initial difficulty)
        "vanilla": ((), False),
        "dapo": (("dapo",), False),
        "vade": (("sampler",), True),
        "symmetric": (("sampler",), True),
        "greedy": (("sampler",), True),
        "last-update": (("sampler",), True),
        "diva": (("diva",), True),
        "vade-diva": (("sampler", "diva"), True),
        # peers read sampler.snapshot_every; published GRESO runs under DAPO's filter and cap;
        # MMR1's first scores, MoPPS's optional prior and the pass-rate SEC variant come from the
        # initial difficulty rollouts; published SEC reads the data's labels, not rollouts
        "mopps": (("sampler",), False),
        "greso": (("sampler", "dapo"), False),
        "mmr1": (("sampler",), True),
        "sec": (("sampler",), False),
        "mopps-prior": (("sampler",), True),
        "greso-skip": (("sampler",), False),
        "mmr1-stale": (("sampler",), True),
        "sec-passrate": (("sampler",), True),
    }
    assert set(expect) == set(methods.NAMES)
    for name, (sections, difficulty) in expect.items():
        row = methods.get(name)
        assert row.config_sections == sections, name
        assert row.needs_difficulty is difficulty, name
    assert methods.names_where(table="ablation") == ("symmetric", "greedy", "last-update",
                                                     "mopps-prior", "greso-skip", "mmr1-stale",
                                                   "sec-passrate")
    assert methods.names_where(shaping=None) == ("vanilla", "vade", "symmetric", "greedy",
                                                 "last-update", "mopps", "mmr1", "sec",
                                                 "mopps-prior", "greso-skip", "mmr1-stale",
                                                 "sec-passrate")
    assert methods.names_where(chooser="peer") == ("mopps", "greso", "mmr1", "sec",
                                                   "mopps-prior", "greso-skip", "mmr1-stale",
                                                   "sec-passrate")
    assert methods.names_where(filters=True) == ("dapo", "greso")
    assert methods.names_where(reads_labels=True) == ("sec",)
    # a peer under the filter draws with its own rule; DAPO draws uniform epochs
    assert methods.get("greso").sampler_name == "greso"
    assert methods.get("dapo").sampler_name == "vanilla"
    assert all(methods.get(m).published for m in methods.names_where(chooser="peer"))
    assert dict(methods.get("greedy").vade_options) == {"exploration": "greedy"}


def test_labels_and_colour_style_pairs_are_distinct():
    """Every method gets its own (colour, line style) from a palette a reader tells apart
    (tab10's colours; lookalikes such as gray/silver or navy/slateblue are not in it)."""
    rows = list(methods.METHODS.values())
    assert len({r.label for r in rows}) == len(rows)
    assert len({(r.colour, r.linestyle) for r in rows}) == len(rows)
    assert {r.colour for r in rows} <= set(methods.PALETTE)
    assert {r.linestyle for r in rows} <= set(methods.LINESTYLES)


def test_unknown_name_and_bad_rows_are_refused():
    with pytest.raises(ValueError, match="method 'grpo' is unknown"):
        methods.get("grpo")
    with pytest.raises(ValueError, match="vade_options need chooser 'vade'"):
        methods.Method("x", "uniform", "x", "k", "main", vade_options={"decay": "none"})
    with pytest.raises(ValueError, match="shaping 'filter'"):
        methods.Method("x", "vade", "x", "k", "main", shaping="filter")
    with pytest.raises(ValueError, match="a peer chooser takes no shaping but dapo"):
        methods.Method("x", "peer", "x", "k", "main", shaping="diva")
    with pytest.raises(ValueError, match="reads_labels is for chooser 'peer'"):
        methods.Method("x", "uniform", "x", "k", "main", reads_labels=True)


def test_readers_follow_the_table():
    """The trainer's config, the sampler factory and the report read the same rows."""
    from vade.report.figures import COLORS
    from vade.report.tables import ABLATIONS, METHOD_LABELS
    from vade.sampling import SAMPLER_OPTIONS
    from vade.train.config import NEEDS_DIFFICULTY, TRAIN_METHODS

    assert TRAIN_METHODS == methods.NAMES
    assert NEEDS_DIFFICULTY == methods.names_where(needs_difficulty=True)
    assert set(SAMPLER_OPTIONS) == (set(methods.names_where(shaping=None))
                                    - set(methods.names_where(chooser="peer")))
    assert SAMPLER_OPTIONS["symmetric"] == {"objective": "symmetric"}
    assert SAMPLER_OPTIONS["vanilla"] is None
    assert ABLATIONS == methods.names_where(table="ablation")
    assert all(METHOD_LABELS[n] == methods.get(n).label for n in methods.NAMES)
    assert all(COLORS[n] == methods.get(n).colour for n in methods.NAMES)


def test_schema_backends_are_the_backend_table():
    from vade.train.config import BACKENDS

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["properties"]["train"]["properties"]["backend"]["enum"] == list(BACKENDS)
