"""The import graph of the ``vade`` package, read from its source with ``ast`` (nothing imported).

Why: an import cycle or an arrow from a low floor to a high one is invisible in a file's header
when the import sits inside a function, and only shows up as an ``ImportError`` (or a slow
``vade --help``) later. This module draws every ``import``/``from`` of a ``vade`` module, top
level and in-function, relative ones resolved, and reports:

* cycles: strongly connected components of the module graph with more than one module;
* upward arrows: a module importing one on a higher floor of :data:`FLOORS`;
* in-function imports of the project's own modules.

Imports under ``if TYPE_CHECKING:`` are for annotations only (never run) and draw no arrow.

``tests/test_import_layers.py`` asserts all three are empty; ``python tests/import_graph.py``
prints the counts and each finding (docs/layout.md).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vade"

# The floors, bottom first: a module may import its own floor and the floors below it, never one
# above. A "room" is ``vade.<first part>`` (a subpackage or a top-level module); the entry points
# (``vade.cli``, ``vade.__main__``) are the roof. ``vade`` itself (the package's ``__init__``) is
# the ground every module stands on.
FLOORS: tuple[tuple[str, ...], ...] = (
    # 0: plain helpers: the package, console, config reader, locks, provenance, value checks
    ("vade", "vade.console", "vade.config_io", "vade.config_schema", "vade.lockfile",
     "vade.provenance", "vade.checks"),
    # 1: the method table, the grid, tracking, a job's environment, the numpy cores
    ("vade.methods", "vade.grid", "vade.tracking", "vade.job", "vade.diva", "vade.sampling"),
    # 2: the DuckDB history, rewards
    ("vade.store", "vade.rewards"),
    # 3: data, and the content digests of inputs (resumable work is keyed by them)
    ("vade.data", "vade.content_digest"),
    # 4: the policy and its HF engine
    ("vade.models",),
    # 5: generation engines and the initial difficulty
    ("vade.rollout",),
    # 6: evaluation
    ("vade.eval",),
    # 7: training
    ("vade.train",),
    # 8: the cluster's plan, prefetch and preflight (they read every stage's config)
    ("vade.cluster",),
    # 9: the report, the sampler lab, the benchmarks, the demo
    ("vade.report", "vade.simulate", "vade.bench", "vade.demo"),
    # 10: the roof
    ("vade.cli", "vade.__main__"),
)


@dataclass(frozen=True)
class Import:
    """One arrow: ``source`` imports ``target`` at ``line``, in a function or not."""

    source: str
    target: str
    line: int
    in_function: bool


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}


def _type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:``: imports for annotations only, never run."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """Every node with whether it sits inside a function (or lambda); the bodies of
    ``if TYPE_CHECKING:`` are left out (annotations only: no arrow at run time)."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        yield node, inside
        nested = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        children = node.orelse if _type_checking(node) else ast.iter_child_nodes(node)
        stack.extend((child, nested) for child in children)


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is, or sits in."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(known: dict[str, Path] | None = None) -> list[Import]:
    """Every import of a ``vade`` module by a ``vade`` module."""
    known = known if known is not None else modules()
    found: list[Import] = []
    for source, path in known.items():
        is_package = path.name == "__init__.py"
        package = source if is_package else source.rpartition(".")[0]
        for node, inside in _walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # ``from a import b``: b is a module when a.b is one, else a name in a.
                targets = [f"{stem}.{alias.name}" for alias in node.names]
            for target in targets:
                if not (target == "vade" or target.startswith("vade.")):
                    continue
                resolved = _resolve(target, known)
                if resolved is not None and resolved != source:
                    found.append(Import(source, resolved, node.lineno, inside))
    return found


# Third-party libraries that cost seconds (or a GPU stack) to import: a project module that imports
# one at load, directly or through its own top-level project imports, is "heavy", and importing it
# is the one kind of project import that may stay inside a function (marked ``# lazy: <reason>``).
HEAVY_LIBRARIES = frozenset({"torch", "verl", "vllm", "transformers", "lmms_eval", "ray", "mlflow"})


