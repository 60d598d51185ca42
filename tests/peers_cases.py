"""Reading a peer's logged state back, shared by the peers' local and verl training tests.

Why one reader: both trainers write the same ``peer_state`` table, and both tests compare it
after a resume and against the peer's own update rule; two copies of the query could drift apart.
"""

from __future__ import annotations

from pathlib import Path

import duckdb


def peer_state_rows(db: Path) -> list[tuple[int, int, str, float]]:
    """Every ``(step, sample_id, name, value)`` row of a run's ``peer_state``, sorted."""
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT step, sample_id, name, value FROM peer_state ORDER BY ALL"
                           ).fetchall()


def state_by_step(rows: list[tuple[int, int, str, float]], name: str) -> dict[int, dict[int, float]]:
    """step -> {sample_id: value} of one state name (an array of the peer, e.g. MoPPS's ``a``)."""
    out: dict[int, dict[int, float]] = {}
    for step, sid, key, value in rows:
        if key == name:
            out.setdefault(step, {})[sid] = value
    return out
