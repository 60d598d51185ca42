"""Config section ``cluster``: where hub assets are staged and what the bill assumes.

Why a section of its own: the bill's rates and the asset cache are facts about the site, not
about an experiment, so they never enter a rule's ``params`` (changing a throughput guess must
not rerun a training job). Every rate is an assumption the bill names with its source: the
config key when set here, else the default below with the reason it was chosen.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vade.config_schema import build, check
from vade.job.scratch import local_datasets_cache

__all__ = ["PLAN_DEFAULTS", "READ_VARS", "ClusterConfig", "PlanAssumptions", "job_env",
           "near_miss_env", "overridden"]

# (default, why): none of these was measured here (no GPU); each is a conservative guess a user
# replaces with the rate of their own first job (its log prints tokens/s).
PLAN_DEFAULTS: dict[str, tuple[float, str]] = {
    "rollout_tokens_per_s": (4000.0, "assumed: vLLM decode of a 3B/7B VLM on a 4-GPU job, all "
                                     "requests together; not measured here"),
    "update_tokens_per_s": (8000.0, "assumed: FSDP actor update + reference/old log-probs over "
                                    "prompt + response tokens on a 4-GPU job; not measured here"),
    "prompt_tokens": (1024.0, "assumed mean prompt length with its image tokens"),
    "job_overhead_min": (20.0, "assumed per GPU job: Ray start, model loads, checkpoint saves"),
    "bytes_per_param": (16.0, "FSDP checkpoint: fp32 weights + two Adam moments (12 B) + bf16 "
                              "HF weights (2 B) + slack"),
}


@dataclass(frozen=True)
class PlanAssumptions:
    """``cluster.plan``: the bill's rates (None: ``PLAN_DEFAULTS``)."""

    rollout_tokens_per_s: float | None = None
    update_tokens_per_s: float | None = None
    prompt_tokens: float | None = None
    job_overhead_min: float | None = None
    bytes_per_param: float | None = None

    def value(self, key: str) -> tuple[float, str]:
        """(value, source) of one assumption: the config's, else the default and its reason."""
        mine = getattr(self, key)
        if mine is not None:
            return mine, f"cluster.plan.{key} in the config"
        default, why = PLAN_DEFAULTS[key]
        return default, f"default, {why} (set cluster.plan.{key})"


@dataclass(frozen=True)
class ClusterConfig:
    """``cluster``: the asset cache every GPU job reads offline, and the bill's assumptions.

    ``cache_dir`` holds the hub cache (``hub/``) and prepared datasets (``datasets/``) that
    ``vade prefetch`` fills and that jobs read with ``HF_HOME`` pointing at it; ``local_assets``
    is a folder with one sub-folder per asset id (``<id>/``), for sites whose nodes never see the
    hub; ``revisions`` pins an asset id to a hub revision (default ``main``);
    ``revisions_lock`` is the file ``vade prefetch`` records each resolved commit in and every
    later read takes them from (``vade.job.revisions``; None: nothing is recorded).
    """

    cache_dir: str = "data/hub-cache"
    local_assets: str | None = None
    revisions: Mapping[str, str] = field(default_factory=dict)
    revisions_lock: str | None = None
    offline: bool = True              # GPU jobs run with HF_HUB_OFFLINE=1
    min_free_gb: float = 50.0         # disk that must stay free beside the run's checkpoints
    scratch_dir: str = "/tmp"         # node-local: the jobs' locks and cache files (scratch.py)
    plan: PlanAssumptions = field(default_factory=PlanAssumptions)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ClusterConfig:
        """The ``cluster`` section, its types and ranges checked against the schema
        (``vade.config_schema``)."""
        v = config.get("cluster") or {}
        check(v, "cluster")
        return build(cls, {**v, "revisions": dict(v.get("revisions") or {}),
                           "plan": build(PlanAssumptions, v.get("plan") or {})})


def job_env(config: Mapping[str, Any]) -> dict[str, str]:
    """The environment every job of a GPU config gets when ``cluster.offline``: the staged cache
    as Hugging Face's home, hub and datasets offline (no download, no token), and lmms-eval's
    datasets cache at a node-local mirror of the staged ``datasets/`` (``vade.job.scratch``:
    locks on local disk, data read from the cache). Empty for a config with no GPU stage (the
    CPU demo) or with ``offline: false``."""
    cluster = ClusterConfig.from_config(config)
    resources = config.get("resources") or {}
    if not cluster.offline or not any((r or {}).get("gpu") for r in resources.values()):
        return {}
    home = Path(cluster.cache_dir).resolve()
    return {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "LMMS_EVAL_DATASETS_CACHE": local_datasets_cache(cluster.scratch_dir, home)}


# Environment variables the pipeline (or a library it configures through them) reads.
READ_VARS = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_ID", "HF_HOME",
             "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN",
             "HF_HUB_CACHE", "HF_DATASETS_CACHE", "LMMS_EVAL_DATASETS_CACHE",
             "CUDA_VISIBLE_DEVICES", "OPENAI_API_KEY", "OPENAI_API_URL", "PYTHONPATH",
             "VADE_WORKFLOW_CONFIG", "VADE_CHECKPOINT_SIGNALS", "VADE_TIME_MARGIN",
             "VADE_FLASH_ATTN", "VADE_VERL_RECIPE_DIR", "SLURM_JOB_END_TIME")


def near_miss_env(environ: Mapping[str, str]) -> list[str]:
    """A line per set variable whose name is one letter or so from one we read, and is not
    that one (``MLFLOW_TRACKING_URL``): otherwise a typo silently falls back to a default."""
    out = []
    for name in sorted(environ):
        if name in READ_VARS or "_" not in name:
            continue
        family = [v for v in READ_VARS if v.split("_")[0] == name.split("_")[0]]
        match = difflib.get_close_matches(name, family, n=1, cutoff=0.85)
        if match:
            out.append(f"{name} is set but nothing reads it: did you mean {match[0]}?")
    return out


def overridden(environ: Mapping[str, str], new: Mapping[str, str],
               why: Mapping[str, str]) -> list[str]:
    """A line per variable of ``new`` that replaces a different value the user had set."""
    return [f"{k}={environ[k]} is replaced by {v} for the jobs ({why.get(k, 'the config')})"
            for k, v in new.items() if k in environ and environ[k] != v]
