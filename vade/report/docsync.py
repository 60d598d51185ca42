"""Blocks of a results page that are generated from a committed per-run table, and the check
that they still agree with it.

A block is written in the Markdown as

    <!-- numbers: docs/data/<study>/runs.csv [key=value ...] -->
    ...the text of ``vade.report.numbers.section`` for that table...
    <!-- /numbers -->

(path relative to the repository root; ``main.csv+control.csv`` reads control studies beside
the main one, their runs labelled ``method@study``; options: ``fraction``, ``grid_step``, ``plateau_checks``
as comma-separated steps, ``decimals``). ``vade results check`` recomputes every block and names
those that differ; ``vade results write`` rewrites them. So no number in such a block can be
typed by hand or outlive the data it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vade.report.export import read_tables
from vade.report.numbers import section

__all__ = ["Block", "blocks", "check", "render", "write"]

_BLOCK = re.compile(r"(<!-- numbers: (?P<path>\S+)(?P<opts>[^>]*?) -->\n)(?P<body>.*?)"
                    r"(<!-- /numbers -->)", re.DOTALL)


@dataclass(frozen=True)
class Block:
    table: str                 # path(s) of the per-run table(s), relative to the root, "+"-joined
    options: dict[str, str]
    body: str                  # the text now between the markers


def _options(text: str, where: str) -> dict[str, str]:
    out = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or key not in ("fraction", "grid_step", "plateau_checks", "decimals"):
            raise ValueError(f"{where}: option {item!r} is not fraction=, grid_step=, "
                             "plateau_checks= or decimals=")
        out[key] = value
    return out


def blocks(doc: str | Path) -> list[Block]:
    p = Path(doc)
    return [Block(m["path"], _options(m["opts"], f"{p}: block of {m['path']}"), m["body"])
            for m in _BLOCK.finditer(p.read_text(encoding="utf-8"))]


def render(block: Block, root: str | Path) -> str:
    """The block's text recomputed from its table."""
    o = block.options
    checks = tuple(int(c) for c in o.get("plateau_checks", "").split(",") if c)
    return section(read_tables([Path(root) / t for t in block.table.split("+")]),
                   fraction=float(o.get("fraction", 0.995)),
                   grid_step=float(o.get("grid_step", 3840)), plateau_checks=checks,
                   decimals=int(o.get("decimals", 2)))


def check(doc: str | Path, root: str | Path) -> list[str]:
    """One line per block whose text differs from its table's (empty: all agree)."""
    return [f"{doc}: the block of {b.table} differs from the table (run `vade results write "
            f"{doc}`)" for b in blocks(doc) if render(b, root) != b.body]


def write(doc: str | Path, root: str | Path) -> int:
    """Rewrite every block from its table; returns how many changed."""
    p = Path(doc)
    text = p.read_text(encoding="utf-8")
    changed = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal changed
        body = render(Block(m["path"], _options(m["opts"], str(p)), m["body"]), root)
        changed += body != m["body"]
        return m.group(1) + body + m.group(5)

    new = _BLOCK.sub(sub, text)
    if changed:
        p.write_text(new, encoding="utf-8")
    return changed
