"""What a rerun of a run folder does with what the folder already holds: resume, or start fresh.

A rerun gets a config; the folder holds checkpoints written under some earlier config. The
rule a user can rely on: **the outputs always equal those of an uninterrupted run of the config
given now**. So the trainer resumes from a checkpoint only when every step up to it would have
been the same under the new config, and otherwise starts from step 0:

* keys that change what a step computes (``lr``, ``method``, ``seed``, the sampler, ...: the
  *fingerprint*; for DAPO also the run's rollout budget, which ``steps`` sets) -> no checkpoint
  is valid: start fresh (the old outputs are moved aside, ``vade.train.run_folder``);
* a changed input -- the training or validation data, the model, the initial difficulty
  (``vade.train.local.inputs.input_hashes``: their content, part of the fingerprint) -> start
  fresh the same way, the reason naming the input; a checkpoint that records no input hashes
  (written before they were recorded) cannot vouch for its inputs and is not resumed;
* more ``steps`` -> resume from the newest checkpoint whose validated steps the new schedule also
  validates (the old end was validated as the end; if the new schedule does not validate it, an
  earlier checkpoint is used, and the steps after it are recomputed);
* fewer ``steps`` -> resume from the newest checkpoint at or before the new end (the history after
  it is cut, the checkpoints after it deleted, the new end validated);
* ``val_every`` / ``val_before_train`` -> the newest checkpoint whose validated steps equal the new
  schedule's up to it, else fresh;
* ``checkpoint_every``, ``keep_checkpoints``, ``threads``, ``tracking``, ``backend``, ``verl``
  change nothing a step computes: resume as is.

A checkpoint's manifest (``vade.train.checkpoint``) carries its fingerprint, full config,
validated steps and cumulative rollouts, so the decision reads no weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vade.tracking import flatten
from vade.train.checkpoint import checkpoints, manifest
from vade.train.config import TrainConfig

__all__ = ["NEUTRAL", "ResumePlan", "budget_spent", "checkpoint_info", "fingerprint",
           "plan_resume", "val_steps"]

# Keys whose change leaves every step's computation unchanged (the schedule keys are checked
# against the checkpoint's validated steps instead).
NEUTRAL = {"steps", "val_every", "val_before_train", "checkpoint_every", "keep_checkpoints",
           "threads", "tracking", "backend", "verl"}


def _plain(value: Any) -> Any:
    """JSON round trip: what a manifest gives back (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def fingerprint(cfg: TrainConfig, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The keys every step's computation depends on, and the inputs' hashes when given."""
    out = {k: v for k, v in cfg.to_dict().items() if k not in NEUTRAL}
    if cfg.spec.filters:  # DAPO's per-step cap is what is left of the run's budget
        out["rollout_budget"] = cfg.rollout_budget
    if inputs is not None:
        out["inputs"] = dict(inputs)
    return _plain(out)


def budget_spent(cfg: TrainConfig, rollouts: int) -> bool:
    """DAPO's filter only (DAPO, GRESO): the run's rollout budget cannot pay for one more
    plain batch."""
    return (cfg.spec.filters
            and cfg.rollout_budget - rollouts < cfg.batch_size * cfg.rollouts_per_prompt)


def val_steps(cfg: TrainConfig, step: int, rollouts: int) -> list[int]:
    """The steps <= ``step`` an uninterrupted run of ``cfg`` validates, given its cumulative
    rollouts at ``step`` (a spent DAPO budget makes ``step`` the end)."""
    points = {0} if cfg.val_before_train else set()
    if cfg.val_every:
        points.update(range(cfg.val_every, step + 1, cfg.val_every))
    if step == cfg.steps or (step and budget_spent(cfg, rollouts)):
        points.add(step)
    return sorted(points)


def checkpoint_info(cfg: TrainConfig, val: dict[int, float], rollouts: int,
                    inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A checkpoint's manifest fields (``vade.train.checkpoint.save_checkpoint``'s ``info``)."""
    return {"fingerprint": fingerprint(cfg, inputs), "config": _plain(cfg.to_dict()),
            "val_steps": sorted(int(s) for s in val), "rollouts_cumulative": int(rollouts)}


@dataclass(frozen=True)
class ResumePlan:
    """``checkpoint``: resume from it (None: start at step 0). ``changed``: config keys that
    differ from the newest checkpoint's (``train.lr: 0.05 -> 0.01``). ``reason``: one line for
    the log."""

    checkpoint: Path | None
    step: int = 0
    changed: list[str] = field(default_factory=list)
    reason: str = ""


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    a, b = flatten(old), flatten(new)
    return [f"{k}: {a.get(k, '(unset)')} -> {b.get(k, '(unset)')}"
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _inputs_changed(old: Any, new: dict[str, Any]) -> str | None:
    """Why the recorded inputs ``old`` differ from ``new`` (one phrase), or None if equal."""
    if not isinstance(old, dict):
        return ("the checkpoints record no input hashes (written by an older version), so "
                "their data, model and difficulty cannot be checked")
    new = _plain(new)
    diff = [f"{k}: {_short(old.get(k))} -> {_short(new.get(k))}"
            for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return ("an input changed (" + "; ".join(diff) + ")") if diff else None


def _short(value: Any) -> str:
    text = str(value)
    return text[:19] if text.startswith("sha256:") else text


def plan_resume(cfg: TrainConfig, directory: str | Path,
                inputs: dict[str, Any] | None = None) -> ResumePlan:
    """Where a run of ``cfg`` with ``inputs`` (``input_hashes``; None: not compared) in a folder
    with checkpoints in ``directory`` starts (module doc)."""
    found = checkpoints(directory)[::-1]
    if not found:
        return ResumePlan(None, reason="no checkpoint")
    newest = manifest(found[0][1])
    changed = _changed({"train": newest.get("config", {})}, {"train": _plain(cfg.to_dict())})
    if inputs is not None:
        why = _inputs_changed(newest.get("fingerprint", {}).get("inputs"), inputs)
        if why is not None:
            return ResumePlan(None, changed=changed, reason=why)
    now = fingerprint(cfg, inputs)
    if newest.get("fingerprint") != now:
        keys = [c for c in changed if c.split(":")[0].split(".")[1] not in NEUTRAL] or changed
        return ResumePlan(None, changed=changed,
                          reason="the config changes what every step computes ("
                          + "; ".join(keys[:3]) + (" ..." if len(keys) > 3 else "") + ")")
    for step, path in found:
        meta = manifest(path)
        if step <= cfg.steps and meta.get("val_steps") == val_steps(
                cfg, step, int(meta.get("rollouts_cumulative", 0))):
            why = "resuming" if not changed else "resuming under the changed " + "; ".join(changed)
            return ResumePlan(path, step, changed, f"{why} from {path.name}")
    return ResumePlan(None, changed=changed,
                      reason="no checkpoint matches the new length and validation schedule ("
                      + "; ".join(changed) + ")")
