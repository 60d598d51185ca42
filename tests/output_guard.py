"""What the tests must never touch: the repository's pipeline outputs, fingerprinted.

Its own module (not ``conftest``) because test modules import it: ``tests/engines/`` has a
conftest of its own, and two modules named ``conftest`` cannot both be imported by that name.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a user's runs write; the tests own none of it.
GUARDED = ("data", "results", "reports", "logs", "benchmarks", "mlruns", ".snakemake")
# Folders that ship with the repository and change only through git.
SHIPPED = {"data/README.md", "reports/README.md"}


def fingerprint(root: Path = ROOT) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of every file under the guarded folders."""
    out: dict[str, tuple[int, int]] = {}
    for top in GUARDED:
        base = root / top
        if not base.exists():
            continue
        for path in base.rglob("*"):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel not in SHIPPED and not rel.startswith(".snakemake/log/"):
                st = path.stat()
                out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def changed_paths(before: dict[str, tuple[int, int]],
                  after: dict[str, tuple[int, int]]) -> list[str]:
    """Paths added, removed or modified between two fingerprints, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