def core_libraries() -> frozenset[str]:
    """The import names of the package's own dependencies (``pyproject.toml``): always there,
    so never a reason to import inside a function."""
    import re

    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower() for d in deps}
    return frozenset({"pyyaml": "yaml"}.get(n, n) for n in names)


def deferred_library_imports(known: dict[str, Path] | None = None
                             ) -> list[tuple[str, int, set[str], str]]:
    """(module, line, top-level names, text) of every import of a library (not ``vade``) inside
    a function; the text starts at the import lines and comments right above it (its block)."""
    known = known if known is not None else modules()
    found = []
    for name, path in known.items():
        lines = path.read_text().splitlines()
        for node, inside in _walk(ast.parse("\n".join(lines))):
            if not inside or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            tops = ({a.name.split(".")[0] for a in node.names} if isinstance(node, ast.Import)
                    else {(node.module or "").split(".")[0]})
            if "vade" in tops:
                continue
            start = node.lineno - 1   # with the import lines and comments right above it
            while start > 0 and lines[start - 1].strip().startswith(("import ", "from ", "#")):
                start -= 1
            text = "\n".join(lines[start: node.end_lineno])
            found.append((name, node.lineno, tops, text))
    return found


def heavy_modules(known: dict[str, Path] | None = None,
                  arrows: list[Import] | None = None) -> dict[str, str]:
    """Module -> the heavy library it loads at import (directly or through top-level imports)."""
    known = known if known is not None else modules()
    arrows = arrows if arrows is not None else imports(known)
    heavy: dict[str, str] = {}
    for name, path in known.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top in HEAVY_LIBRARIES:
                    heavy.setdefault(name, top)
    grew = True
    while grew:
        grew = False
        for a in arrows:
            if not a.in_function and a.target in heavy and a.source not in heavy:
                heavy[a.source] = heavy[a.target]
                grew = True
    return heavy


def room(module: str) -> str:
    """``vade.<first part>``: the subpackage or top-level module a module lives in."""
    return ".".join(module.split(".")[:2])


def floor(module: str) -> int:
    r = room(module)
    for level, rooms in enumerate(FLOORS):
        if r in rooms:
            return level
    raise KeyError(f"{module}: its room {r} is on no floor of FLOORS (tests/import_graph.py)")


def cycles(arrows: list[Import]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a in arrows:
        graph[a.source].add(a.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(set(graph) | {t for ts in graph.values() for t in ts}):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def upward(arrows: list[Import]) -> list[Import]:
    """Arrows from a floor to a higher one."""
    return [a for a in arrows if floor(a.target) > floor(a.source)]


def in_function(arrows: list[Import]) -> list[Import]:
    return [a for a in arrows if a.in_function]


def summary(package: Path = PACKAGE) -> dict[str, int]:
    known = modules(package)
    arrows = imports(known)
    rooms = {room(m) for m in known}
    room_arrows = {(room(a.source), room(a.target)) for a in arrows
                   if room(a.source) != room(a.target)}
    return {
        "lines": sum(len(p.read_text().splitlines()) for p in known.values()),
        "modules": len(known),
        "rooms": len(rooms),
        "room arrows": len(room_arrows),
        "project import statements": len({(a.source, a.line) for a in arrows}),
        "in functions": len({(a.source, a.line) for a in in_function(arrows)}),
        "cycles": len(cycles(arrows)),
        "upward arrows (modules)": len(upward(arrows)),
        "upward arrows (rooms)": len({(room(a.source), room(a.target)) for a in upward(arrows)}),
    }


def main() -> int:
    """``python tests/import_graph.py [-v] [PACKAGE_DIR]`` (default: this checkout's ``vade/``)."""
    paths = [a for a in sys.argv[1:] if not a.startswith("-")]
    package = Path(paths[0]).resolve() if paths else PACKAGE
    arrows = imports(modules(package))
    for key, value in summary(package).items():
        print(f"{key}: {value}")
    for component in cycles(arrows):
        print("cycle:", " <-> ".join(component))
    for a in upward(arrows):
        print(f"upward: {a.source}:{a.line} -> {a.target} "
              f"(floor {floor(a.source)} -> {floor(a.target)})")
    if "-v" in sys.argv:
        for a in in_function(arrows):
            print(f"in function: {a.source}:{a.line} -> {a.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
