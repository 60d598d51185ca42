"""The sampler's starting posterior, read from the initial difficulty rollouts (both backends).

``initial.parquet`` (written by ``vade init-difficulty``, HF or vLLM engine alike) has one row per
sample: ``sample_id`` (= ``extra_info.index``), ``correct`` (r of G) and ``rollouts`` (G). The
sampler starts from alpha = r, beta = G - r (Algorithm 1, lines 1-4), matched by sample id: the
local trainer asks for ids 0..N-1, verl for the ids that survived ``filter_overlong_prompts``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from vade.data.parquet_read import read_table

__all__ = ["initial_alpha_beta"]


def initial_alpha_beta(path: str | Path, sample_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """alpha = r, beta = G - r per dataset position, from ``initial.parquet``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"initial difficulty file not found: {path}")
    table = read_table(path)
    missing = {"sample_id", "correct", "rollouts"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}")
    for name in ("sample_id", "correct", "rollouts"):
        kind = table.schema.field(name).type
        if not pa.types.is_integer(kind):   # pass rates (correct / G) would seed wrong priors
            raise ValueError(f"{path}: column '{name}' is {kind}; it must hold integer counts "
                             "(correct = rollouts answered right out of rollouts = G), as "
                             "`vade init-difficulty` writes them")
    sid = table.column("sample_id").to_numpy().astype(np.int64)
    r = table.column("correct").to_numpy().astype(np.float64)
    g = table.column("rollouts").to_numpy().astype(np.float64)
    bad = (g <= 0) | (r < 0) | (r > g) | ~np.isfinite(r) | ~np.isfinite(g)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}: sample_id {sid[k]} has correct = {r[k]:g}, rollouts = {g[k]:g} "
                         "(need 0 <= correct <= rollouts, rollouts > 0)")
    order = np.argsort(sid, kind="stable")
    sid, r, g = sid[order], r[order], g[order]
    if sid.size and (sid[1:] == sid[:-1]).any():
        dup = int(sid[1:][sid[1:] == sid[:-1]][0])
        raise ValueError(f"{path}: sample_id {dup} appears more than once")
    pos = np.searchsorted(sid, sample_ids)
    found = (pos < sid.size) & (sid[np.minimum(pos, sid.size - 1)] == sample_ids)
    if not found.all():
        k = int(np.flatnonzero(~found)[0])
        raise ValueError(f"{path}: no initial difficulty for sample_id {sample_ids[k]} "
                         f"({int((~found).sum())} training samples missing)")
    return r[pos].copy(), (g - r)[pos].copy()
