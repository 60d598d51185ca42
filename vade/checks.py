"""Value checks for what the config schema does not cover: the sampler cores' and the sampler
lab's parameters (``config/simulate.yaml``), verl's ``data.sampler.vade`` block, run names.

The pipeline config's own types and ranges live once, in ``workflow/schemas/config.schema.yaml``
(``vade.config_schema``). Why these checks sit in one module: a bound written twice drifts (a
range open in one place and closed in another), and users see differently worded errors for the
same mistake. Each check raises ValueError naming the key and returns the value, so a reader can
check and assign in one line. numpy only (numpy integers and floats count as numbers): the
sampler core imports it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from vade.config_schema import shown, subschema

__all__ = ["NAME_MAX", "check_bool", "check_choice", "check_float", "check_int", "check_name",
           "check_number", "reject_unknown"]

# A name that becomes a path component (data/<name>, results/<name>): the schema's ``name``
# states it once; this module gives the refusal a sentence a user can act on.
NAME_MAX: int = subschema("name")["maxLength"]
_NAME = re.compile(subschema("name")["pattern"])


def _finite(value: Any) -> bool:
    """Python integers are finite at any size (numpy's isfinite fails on ones past 64 bits)."""
    return isinstance(value, (int, np.integer)) or bool(np.isfinite(value))


def check_number(name: str, value: Any, lo: float, hi: float, *, lo_open: bool = False,
                 integer: bool = False) -> Any:
    """``value`` if lo <= value <= hi (lo < value if ``lo_open``); an integer if ``integer``.
    Booleans, NaN and infinities are refused."""
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(value, (int, np.integer)) if integer else isinstance(
        value, (int, float, np.integer, np.floating))
    if isinstance(value, bool) or not ok_type or not _finite(value):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if value < lo or value > hi or (lo_open and value == lo):
        left = "(" if lo_open else "["
        raise ValueError(f"{name} = {value!r} is out of range {left}{lo}, {hi}]")
    return value


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """An integer (not a bool) in [lo, hi]."""
    return int(check_number(name, value, lo, hi, integer=True))


def check_float(name: str, value: Any, lo: float, hi: float, *, open_lo: bool = False) -> float:
    """A number (not a bool) in [lo, hi] ((lo, hi] if ``open_lo``), as a float."""
    return float(check_number(name, value, lo, hi, lo_open=open_lo))


def check_bool(name: str, value: Any) -> bool:
    """A YAML boolean: 1, 0, "yes" and "true" are refused (a typo should fail, not coerce)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")  # noqa: TRY004
    return value


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """One of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} = {value!r} is unknown (allowed: "
                         f"{', '.join(str(a) for a in allowed)})")
    return value


def reject_unknown(values: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    """Raise naming the first unknown key of a config section (a typo should fail, not be
    ignored)."""
    allowed = set(allowed)
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ValueError(f"unknown key '{where}.{unknown[0]}' (allowed: {sorted(allowed)})")


def check_name(name: str, value: Any) -> str:
    """A name that becomes one path component: letters, digits, ``_``, ``-``, ``.``, not
    starting with ``.`` (so not ``..``), at most ``NAME_MAX`` characters. The error shows at
    most 40 characters of the value (issue 49: a 10 MB name gave a 10 MB error line)."""
    if isinstance(value, str) and _NAME.fullmatch(value):
        return value
    size = f" ({len(value):,} characters)" if isinstance(value, str) else ""
    raise ValueError(f"config key '{name}' must be a name usable as one folder: letters, digits, "
                     f"'_', '-', '.', not starting with '.', at most {NAME_MAX} characters; got "
                     f"{shown(value)}{size}")
