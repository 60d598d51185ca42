"""The ``data`` config section as typed, validated objects (one place that knows its keys).

``kind: synthetic`` renders the CPU demo's tasks locally; ``kind: paper`` builds the paper's
training set (Table 3) from Hugging Face sources. Values are checked once, here, so a typo or an
out-of-range value fails before any image is rendered or read, and the message names the key.
The per-task counts of the paper set live in the config (``data.paper.tasks``), never in code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vade.checks import check_bool, check_float, check_int, reject_unknown
from vade.config_io import section
from vade.data.benchmarks import BENCHMARK_SPLITS
from vade.data.sources import TASKS
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


def _opt_str(where: str, value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"config key '{where}' must be a non-empty string or null, got {value!r}")
    return value


def _choices(where: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"config key '{where}' must be a non-empty list from {list(allowed)}, "
                         f"got {value!r}")
    for v in value:
        if v not in allowed:
            raise ValueError(f"config key '{where}' has {v!r}; allowed: {list(allowed)}")
    if len(set(value)) != len(value):
        raise ValueError(f"config key '{where}' lists a value twice: {list(value)}")
    return tuple(value)


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

    def __post_init__(self) -> None:
        w = "data.synthetic"
        _choices(f"{w}.domains", list(self.domains), SYNTHETIC_DOMAINS)
        check_int(f"{w}.train", self.train, 1, 10_000_000)
        check_int(f"{w}.val", self.val, 0, 10_000_000)
        check_int(f"{w}.warmstart", self.warmstart, 0, 10_000_000)
        check_int(f"{w}.eval", self.eval, 0, 10_000_000)
        check_int(f"{w}.image_size", self.image_size, 28, 1024)
        check_float(f"{w}.difficulty_alpha", self.difficulty_alpha, 0.0, 100.0, open_lo=True)
        check_float(f"{w}.difficulty_beta", self.difficulty_beta, 0.0, 100.0, open_lo=True)
        check_float(f"{w}.noise", self.noise, 0.0, 1.0)
        check_int(f"{w}.max_count", self.max_count, 2, 9)
        _choices(f"{w}.chart_styles", list(self.chart_styles), CHART_STYLES)


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

    def __post_init__(self) -> None:
        w = "data.paper"
        if not isinstance(self.tasks, Mapping) or not self.tasks:
            raise ValueError(f"config key '{w}.tasks' is required: a mapping task -> row count "
                             f"(tasks: {sorted(TASKS)})")
        for name, count in self.tasks.items():
            if name not in TASKS:
                raise ValueError(f"unknown key '{w}.tasks.{name}' (allowed: {sorted(TASKS)})")
            check_int(f"{w}.tasks.{name}", count, 0, 10_000_000)
        _opt_str(f"{w}.local_dir", self.local_dir)
        _opt_str(f"{w}.cache_dir", self.cache_dir)
        check_bool(f"{w}.use_hub", self.use_hub)
        check_bool(f"{w}.require_pinned", self.require_pinned)
        if isinstance(self.exclude, str) or not all(isinstance(p, str) and p for p in self.exclude):
            raise ValueError(f"config key '{w}.exclude' must be a list of file paths, "
                             f"got {self.exclude!r}")
        if self.exclude_benchmarks:
            _choices(f"{w}.exclude_benchmarks", list(self.exclude_benchmarks),
                     tuple(BENCHMARK_SPLITS))
        if self.overlap_match not in OVERLAP_MATCH:
            raise ValueError(f"config key '{w}.overlap_match' must be one of {list(OVERLAP_MATCH)}, "
                             f"got {self.overlap_match!r}")
        check_int(f"{w}.overlap_max_distance", self.overlap_max_distance, 0, 64)
        if self.shortfall not in SHORTFALL:
            raise ValueError(f"config key '{w}.shortfall' must be one of {list(SHORTFALL)}, "
                             f"got {self.shortfall!r}")
        check_float(f"{w}.min_parse_rate", self.min_parse_rate, 0.0, 1.0)


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
        if self.kind not in DATA_KINDS:
            raise ValueError(f"config key 'data.kind' must be one of {list(DATA_KINDS)}, "
                             f"got {self.kind!r}")
        check_int("seed", self.seed, 0, 2**63 - 1)
        if not isinstance(self.prompt_template, str) or self.prompt_template.count("{question}") != 1:
            raise ValueError("config key 'data.prompt_template' must be a string holding "
                             "'{question}' exactly once")
        if "<image>" in self.prompt_template or "<video>" in self.prompt_template:
            raise ValueError("config key 'data.prompt_template' must not hold '<image>'/'<video>' "
                             "(the builder places one <image> per image)")
        check_float("data.val_fraction", self.val_fraction, 0.0, 0.5)
        if self.kind == "paper" and self.paper is None:
            raise ValueError("config key 'data.paper' is required when data.kind is 'paper'")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (recorded in the manifest)."""
        out = asdict(self)
        if self.paper is not None:
            out["paper"]["tasks"] = dict(self.paper.tasks)
        return out


def _sub(values: Any, cls: type, where: str, convert: dict[str, Any] | None = None) -> Any:
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise ValueError(  # noqa: TRY004  (config errors are ValueError: the CLI prints them)
            f"config key '{where}' must be a mapping, got {type(values).__name__}")
    allowed = set(cls.__dataclass_fields__)
    reject_unknown(values, allowed, where)
    kwargs = dict(values)
    for key, fn in (convert or {}).items():
        if key in kwargs and isinstance(kwargs[key], list):
            kwargs[key] = fn(kwargs[key])
    return cls(**kwargs)


def data_config_from_mapping(config: Mapping[str, Any]) -> DataConfig:
    """The whole config (``seed`` + ``data`` section) -> validated ``DataConfig``."""
    data = section(config, "data")
    allowed = {"kind", "prompt_template", "val_fraction", "synthetic", "paper"}
    reject_unknown(data, allowed, "data")
    kwargs: dict[str, Any] = {k: data[k] for k in ("kind", "prompt_template", "val_fraction")
                              if k in data}
    kwargs["seed"] = config.get("seed", 0)
    kwargs["synthetic"] = _sub(data.get("synthetic"), SyntheticConfig, "data.synthetic",
                               {"domains": tuple, "chart_styles": tuple})
    if data.get("paper") is not None or data.get("kind") == "paper":
        paper = dict(data.get("paper") or {}) if isinstance(data.get("paper"), Mapping) else \
            data.get("paper")
        if isinstance(paper, dict):
            if "revisions" in paper:
                raise ValueError("unknown key 'data.paper.revisions': pin hub revisions in "
                                 "cluster.revisions (asset id -> commit)")
            paper["revisions"] = pinned_revisions(config)
        kwargs["paper"] = _sub(paper, PaperConfig, "data.paper",
                               {"exclude": tuple, "exclude_benchmarks": tuple})
    return DataConfig(**kwargs)
