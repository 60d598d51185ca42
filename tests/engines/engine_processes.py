"""Process helpers of the engines tier: what an engine left running after its job ended."""

from __future__ import annotations

import time


def descendants(pid: int) -> list[int]:
    """The pids of a process's children, grandchildren, ... (vLLM's engine cores among them)."""
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """The pids still running (not zombies) after up to ``seconds``; [] when all ended."""
    import psutil

    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + seconds
    while True:
        alive = [p for p in pids if running(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)
