"""Checkpoints of the local trainer: everything a resumed run needs to continue bit for bit.

A checkpoint holds the policy weights, the optimizer state, the sampler's ``state_dict`` (its
posterior and RNGs), the python/numpy/torch RNG states, the step and the cumulative rollouts.
The generation engine needs no state of its own: its seed for step t, generation batch k is
derived from (run seed, t, k), so a resumed step draws the same rollouts.

Files are ``step_<t>.pt`` plus a manifest ``step_<t>.json`` (the file's SHA-256 and size, and what
a resume decision needs without loading the weights: the config that wrote it, the validated
steps, the cumulative rollouts). Both are written to temporary names and renamed (``os.replace``
is atomic on POSIX), the manifest last: a checkpoint exists only once its manifest does, so a kill
during the write leaves the previous checkpoint intact and never a truncated one under the final
name. A checkpoint whose bytes do not match its manifest's checksum is refused, naming the file.
Temporary files of a killed writer are removed by :func:`remove_stale_temporaries` when the next
run starts. The newest ``keep`` checkpoints are kept.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from vade.data.writer import file_sha256

__all__ = ["capture_rng", "checkpoints", "latest_checkpoint", "load_checkpoint", "manifest",
           "remove_after", "remove_stale_temporaries", "restore_rng", "save_checkpoint"]

_NAME = re.compile(r"^step_(\d+)\.pt$")
_TEMP = re.compile(r"^\..+\.tmp-(\d+)$")  # .<final name>.tmp-<pid of the writer>


def capture_rng() -> dict[str, Any]:
    """The global RNG states a training step may touch (python, numpy legacy, torch CPU)."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    return {"python": random.getstate(), "numpy": np.random.get_state(),
            "torch": torch.get_rng_state()}


def restore_rng(state: dict[str, Any]) -> None:
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def _manifest_path(path: Path) -> Path:
    return path.with_suffix(".json")


def checkpoints(directory: str | Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of every complete checkpoint (its manifest written), oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir()
             if (m := _NAME.match(p.name)) and _manifest_path(p).is_file()]
    return sorted(found)


def latest_checkpoint(directory: str | Path) -> Path | None:
    """The newest complete checkpoint in ``directory`` (temporary files are ignored), or None."""
    found = checkpoints(directory)
    return found[-1][1] if found else None



def _write_atomic(final: Path, write: Any) -> None:
    """``write(tmp)`` then rename. A failed write (torch's writer reports a full disk as a
    RuntimeError, "unexpected pos ...") is an ``OSError`` naming ``final``, so the command says
    it in one line (``vade.cli``), and the temporary file is removed."""
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, final)
    except RuntimeError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        free = shutil.disk_usage(final.parent).free
        raise OSError(errno.ENOSPC if free < (64 << 20) else errno.EIO,
                      f"the write failed ({first}); {free / 2**20:.0f} MiB free on its disk",
                      str(final)) from None
    finally:
        tmp.unlink(missing_ok=True)


def save_checkpoint(directory: str | Path, step: int, state: dict[str, Any],
                    keep: int = 2, info: dict[str, Any] | None = None) -> Path:
    """Write ``state`` as ``step_<step>.pt`` and its manifest (``info`` plus the checksum)
    atomically; prune all but the newest ``keep``."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step_{int(step):08d}.pt"
    _write_atomic(final, lambda tmp: torch.save({**state, "step": int(step)}, tmp))
    meta = {**(info or {}), "step": int(step), "sha256": file_sha256(final),
            "bytes": final.stat().st_size}
    _write_atomic(_manifest_path(final),
                  lambda tmp: tmp.write_text(json.dumps(meta, sort_keys=True) + "\n"))
    for _, old in checkpoints(directory)[:-keep]:
        _manifest_path(old).unlink(missing_ok=True)  # first: a half-pruned one is not complete
        old.unlink(missing_ok=True)
    return final


def manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of checkpoint ``path`` (a ValueError naming the file when unreadable)."""
    meta_path = _manifest_path(Path(path))
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"checkpoint manifest {meta_path} cannot be read ({exc}); delete "
                         f"{meta_path} and {path} to resume from an earlier checkpoint") from None
    if not isinstance(meta, dict) or "sha256" not in meta:
        raise ValueError(f"checkpoint manifest {meta_path} has no checksum; delete it and {path}")
    return meta


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (our own file: full unpickling),
    after checking its bytes against the manifest's checksum."""
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    meta = manifest(path)
    if path.stat().st_size != meta.get("bytes") or file_sha256(path) != meta["sha256"]:
        raise ValueError(f"checkpoint {path} is corrupt (its bytes do not match the checksum in "
                         f"{_manifest_path(path).name}); delete it and its manifest to resume "
                         "from an earlier checkpoint, or delete the run folder to start again")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a corrupt file names itself
        raise ValueError(f"checkpoint {path} cannot be read: {exc}") from exc


def remove_after(directory: str | Path, step: int) -> list[Path]:
    """Delete the checkpoints after ``step`` (a resume from ``step`` replaces that future);
    returns what was removed."""
    gone = []
    for s, path in checkpoints(directory):
        if s > step:
            _manifest_path(path).unlink(missing_ok=True)
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(*directories: str | Path) -> list[Path]:
    """Delete ``.<name>.tmp-<pid>`` files and folders whose writer is no longer running (a kill
    during a checkpoint, ``done.json`` or final model write: the final model is a folder).
    Returns what was removed. A ``step_<t>.pt`` without a manifest (a kill between the two
    renames, or an older version's file) is not a checkpoint and is left alone: the next save of
    that step replaces it."""
    gone = []
    for directory in map(Path, directories):
        if not directory.is_dir():
            continue
        for path in directory.iterdir():
            m = _TEMP.match(path.name)
            if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                gone.append(path)
    return sorted(gone)
