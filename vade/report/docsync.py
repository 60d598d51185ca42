"""Blocks of a results page that are generated from a committed per-run table, and the check
that they still agree with it.

A block is written in the Markdown as

    <!-- numbers: docs/data/<study>/runs.csv [key=value ...] -->
    ...the text of ``vade.report.numbers.section`` for that table...
    <!-- /numbers -->

(path relative to the repository root; ``main.csv+control.csv`` reads control studies beside
the main one, their runs labelled ``method@study``; options: ``fraction``, ``grid_step``, ``plateau_checks``
as comma-separated steps, ``decimals``, ``family`` as the comma-separated pre-registered
comparisons: ``dapo`` for H1, then the methods VADE is compared with at equal rollouts). A ``<!-- regime: ... -->`` block (option
``decimals``) holds ``vade.report.regime.regime_section``: each method's effective ratio by
third of its steps, against the testbed's regime rule; a ``<!-- picks: .../picks.csv -->``
block ``vade.report.picks.picks_section``. ``vade results check`` recomputes every
block and names those that differ; ``vade results write`` rewrites them. So no number in such a
block can be typed by hand or outlive the data it came from.

A figure is written as

    <!-- figure: docs/data/<study>/runs.csv docs/figures/<study>.png [grid_step=N] -->
    ![...](figures/<study>.png)

and drawn by ``vade.report.table_figure`` (same ``+`` for controls); the PNG records the digest
of the table(s) and the code it was drawn from, so ``check`` names a figure older than its
table or its drawing code and ``write`` redraws it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vade.methods import NAMES
from vade.report.export import read_tables
from vade.report.numbers import by_method, section
from vade.report.picks import picks_section, read_picks
from vade.report.regime import regime_section
from vade.report.table_figure import SOURCE_KEY, figure, source_digest

__all__ = ["Block", "FigureMark", "blocks", "check", "figures", "render", "write"]

_BLOCK = re.compile(r"(?P<open><!-- (?P<kind>numbers|regime|picks): (?P<path>\S+)(?P<opts>[^>]*?) -->\n)"
                    r"(?P<body>.*?)(?P<close><!-- /(?P=kind) -->)", re.DOTALL)
_ALLOWED = {"numbers": ("fraction", "grid_step", "plateau_checks", "decimals", "family"),
            "regime": ("decimals",), "picks": ("decimals",)}
_FIGURE = re.compile(r"<!-- figure: (?P<path>\S+) (?P<png>\S+)(?P<opts>[^>]*?) -->")


@dataclass(frozen=True)
class Block:
    kind: str                  # "numbers", "regime" or "picks": what renders it
    table: str                 # path(s) of the per-run table(s), relative to the root, "+"-joined
    options: dict[str, str]
    body: str                  # the text now between the markers


@dataclass(frozen=True)
class FigureMark:
    table: str                 # as Block.table
    png: str                   # the figure's path, relative to the root
    grid_step: float


def _options(text: str, where: str,
             allowed: tuple[str, ...] = ("fraction", "grid_step", "plateau_checks", "decimals"),
             ) -> dict[str, str]:
    out = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or key not in allowed:
            raise ValueError(f"{where}: option {item!r} is not one of "
                             f"{', '.join(k + '=' for k in allowed)}")
        out[key] = value
    return out


def blocks(doc: str | Path) -> list[Block]:
    p = Path(doc)
    return [_block(m, p) for m in _BLOCK.finditer(p.read_text(encoding="utf-8"))]


def _block(m: re.Match[str], doc: Path) -> Block:
    where = f"{doc}: {m['kind']} block of {m['path']}"
    return Block(m["kind"], m["path"], _options(m["opts"], where, _ALLOWED[m["kind"]]), m["body"])


def figures(doc: str | Path) -> list[FigureMark]:
    p = Path(doc)
    return [FigureMark(m["path"], m["png"], float(_options(
                m["opts"], f"{p}: figure {m['png']}", ("grid_step",)).get("grid_step", 3840)))
            for m in _FIGURE.finditer(p.read_text(encoding="utf-8"))]


def _tables(mark: Block | FigureMark, root: str | Path) -> list[Path]:
    return [Path(root) / t for t in mark.table.split("+")]


def _figure_source(png: Path) -> str | None:
    """The table digest a figure records (None: no file, or not one of ours)."""
    from PIL import Image  # lazy: matplotlib's dependency, needed only for figures

    if not png.is_file():
        return None
    with Image.open(png) as im:
        return getattr(im, "text", {}).get(SOURCE_KEY)


def _stale(mark: FigureMark, root: str | Path) -> bool:
    return _figure_source(Path(root) / mark.png) != source_digest(_tables(mark, root),
                                                                grid_step=mark.grid_step)


def render(block: Block, root: str | Path) -> str:
    """The block's text recomputed from its table."""
    o = block.options
    if block.kind == "picks":
        return picks_section(read_picks(_tables(block, root)[0]), NAMES,
                             decimals=int(o.get("decimals", 3)))
    table = read_tables(_tables(block, root))
    if block.kind == "regime":
        return regime_section(by_method(table), decimals=int(o.get("decimals", 3)))
    checks = tuple(int(c) for c in o.get("plateau_checks", "").split(",") if c)
    family = tuple(m for m in o["family"].split(",") if m) if "family" in o else None
    return section(table,
                   fraction=float(o.get("fraction", 0.995)),
                   grid_step=float(o.get("grid_step", 3840)), plateau_checks=checks,
                   decimals=int(o.get("decimals", 2)), family=family)


def check(doc: str | Path, root: str | Path) -> list[str]:
    """One line per block whose text differs from its table's, and per figure drawn from
    another version of its table (empty: all agree)."""
    return [f"{doc}: the {'' if b.kind == 'numbers' else b.kind + ' '}block of {b.table} "
            f"differs from the table (run `vade results write {doc}`)"
            for b in blocks(doc) if render(b, root) != b.body] + [
            f"{doc}: the figure {f.png} is missing or was drawn from another version of "
            f"{f.table} or of its drawing code (run `vade results write {doc}`)"
            for f in figures(doc)
            if _stale(f, root)]


def write(doc: str | Path, root: str | Path) -> int:
    """Rewrite every block from its table and redraw every stale figure; returns how many
    changed."""
    p = Path(doc)
    text = p.read_text(encoding="utf-8")
    changed = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal changed
        body = render(_block(m, p), root)
        changed += body != m["body"]
        return m["open"] + body + m["close"]

    new = _BLOCK.sub(sub, text)
    if changed:
        p.write_text(new, encoding="utf-8")
    for mark in figures(p):
        if _stale(mark, root):
            figure(_tables(mark, root), Path(root) / mark.png, grid_step=mark.grid_step)
            changed += 1
    return changed
