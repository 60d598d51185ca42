"""The config's types, ranges and choices, stated once: ``workflow/schemas/config.schema.yaml``.

Why here: a bound written both in the schema and in a reader's ``if`` drifts (issue 46 found
``vade/eval/config.py`` repeating the schema's work by hand). Snakemake checks the whole config
against the schema when it starts; every ``vade`` verb checks the sections it receives against the
same file (``check``), so a verb run by hand refuses what the workflow refuses, with the same line.
The typed config classes are then built from already-checked mappings (``build``) and keep only
what a schema cannot say (one key against another, a path that must exist).

Every refusal is one line naming the full dotted key, the value and what is allowed, made from
jsonschema's ``ValidationError`` (``error_line``)::

    config key 'evaluate.repeats' must be an integer in [1, 64], got 0

A number must be finite (YAML's ``.nan`` and JSON's ``NaN`` parse as floats that every range
check would let through), and an integer a Python ``int`` (JSON Schema accepts ``4.0``). The
schema is read from the checkout (jobs run the package from it, and ``make`` installs it
editable).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["SCHEMA_PATH", "build", "check", "default", "error_line", "schema", "shown", "subschema"]

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"
# Sections a verb receives under another name: ``model`` is one entry of ``models``.
_ALIASES = {"model": ("models", "additionalProperties")}
_SHOWN = 40  # characters of a bad value in the error line (a 10 MB value is not echoed)
_TYPES = {"integer": "an integer", "number": "a number", "string": "a string",
          "boolean": "true or false", "object": "a mapping", "array": "a list", "null": "null"}


def _finite_number(checker: Any, value: Any) -> bool:
    return (jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(value, "number")
            and (not isinstance(value, float) or math.isfinite(value)))


def _python_int(checker: Any, value: Any) -> bool:
    """An int, not ``4.0``: JSON Schema calls 4.0 an integer, and ``range(4.0)`` fails later."""
    return isinstance(value, int) and not isinstance(value, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": _finite_number, "integer": _python_int}))


@functools.cache
def schema() -> dict[str, Any]:
    """The schema file's content (read once per process)."""
    if not SCHEMA_PATH.is_file():
        raise FileNotFoundError(f"config schema not found: {SCHEMA_PATH} (vade runs from its "
                                "checkout: make installs it editable)")
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """A node with its ``$ref`` filled in; the node's own keys (a ``default``, a tighter bound)
    apply beside the referenced ones, as in JSON Schema 2020-12."""
    ref = node.get("$ref")
    if not ref:
        return node
    own = {k: v for k, v in node.items() if k != "$ref"}
    return {**schema()["$defs"][ref.removeprefix("#/$defs/")], **own}


def subschema(key: str) -> Mapping[str, Any]:
    """The schema of the dotted ``key`` (``""``: the whole config; ``evaluate.judge``; ``model``:
    one entry of ``models``)."""
    node: Mapping[str, Any] = schema()
    for part in key.split(".") if key else ():
        if part in _ALIASES and node is schema():
            section, inner = _ALIASES[part]
            node = _resolve(node["properties"][section][inner])
            continue
        try:
            node = _resolve(node["properties"][part])
        except KeyError:
            raise KeyError(f"the config schema has no key '{key}'") from None
    return node


def default(key: str) -> Any:
    """The schema's ``default`` of the dotted ``key``: a config class's field default reads it
    here, so the value Snakemake fills in and the one a verb run by hand gets are one number."""
    node = subschema(key)
    if "default" not in node:
        raise KeyError(f"the config schema states no default for '{key}'")
    return node["default"]


@functools.cache
def _validator(key: str, defaults: bool) -> Any:
    node = dict(subschema(key))
    if defaults:
        node.pop("required", None)
    return _Validator({**node, "$defs": schema()["$defs"]})


def check(value: Any, key: str = "", where: str | None = None, *,
          defaults: bool = False) -> None:
    """Raise ValueError (``error_line``) unless ``value`` is valid for the dotted ``key``.

    ``where``: the key as the user wrote it, when it arrived under another name (the sampler
    settings verl hands back as ``data.sampler.vade``). ``defaults``: the section's own required
    keys may be left out, because the reader has a default or a command-line flag for each
    (``train.backend``: ``--backend``); the workflow's config file must still state them."""
    error = jsonschema.exceptions.best_match(_validator(key, defaults).iter_errors(value))
    if error is not None:
        raise ValueError(error_line(error, key if where is None else where))


