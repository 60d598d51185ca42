"""Which package files a workflow job runs (``vade.provenance.source_files``) and the code version
a rule puts in its params: on a small hand-made package in tmp_path (every kind of import the
real package uses), and on the real package for what the workflow relies on."""

from __future__ import annotations

from pathlib import Path

from vade.provenance import PACKAGE_ROOT, source_files, source_version

FILES = {
    "vade/__init__.py": "",
    "vade/__main__.py": "from vade.cli import main\n",
    "vade/cli.py": 'COMMANDS = {"a": "vade.a", "z": "vade.z"}  # strings not followed here\n',
    "vade/a.py": "def run():\n    from vade import b  # inside a function: still an arrow\n"
                 "    return b\n",
    "vade/b/__init__.py": "from .c import x\n",          # relative import
    "vade/b/c.py": 'TABLE = {"k": "vade.e"}\nx = 1\n',  # a module named by a string
    "vade/e.py": 'import importlib\nm = importlib.import_module(f"vade.pkg.{1}")\n',
    "vade/pkg/__init__.py": "",
    "vade/pkg/one.py": "",
    "vade/pkg/two.py": "import json\n",
    "vade/z.py": "",  # another verb: not run by a job of verb a
    "vade/unused.py": "",
}


def _package(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_closure_follows_every_import_kind_and_nothing_else(tmp_path):
    root = _package(tmp_path / "a")
    names = {p.relative_to(root).as_posix()
             for p in source_files("vade.__main__", "vade.a", root=root)}
    assert names == set(FILES) - {"vade/z.py", "vade/unused.py"}


def test_the_version_moves_with_code_the_job_runs_only(tmp_path):
    """A change to a file in the closure changes the version; one outside it, or moving the
    whole checkout, does not."""
    root = _package(tmp_path / "a")
    before = source_version("vade.__main__", "vade.a", root=root)
    assert before.startswith("10 files, sha256 ")
    (root / "vade" / "unused.py").write_text("# edited\n")
    assert source_version("vade.__main__", "vade.a", root=root) == before
    moved = _package(tmp_path / "elsewhere" / "b")
    (moved / "vade" / "unused.py").write_text("# edited\n")
    assert source_version("vade.__main__", "vade.a", root=moved) == before
    (moved / "vade" / "pkg" / "two.py").write_text("import os\n")
    assert source_version("vade.__main__", "vade.a", root=moved) != before


def test_on_the_real_package_the_report_does_not_run_training_code():
    """What the workflow relies on: the report's job does not depend on the trainers (an edit
    there reruns no report), training's does on the sampler and the method table."""
    report = {p.relative_to(PACKAGE_ROOT).as_posix()
              for p in source_files("vade.__main__", "vade.report.command")}
    train = {p.relative_to(PACKAGE_ROOT).as_posix()
             for p in source_files("vade.__main__", "vade.train.command")}
    assert "vade/report/tables.py" in report and "vade/report/tables.py" not in train
    assert not any(p.startswith("vade/train/") for p in report)
    assert {"vade/sampling/vade.py", "vade/methods.py", "vade/train/local/__init__.py"} <= train
