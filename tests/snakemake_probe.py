"""Load the workflow once per config file in one process, through Snakemake's own API.

Why: a config refusal is raised while Snakemake reads the workflow (``common.smk``), before any
job is scheduled; a whole ``snakemake`` start per bad config (~5 s: the CLI, its imports, the
Snakefile) proves nothing more than that read does. This script pays the start once for a list of
config files and prints one JSON line per file: ``{"configfile", "ok", "error"}``, where
``error`` is what the CLI would print as the reason (the exception's message).

    python tests/snakemake_probe.py REPO CONFIG.yaml [CONFIG.yaml ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(repo: Path, configfile: Path) -> dict[str, object]:
    """Read ``repo``'s Snakefile with ``configfile`` (as ``--configfile`` does); no DAG is built."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    try:
        with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
            wf = api.workflow(ResourceSettings(), ConfigSettings(configfiles=[configfile]),
                              snakefile=repo / "Snakefile", workdir=repo)
            wf._workflow  # noqa: B018 - reading the workflow is what raises a config refusal
    except Exception as exc:  # noqa: BLE001 - every refusal is reported, whatever its type
        return {"configfile": str(configfile), "ok": False, "error": f"{exc}"}
    return {"configfile": str(configfile), "ok": True, "error": ""}


def main(argv: list[str]) -> int:
    repo = Path(argv[0]).resolve()
    for name in argv[1:]:
        print(json.dumps(load(repo, Path(name).resolve())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