def shown(value: Any) -> str:
    """``repr(value)``, cut to 40 characters: a 10 MB value is not echoed in an error line."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _dotted(prefix: str, path: Any) -> str:
    out = prefix
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _range(node: Mapping[str, Any]) -> str:
    """``in [0, 1]``, ``in (0, 2]``, ``>= 1``, ``<= 64`` from a schema node's bounds."""
    lo = ("[", node["minimum"]) if "minimum" in node else (
        ("(", node["exclusiveMinimum"]) if "exclusiveMinimum" in node else None)
    hi = ("]", node["maximum"]) if "maximum" in node else (
        (")", node["exclusiveMaximum"]) if "exclusiveMaximum" in node else None)
    if lo and hi:
        return f"in {lo[0]}{lo[1]}, {hi[1]}{hi[0]}"
    if lo:
        return f"{'>=' if lo[0] == '[' else '>'} {lo[1]}"
    return f"{'<=' if hi[0] == ']' else '<'} {hi[1]}"  # type: ignore[index]


def _kind(node: Mapping[str, Any]) -> str:
    types_ = node.get("type", [])
    types_ = [types_] if isinstance(types_, str) else types_
    return "an integer" if "integer" in types_ else "a number"


def error_line(error: jsonschema.ValidationError, prefix: str = "") -> str:
    """One line for jsonschema's ``error`` at ``prefix`` (the dotted key of the checked value):
    the full dotted key, the bad value, and what is allowed."""
    key = _dotted(prefix, error.absolute_path)
    rule, bound, value = error.validator, error.validator_value, error.instance
    head = f"config key '{key}'" if key else "config"
    if rule == "type":
        wanted = [bound] if isinstance(bound, str) else bound
        allowed = " or ".join(_TYPES.get(t, t) for t in wanted)
        return f"{head} must be {allowed}, got {shown(value)}"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{head} must be {_kind(error.schema)} {_range(error.schema)}, got {shown(value)}"
    if rule == "enum" and "propertyNames" in error.schema_path:   # a key of a free mapping
        close = difflib.get_close_matches(str(value), list(map(str, bound)), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return (f"config key '{_dotted(key, [value])}' is unknown ({hint}allowed: "
                f"{', '.join(map(str, bound))})")
    if rule == "enum":
        return f"{head} must be one of {', '.join(map(str, bound))}, got {shown(value)}"
    if rule == "const":
        return f"{head} must be {bound!r}, got {shown(value)}"
    if rule == "additionalProperties" and bound is False:
        known = sorted(error.schema.get("properties", {}))
        extra = min(str(k) for k in value if k not in known)
        close = difflib.get_close_matches(extra, known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return (f"config key '{_dotted(key, [extra])}' is unknown ({hint}allowed: "
                f"{', '.join(known)})")
    if rule == "required":
        missing = next(k for k in bound if k not in value)
        return f"config key '{_dotted(key, [missing])}' is required"
    if rule == "minLength":
        wanted = "a non-empty string" if bound == 1 else f"a string of at least {bound} characters"
        return f"{head} must be {wanted}, got {shown(value)}"
    if rule == "maxLength":
        return (f"{head} must be at most {bound} characters, got {shown(value)} "
                f"({len(value):,} characters)")
    if rule == "minItems":
        wanted = "a non-empty list" if bound == 1 else f"a list of at least {bound} items"
        return f"{head} must be {wanted}, got {shown(value)}"
    if rule == "minProperties":
        keys = "one key" if bound == 1 else f"{bound} keys"
        return f"{head} must have at least {keys}, got {shown(value)}"
    if rule == "uniqueItems":
        return f"{head} must not repeat an item, got {shown(value)}"
    if rule == "pattern":
        return f"{head} must match {bound}, got {shown(value)}"
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    return f"{head}: {message}"


def build(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls(**values)`` for a checked mapping: a number becomes a float where the field is a
    float (the schema's ``number`` admits ``1``), a list a tuple where the field is a tuple."""
    hints = typing.get_type_hints(cls)
    out = dict(values)
    for f in dataclasses.fields(cls):
        value = out.get(f.name)
        if value is None:
            continue
        hint = hints[f.name]
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        if float in args and not isinstance(value, bool):
            out[f.name] = float(value)
        elif any(typing.get_origin(a) is tuple for a in args) and isinstance(value, list):
            out[f.name] = tuple(value)
    return cls(**out)
