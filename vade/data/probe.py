"""``vade build-data --probe N``: parse the first N rows of every configured source, build nothing.

Why: a source whose answers come in a shape the parser does not know shows up as a low parse rate
in seconds, before a build walks it (and before a GPU job trains on what it made of it). The
probe uses the build's own row step (``rows.SourceRows``) and threshold
(``data.paper.min_parse_rate``), so a source it passes is one the build accepts.
"""

from __future__ import annotations

from typing import Any

from vade.data.config import DataConfig
from vade.data.rows import SourceRows
from vade.data.sources import TASKS
from vade.data.sources.loading import load_source

__all__ = ["format_probe", "probe_sources"]


def probe_sources(cfg: DataConfig, n: int) -> dict[str, Any]:
    """Per task: the tally of its first ``n`` rows (file order), its provenance and ``ok``."""
    paper = cfg.paper
    assert paper is not None
    out: dict[str, Any] = {}
    for task in sorted(t for t, c in paper.tasks.items() if c):
        spec = TASKS[task]
        ds, provenance = load_source(spec, local_dir=paper.local_dir, cache_dir=paper.cache_dir,
                                     use_hub=paper.use_hub)
        rows = SourceRows(spec, ds)
        for pos in range(min(n, len(ds))):
            rows.parse(pos)
        report = rows.tally.to_dict()
        rate = report["parse_rate"]
        report.update(source=spec.label, rows_in_source=len(ds), rule=spec.answer,
                      ok=rate is not None and rate >= paper.min_parse_rate,
                      commit=provenance.get("commit"), origin=provenance.get("origin"))
        out[task] = report
    return {"rows_probed": n, "min_parse_rate": paper.min_parse_rate, "tasks": out}


def format_probe(result: dict[str, Any]) -> str:
    """The report as lines: one per source, then up to three examples of each failure."""
    lines = [(f"{'task':<11} {'parse':>7} {'parsed':>7} {'no_answer':>9} {'corrupt_image':>13} "
             f"{'other':>5}  source")]
    for task, r in result["tasks"].items():
        inv = r["invalid"]
        other = sum(inv.values()) - inv.get("no_answer", 0) - inv.get("corrupt_image", 0)
        rate = "-" if r["parse_rate"] is None else f"{r['parse_rate']:.1%}"
        flag = "" if r["ok"] else f"  BELOW {result['min_parse_rate']:.0%}"
        lines.append(f"{task:<11} {rate:>7} {r['parsed']:>7} {inv.get('no_answer', 0):>9} "
                     f"{inv.get('corrupt_image', 0):>13} {other:>5}  {r['source']}{flag}")
        for reason, examples in r["examples"].items():
            for ex in examples:
                lines.append(f"    {reason}: {ex[:160]}")
    return "\n".join(lines)
