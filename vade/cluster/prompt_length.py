"""The built data's prompt lengths against ``train.verl.max_prompt_length``, before a job runs.

Why: ``train.verl.max_prompt_length`` becomes verl's ``data.max_prompt_length``, the width
verl 0.7.1's agent loop left-pads every prompt to (``agent_loop.py``, ``tokenizer.pad(...,
padding="max_length")``). Below the data's longest prompt, a longer prompt is not padded but
left longer, and the batch's ``torch.cat`` of prompts of two widths fails, hours into a job (read
from verl's source, not run here); verl's overlong filter does not catch it, since it counts one
token per image (``vade.data.prompt_tokens``). Far above it, under the SDPA default, every
update and log-prob pass pays for the padding (``vade.cluster.bill.padded``). ``vade build-data`` records the longest prompt per
model, counted by the model's own processor (``vade.data.prompt_tokens``), in
``data/<name>/manifest.json``; this module reads it for ``vade plan`` (refusal and the padding's
price) and ``vade preflight --stage train`` (the same refusal, one line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vade.cluster.preflight_check import Check
from vade.grid import cells as grid_cells
from vade.train.config import TrainConfig
from vade.train.verl.config import VerlConfig

__all__ = ["KEY", "PADDING_SLACK", "Longest", "check_prompt_length", "data_manifest",
           "longest_prompt", "prompt_means", "too_short"]

KEY = "train.verl.max_prompt_length"   # what feeds verl's data.max_prompt_length
PADDING_SLACK = 0.10   # padding that adds more than this to a response's positions is priced


@dataclass(frozen=True)
class Longest:
    """The grid's longest prompt, or why it is not known (``tokens`` None)."""

    tokens: int | None
    model: str = ""
    uid: str = ""
    p99: int | None = None
    source: str = ""
    reason: str = ""


def data_manifest(config: Mapping[str, Any], data_dir: str | Path | None = None) -> Path:
    """``data/<name>/manifest.json`` (relative to where the workflow runs), or under
    ``data_dir``."""
    return Path(data_dir or Path("data") / str(config.get("name", "?"))) / "manifest.json"


def _entries(config: Mapping[str, Any], path: Path) -> tuple[dict[str, dict[str, Any]], str]:
    """The manifest's entry per verl-trained model of the grid whose processor is the config's
    model, and why the others are missing ('' when none is)."""
    if not path.is_file():
        return {}, f"{path} is not built yet (vade build-data records the lengths)"
    try:
        recorded = json.loads(path.read_text()).get("prompt_tokens") or {}
    except (OSError, ValueError) as exc:
        return {}, f"{path} cannot be read: {exc}"
    models = config.get("models") or {}
    out, why = {}, []
    for m in dict.fromkeys(c.model for c in grid_cells(config)):
        e = recorded.get(m) or {}
        ref = (models.get(m) or {}).get("name_or_path")
        if e.get("max") is None:
            why.append(f"{m}: " + e.get("reason", f"not recorded in {path} (built before "
                                                  "vade counted prompts: rebuild it)"))
        elif e.get("processor") != ref:
            why.append(f"{m}: {path} counted with {e.get('processor')}'s processor, the config "
                       f"names {ref} (rebuild the data)")
        else:
            out[m] = e
    return out, "; ".join(why)


def longest_prompt(config: Mapping[str, Any], data_dir: str | Path | None = None) -> Longest:
    """The longest prompt over the grid's verl-trained models (the data is shared), or why it
    is not known. Off verl: not known, and not needed."""
    if (config.get("train") or {}).get("backend") != "verl":
        return Longest(None, reason="train.backend is not verl")
    path = data_manifest(config, data_dir)
    found, why = _entries(config, path)
    if not found or why:
        return Longest(None, source=str(path), reason=why or "no model in the grid")
    model = max(found, key=lambda m: found[m]["max"])
    e = found[model]
    return Longest(int(e["max"]), model, str(e.get("longest", "")), e.get("p99"), str(path))


def prompt_means(config: Mapping[str, Any], data_dir: str | Path | None = None
                 ) -> dict[str, float]:
    """Each model's mean prompt in tokens, where the manifest records it."""
    found, _ = _entries(config, data_manifest(config, data_dir))
    return {m: float(e["mean"]) for m, e in found.items() if e.get("mean") is not None}


def too_short(config: Mapping[str, Any], longest: Longest) -> str | None:
    """One line refusing a ``max_prompt_length`` below the data's longest prompt; None when it
    is not below (or the length is not known)."""
    if longest.tokens is None:
        return None
    limit = VerlConfig.from_dict((config.get("train") or {}).get("verl")).max_prompt_length
    if limit >= longest.tokens:
        return None
    return (f"{KEY} = {limit:,} is below the longest prompt of the data, {longest.tokens:,} "
            f"tokens ({longest.model}'s processor, row {longest.uid}, {longest.source}): verl "
            "pads every prompt to that width and cannot batch a longer one (its overlong filter "
            f"counts one token per image and lets it through); set {KEY}: {longest.tokens}")


def check_prompt_length(config: Mapping[str, Any], data_dir: str | Path | None = None) -> Check:
    """Preflight's line: refused below the data's longest prompt; above it, what the padding
    to ``max_prompt_length`` multiplies (``vade plan`` prices it); unknown says why."""
    longest = longest_prompt(config, data_dir)
    refusal = too_short(config, longest)
    if refusal:
        return Check("prompt length", False, refusal, f"raise {KEY}")
    if longest.tokens is None:
        return Check("prompt length", True, f"longest prompt not known: {longest.reason}")
    train = config.get("train") or {}
    verl = VerlConfig.from_dict(train.get("verl"))
    response = int(train.get("max_new_tokens", TrainConfig.max_new_tokens))
    pad = (f"; with {KEY} = {verl.max_prompt_length:,} and SDPA every pass computes "
           f"{(verl.max_prompt_length + response) / (longest.tokens + response):.1f}x the "
           f"positions it needs (vade plan prices it)" if verl.attention == "sdpa" and
           verl.max_prompt_length > longest.tokens else "")
    return Check("prompt length", True, f"the data's longest prompt, {longest.tokens:,} tokens "
                 f"({longest.model}'s processor), fits {KEY} = {verl.max_prompt_length:,}{pad}")
