"""Which hub commit each dataset copy is, and the refusal to build from unpinned ones.

Why: a hub repository's ``main`` moves (LLaVA-OneVision-Data has been re-uploaded), so "the
paper's training set" is only one set of rows when every source and benchmark is read at a fixed
commit. Pins live in ``cluster.revisions`` (asset id -> revision), the same map ``vade prefetch``
downloads by. With ``data.paper.require_pinned`` the build refuses, before reading any row, a
repository whose pin is missing or not a 40-hex commit, and after opening a copy, one whose commit
cannot be shown or differs from the pin. Without it the commits are only recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from vade.data.benchmarks import benchmark_datasets
from vade.data.config import PaperConfig
from vade.data.sources import SourceSpec

__all__ = ["COMMIT", "check_copy", "check_pins", "pinned_repos"]

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HOW = ("`vade prefetch --config <config>` on a machine with network resolves each once and "
        "records its commit in cluster.revisions_lock (vade.job.revisions), which this build "
        "reads")


def pinned_repos(paper: PaperConfig, specs: Iterable[SourceSpec]) -> list[str]:
    """Every dataset repository the build reads: the sources', then the benchmarks'."""
    repos = [s.repo for s in specs]
    repos += [repo for repo, _ in benchmark_datasets(paper.exclude_benchmarks)]
    return list(dict.fromkeys(repos))


def check_pins(paper: PaperConfig, specs: Iterable[SourceSpec]) -> None:
    """Under ``require_pinned``: every repository has a commit in ``cluster.revisions``."""
    if not paper.require_pinned:
        return
    bad = [f"{r} ({paper.revisions.get(r, 'no pin')})" for r in pinned_repos(paper, specs)
           if not COMMIT.match(paper.revisions.get(r, ""))]
    if bad:
        raise ValueError(f"data.paper.require_pinned: cluster.revisions must pin every dataset "
                         f"repository to a 40-hex hub commit; not pinned: {', '.join(bad)}. "
                         + _HOW)


def check_copy(paper: PaperConfig, spec: SourceSpec, provenance: dict[str, Any]) -> None:
    """The opened copy is the pinned commit (refused otherwise under ``require_pinned``, or
    whenever a known commit contradicts a commit pin). Adds ``pinned`` to ``provenance``."""
    pin = paper.revisions.get(spec.repo)
    provenance["pinned"] = pin
    commit = provenance.get("commit")
    where = provenance.get("path") or provenance.get("origin")
    if pin and COMMIT.match(pin) and commit and commit != pin:
        raise ValueError(f"{spec.label}: the copy read ({where}) is commit {commit}, but "
                         f"cluster.revisions pins {spec.repo} to {pin}")
    if paper.require_pinned and commit != pin:
        raise ValueError(f"{spec.label}: cannot show that the copy read ({where}, origin "
                         f"{provenance.get('origin')}) is the pinned commit {pin}: download it "
                         f"with `huggingface-cli download --local-dir` (copy it with its "
                         f".cache folder and file times, e.g. `cp -a`) or stage it with "
                         f"`vade prefetch`")
