"""The ``data`` config section as typed, validated objects (one place that knows its keys).

``kind: synthetic`` renders the CPU demo's tasks locally; ``kind: paper`` builds the paper's
training set (Table 3) from Hugging Face sources. Values are checked once, against the schema's ``data``
(``vade.config_schema``), so a typo or an out-of-range value fails before any image is rendered
or read, and the message names the key; the classes keep the rules a schema cannot say.
The per-task counts of the paper set live in the config (``data.paper.tasks``), never in code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vade.config_io import section
from vade.config_schema import build, check
from vade.job.revisions import pinned_revisions  # cluster.revisions + its lock

__all__ = [
    "CHART_STYLES",
    "DATA_KINDS",
    "DEFAULT_PROMPT_TEMPLATE",
    "OVERLAP_MATCH",
    "SHORTFALL",
    "SYNTHETIC_DOMAINS",
    "DataConfig",
    "PaperConfig",
    "SyntheticConfig",
    "data_config_from_mapping",
]

DATA_KINDS = ("synthetic", "paper")
SYNTHETIC_DOMAINS = ("math", "chart", "science")
CHART_STYLES = ("bar", "line")
# How a training row is matched against the benchmark exclusion list.
OVERLAP_MATCH = ("image", "question", "either", "both")
# What a task does when invalid or overlapping rows leave fewer than its count: take what is left
# (recorded in the manifest and printed) or fail the build.
SHORTFALL = ("take", "fail")
# The paper's setup: brief reasoning, final answer in \boxed{} (what vade.rewards extracts first).
DEFAULT_PROMPT_TEMPLATE = ("{question}\nThink briefly, then put the final answer in \\boxed{}.")


@dataclass(frozen=True)
class SyntheticConfig:
    """``data.synthetic``: sizes, image size and the difficulty spread of the rendered tasks.

    Each item draws a difficulty ``d`` from Beta(``difficulty_alpha``, ``difficulty_beta``) on
    [0, 1]; ``d`` sets how strong the visual cue is (d=0: obvious, d=1: at the pixel limit, answer
    near chance). Beta(1, 1) gives some items nearly always solved, some nearly never, most in
    between: the spread under which gradient vanishing can happen.
    """

    domains: tuple[str, ...] = SYNTHETIC_DOMAINS
    train: int = 1500        # rows of train.parquet (the sampler's pool)
    val: int = 150           # rows of val.parquet
    warmstart: int = 2000    # rows of warmstart.parquet (supervised warm start, disjoint)
    eval: int = 100          # rows of each eval/<domain>.parquet
    image_size: int = 56
    difficulty_alpha: float = 1.0
    difficulty_beta: float = 1.0
    noise: float = 0.25      # pixel noise std (fraction of 255) at difficulty 1
    max_count: int = 5       # math: dots to count, 1..max_count
    chart_styles: tuple[str, ...] = CHART_STYLES


@dataclass(frozen=True)
class PaperConfig:
    """``data.paper``: where the sources are, how many rows per task, what to exclude.

    ``revisions`` is not a ``data.paper`` key: it is ``cluster.revisions`` (asset id -> hub
    revision), read here so the build can refuse sources that are not pinned to a commit.
    """

    tasks: Mapping[str, int] = field(default_factory=dict)   # task -> count (required)
    local_dir: str | None = None   # local copies laid out as the hub repos (see docs/data.md)
    cache_dir: str | None = None   # a Hugging Face datasets cache that holds the sources
    use_hub: bool = False          # allow downloading from the hub (clusters with network)
    exclude: tuple[str, ...] = ()  # local benchmark exclusion lists (.json / .parquet)
    exclude_benchmarks: tuple[str, ...] = ()  # evaluation splits to build exclusion keys from
    overlap_match: str = "either"
    overlap_max_distance: int = 24  # dHash bits (of 256) within which two pictures are one
    shortfall: str = "take"        # a task with fewer usable rows than its count: take / fail
    min_parse_rate: float = 0.9    # refuse a source whose visited rows parse below this rate
    require_pinned: bool = False   # refuse sources not pinned to a hub commit (cluster.revisions)
    revisions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DataConfig:
    """``data`` plus the top-level ``seed``."""

    kind: str = "synthetic"
    seed: int = 0
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    val_fraction: float = 0.1     # paper: stratified train/val split (synthetic: sizes instead)
    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)
    paper: PaperConfig | None = None

    def __post_init__(self) -> None:
        # types, ranges and choices: the schema's ``data`` (checked in data_config_from_mapping)
        if self.prompt_template.count("{question}") != 1:
            raise ValueError("config key 'data.prompt_template' must be a string holding "
                             "'{question}' exactly once")
        if "<image>" in self.prompt_template or "<video>" in self.prompt_template:
            raise ValueError("config key 'data.prompt_template' must not hold '<image>'/'<video>' "
                             "(the builder places one <image> per image)")
        if self.kind == "paper" and self.paper is None:
            raise ValueError("config key 'data.paper' is required when data.kind is 'paper'")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (recorded in the manifest)."""
        out = asdict(self)
        if self.paper is not None:
            out["paper"]["tasks"] = dict(self.paper.tasks)
        return out


def data_config_from_mapping(config: Mapping[str, Any]) -> DataConfig:
    """The whole config (``seed`` + ``data`` section) -> validated ``DataConfig``."""
    data = section(config, "data")
    if isinstance(data.get("paper"), Mapping) and "revisions" in data["paper"]:
        raise ValueError("unknown key 'data.paper.revisions': pin hub revisions in "
                         "cluster.revisions (asset id -> commit)")
    check(data, "data", defaults=True)   # a verb's data.kind defaults to synthetic
    check(config.get("seed", 0), "seed")
    kwargs: dict[str, Any] = {k: data[k] for k in ("kind", "prompt_template", "val_fraction")
                              if k in data}
    kwargs["seed"] = config.get("seed", 0)
    kwargs["synthetic"] = build(SyntheticConfig, data.get("synthetic") or {})
    if data.get("paper") is not None or data.get("kind") == "paper":
        paper = data.get("paper")
        if paper is not None:
            kwargs["paper"] = build(PaperConfig, {**paper, "tasks": dict(paper["tasks"]),
                                                  "revisions": pinned_revisions(config)})
    return build(DataConfig, kwargs)
