"""The locks under ``requirements/lock/`` as data: what an environment must hold, and where it drifts.

Why: a fresh install that resolves transitive packages on the day it runs is not reproducible
(filelock 4.3 removed a private module lmms-eval 0.7.3 imports, and every evaluation died). The locks
pin every distribution; this module reads them and names, per distribution, how an installed
environment differs, so a test (or a GPU job's preflight) fails with the package and both versions
instead of a traceback hours later. Standard library plus ``packaging`` (marker evaluation).
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name

__all__ = ["LOCK_DIR", "Pin", "drift", "installed_versions", "pins_for_this_machine", "read_lock"]

LOCK_DIR = Path(__file__).resolve().parent.parent / "requirements" / "lock"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>[^\s;]+)"
                  r"\s*(?:;\s*(?P<marker>.+))?$")


@dataclass(frozen=True)
class Pin:
    """One locked distribution: canonical name, exact version, optional environment marker."""

    name: str
    version: str
    marker: str | None
    where: str  # "file:line", for messages

    def applies(self, environment: dict[str, str] | None = None) -> bool:
        return self.marker is None or Marker(self.marker).evaluate(environment)


def read_lock(path: Path) -> list[Pin]:
    """Every ``name==version[; marker]`` line of a uv/pip-tools lock; editable and option lines
    (``-e .``, ``--index-url``) are the project itself or installer settings, not pins."""
    pins = []
    for number, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", "-")):
            continue
        match = _PIN.match(line)
        if match is None:
            raise ValueError(f"{path}:{number}: not a `name==version[; marker]` pin: {raw!r}")
        pins.append(Pin(canonicalize_name(match["name"]), match["version"], match["marker"],
                        f"{path}:{number}"))
    return pins


def pins_for_this_machine(path: Path, environment: dict[str, str] | None = None
                          ) -> dict[str, Pin]:
    """The lock's pins whose markers hold here (or in ``environment``), by canonical name."""
    chosen: dict[str, Pin] = {}
    for pin in read_lock(path):
        if pin.applies(environment):
            if pin.name in chosen:
                raise ValueError(f"{pin.where}: {pin.name} is pinned twice for one platform "
                                 f"(also {chosen[pin.name].where})")
            chosen[pin.name] = pin
    return chosen


def installed_versions() -> dict[str, str]:
    """``{canonical name: version}`` of every distribution importable from this interpreter."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:  # a half-removed distribution leaves metadata without a name
            found.setdefault(canonicalize_name(name), dist.version)
    return found


def drift(locked: dict[str, Pin], installed: dict[str, str],
          ignore: frozenset[str] = frozenset()) -> list[str]:
    """One message per difference between an environment and its lock, sorted by package.

    A locked distribution missing or at another version, and an installed one the lock does not
    name, are each drift; ``ignore`` holds what is installed but deliberately unlocked (the project
    itself, the installer's own seed packages).
    """
    problems = []
    for name in sorted(locked.keys() | installed.keys()):
        if name in ignore:
            continue
        pin, version = locked.get(name), installed.get(name)
        if pin is None:
            problems.append(f"{name}: installed {version}, not in the lock")
        elif version is None:
            problems.append(f"{name}: locked {pin.version} ({pin.where}), not installed")
        elif version != pin.version:
            problems.append(f"{name}: installed {version}, locked {pin.version} ({pin.where})")
    return problems
