"""Which code produced a result: recorded with every run so a number can be traced to a commit,
and, for the workflow, which of the package's files a command runs (``source_version``)."""

from __future__ import annotations

import ast
import hashlib
import re
import subprocess
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from vade import __version__

__all__ = ["code_version", "source_files", "source_version"]

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the folder that holds vade/
_MODULE_NAME = re.compile(r"vade(\.\w+)+")
# The verbs' table: its strings name every command module, of which a run imports one (the entry
# the caller names), so they are not followed.
_NOT_FOLLOWED = {"vade.cli"}


@lru_cache(maxsize=1)
def code_version() -> str:
    """``vade <version>+g<commit>[.dirty]`` inside a git checkout, else ``vade <version>``."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "vade"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"vade {__version__}"
    return f"vade {__version__}+g{commit}{'.dirty' if dirty else ''}"


def _module_file(name: str, root: Path) -> Path | None:
    """``vade.a.b`` -> ``vade/a/b.py`` or ``vade/a/b/__init__.py``; None when it is neither."""
    base = root.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _stamp(path: Path) -> tuple[int, int]:
    """What the per-file caches are keyed on besides the path: an edited file is read again."""
    st = path.stat()
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=4096)
def _named_modules(path: Path, module: str, stamp: tuple[int, int]) -> tuple[str, ...]:
    """Every ``vade`` module ``path`` may import: import statements anywhere in the file (the
    ones inside functions too), ``from x import y`` as ``x`` and ``x.y``, relative imports
    resolved, and string constants naming a module (``importlib.import_module`` tables), an
    f-string prefix (``f"vade.data.sources.{family}"``) as its whole package."""
    return tuple(_walk_imports(path, module))


def _walk_imports(path: Path, module: str) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif module not in _NOT_FOLLOWED and isinstance(node, ast.Constant) \
                and isinstance(node.value, str) and _MODULE_NAME.fullmatch(node.value):
            yield node.value
        elif module not in _NOT_FOLLOWED and isinstance(node, ast.JoinedStr) and node.values \
                and isinstance(node.values[0], ast.Constant) \
                and _MODULE_NAME.fullmatch(str(node.values[0].value).rstrip(".")):
            yield f"{str(node.values[0].value).rstrip('.')}.*"


def source_files(*modules: str, root: Path = PACKAGE_ROOT) -> tuple[Path, ...]:
    """The package's files that running ``modules`` may execute: their import closure within
    ``vade`` (and each module's parent packages), read from the source, nothing imported.

    Why: a workflow job depends on the code it runs, not on the whole package; a report change
    must not rerun hours of training. ``x.*`` names a whole package (a module chosen at run
    time)."""
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name.endswith(".*"):
            pkg = _module_file(name[:-2], root)
            if pkg is not None and pkg.name == "__init__.py":
                todo += [".".join(f.relative_to(root).with_suffix("").parts)
                         for f in sorted(pkg.parent.rglob("*.py")) if f.name != "__init__.py"]
            continue
        if name in seen or not (name == "vade" or name.startswith("vade.")):
            continue
        path = _module_file(name, root)
        if path is None:  # ``from vade.x import name``: a name, not a module
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]  # parent packages run first
        todo += list(_named_modules(path, name, _stamp(path)))
    return tuple(sorted(seen.values()))


@lru_cache(maxsize=4096)
def _file_digest(path: Path, stamp: tuple[int, int]) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def source_version(*modules: str, root: Path = PACKAGE_ROOT) -> str:
    """``<n> files, sha256 <16 hex>``: a digest of the relative paths and bytes of
    ``source_files(*modules)``. The same code in a moved checkout gives the same string; a
    workflow rule puts it in ``params`` so that a change to code the job runs reruns it."""
    digest = hashlib.sha256()
    files = source_files(*modules, root=root)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(_file_digest(path, _stamp(path)))
    return f"{len(files)} files, sha256 {digest.hexdigest()[:16]}"
