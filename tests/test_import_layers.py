"""The package's import structure: no cycle, no arrow up the floors, project imports at the top.

Real: the import graph of ``vade/`` as ``tests/import_graph.py`` reads it from the source (every
``import``/``from``, relative ones resolved, in functions too), and a fresh interpreter building
the CLI parser. Stand-in: a small package written to ``tmp_path`` for the checks of the reader
itself. The floors are declared once, in ``import_graph.FLOORS`` (drawn in docs/layout.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import import_graph as g


def test_reader_finds_cycles_upward_arrows_and_function_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "vade"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from .b import x\n")
    (pkg / "low" / "b.py").write_text("def f():\n    from vade.low import a\n    import vade.cli\n")
    (pkg / "cli.py").write_text("from vade.low.a import y\nfrom typing import TYPE_CHECKING\n"
                                "if TYPE_CHECKING:\n    from vade.low import b\n")
    known = g.modules(pkg)
    arrows = g.imports(known)
    got = {(a.source, a.target, a.in_function) for a in arrows}
    assert got == {("vade.low.a", "vade.low.b", False), ("vade.low.b", "vade.low.a", True),
                   ("vade.low.b", "vade.cli", True), ("vade.cli", "vade.low.a", False)}
    assert g.cycles(arrows) == [["vade.cli", "vade.low.a", "vade.low.b"]]
    assert sorted((a.source, a.target) for a in g.in_function(arrows)) == [
        ("vade.low.b", "vade.cli"), ("vade.low.b", "vade.low.a")]


def test_every_module_is_on_a_floor() -> None:
    for module in g.modules():
        g.floor(module)  # raises naming the module whose room is on no floor


def test_no_import_cycle() -> None:
    assert g.cycles(g.imports()) == []


def test_no_arrow_runs_up_the_floors() -> None:
    up = [f"{a.source}:{a.line} -> {a.target}" for a in g.upward(g.imports())]
    assert up == []


def test_project_imports_sit_at_the_top() -> None:
    """Only an import of a module that loads torch/verl/... may wait in a function, marked."""
    known = g.modules()
    arrows = g.imports(known)
    heavy = g.heavy_modules(known, arrows)
    bad = []
    for a in g.in_function(arrows):
        line = known[a.source].read_text().splitlines()[a.line - 1]
        if a.target not in heavy or "# lazy:" not in line:
            bad.append(f"{a.source}:{a.line} -> {a.target}")
    assert bad == []


def test_cli_parser_loads_no_heavy_library() -> None:
    """The whole parser (every verb's arguments) imports neither torch nor a GPU stack."""
    code = ("import sys, vade.cli; vade.cli.build_parser(); "
            f"print(sorted(m for m in {sorted(g.HEAVY_LIBRARIES)!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=g.ROOT).stdout
    assert out.strip() == "[]"


def test_imports_in_functions_are_optional_libraries_with_a_reason() -> None:
    """The standard library and the package's own dependencies are imported at the top; an
    import inside a function is of an optional library (torch, verl, vLLM, lmms-eval, ...) and
    says why on its line or at the head of its block of imports (``# lazy: <reason>``)."""
    core = g.core_libraries()
    assert {"numpy", "duckdb", "yaml"} <= core
    bad = [f"{module}:{line}: {text.strip().splitlines()[-1].strip()}"
           for module, line, tops, text in g.deferred_library_imports()
           if tops <= set(sys.stdlib_module_names) | core or "# lazy:" not in text]
    assert bad == []
