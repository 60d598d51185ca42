"""The training configuration, validated once at the edge, shared by both backends.

Read from the config sections ``train``, ``sampler``, ``dapo``, ``tracking`` plus the top-level
``name`` and ``seed``. Every key is optional (defaults below); an unknown key or an out-of-range
value raises ValueError naming it, before any model is loaded. Size checks that need the data
(``train.batch_size`` against the number of training rows) run in :meth:`TrainConfig.check_data`,
which the command calls right after counting rows and before any other work.

One name per concept, whatever the backend: ``batch_size`` (B prompts per step),
``rollouts_per_prompt`` (G), ``steps``, ``lr``, ``max_new_tokens``, ``val_every``,
``checkpoint_every`` ... are the run; ``vade.train.verl.overrides`` maps them to verl's names
(``data.train_batch_size``, ``rollout.n``, ``trainer.total_training_steps``, ...). What only one
backend has sits in its own block: ``train.verl`` (GPUs, parallelism, micro-batches, offload,
engine: ``VerlConfig``). Loss names follow verl (``ppo_epochs``, ``clip_ratio_low/high/c``,
``loss_agg_mode``, ``kl_loss_type``). The method (``train.method``) is a row of
``vade.methods``; its sampler, DAPO and DIVA options are the typed ``sampler``, ``dapo`` and
``diva`` sections (their types and ranges: the schema, ``vade.config_schema``). Per-algorithm settings sit in the blocks ``train.grpo`` / ``train.gspo``; only
the block of the chosen algorithm is used (both are validated). Defaults of the blocks: GRPO = verl's
defaults with the paper's ``kl_loss_coef`` 0.01 (Table 4); GSPO = verl's GSPO example clip
ratios (3e-4 / 4e-4, ``seq-mean-token-mean``) with the same KL coefficient (the paper used
identical settings for all runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from vade import methods
from vade.checks import check_choice, check_name
from vade.config_io import check_sections, section
from vade.config_schema import build, check, default, subschema
from vade.tracking import TrackingConfig
from vade.train.verl.config import VerlConfig

__all__ = [
    "AGG_MODES",
    "ALGORITHMS",
    "BACKENDS",
    "KL_TYPES",
    "LOSS_MODES",
    "NEEDS_DIFFICULTY",
    "TRAIN_METHODS",
    "AlgoConfig",
    "DapoConfig",
    "DivaConfig",
    "SamplerConfig",
    "TrainConfig",
    "algo_config",
]

ALGORITHMS = ("grpo", "gspo")
# vade.train.algos implements these (kept here so reading a config never imports torch)
AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
LOSS_MODES = ("vanilla", "gspo")  # verl's actor.policy_loss.loss_mode: grpo uses vanilla
KL_TYPES = ("low_var_kl", "k3", "kl", "k1", "mse", "k2", "abs")
# backend -> the module whose run(args, cfg, config) trains one run (imported only when chosen)
BACKENDS = {"local": "vade.train.local.command", "verl": "vade.train.verl.launch"}
TRAIN_METHODS = methods.NAMES
# need initial difficulty: VADE's prior, DIVA's initial levels
NEEDS_DIFFICULTY = methods.names_where(needs_difficulty=True)


@dataclass(frozen=True)
class AlgoConfig:
    """``train.grpo`` / ``train.gspo``: the loss of one algorithm (verl actor keys)."""

    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.2
    clip_ratio_c: float = 3.0          # dual clip (vanilla/GRPO loss only), > 1
    loss_agg_mode: str = "token-mean"
    kl_loss_coef: float = 0.01         # 0 disables the KL loss (verl use_kl_loss=False)
    kl_loss_type: str = "low_var_kl"
    norm_adv_by_std_in_grpo: bool = True
    epsilon: float = 1e-6


GSPO_DEFAULTS = AlgoConfig(clip_ratio_low=3e-4, clip_ratio_high=4e-4,
                           loss_agg_mode="seq-mean-token-mean")


def algo_config(train: Mapping[str, Any], algorithm: str) -> AlgoConfig:
    """``train.<algorithm>`` over that algorithm's defaults: the loss both backends optimise
    (the local trainer reads it directly, ``vade.train.verl.overrides`` maps it to verl keys)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    block = train.get(algorithm) or {}
    check(block, f"train.{algorithm}")   # types and ranges: the schema's algorithm_block
    if algorithm == "gspo":
        block = {**asdict(GSPO_DEFAULTS), **block}
    return build(AlgoConfig, block)


@dataclass(frozen=True)
class SamplerConfig:
    """``sampler``: VADE's decay rates (eqs. 5-6) and how often full alpha/beta go to DuckDB.

    The one reader of these keys: the local trainer gets it from ``TrainConfig``, the verl plugin
    reads its ``data.sampler.vade`` block back into this class (``vade.train.verl.settings``)."""

    lambda1: float = default("sampler.lambda1")
    lambda2: float = default("sampler.lambda2")
    snapshot_every: int = default("sampler.snapshot_every")   # steps; 0 = only the initial state

    def __post_init__(self) -> None:
        # the ranges: the schema's ``sampler`` (checked where the section is read)
        if self.lambda1 > self.lambda2:
            raise ValueError(f"lambda1 = {self.lambda1} > lambda2 = {self.lambda2}: two-scale "
                             "decay needs lambda1 <= lambda2")


@dataclass(frozen=True)
class DapoConfig:
    """``dapo``: the run's rollout cap (x a non-filtering run's rollouts; the paper's 3: "three
    times the total") and verl-recipe's per-step generation-batch limit. Both backends read it."""

    max_rollout_factor: float = float(default("dapo.max_rollout_factor"))
    # 0: no limit (the rollout cap still applies)
    max_num_gen_batches: int = default("dapo.max_num_gen_batches")


@dataclass(frozen=True)
class DivaConfig:
    """``diva``: DIVA-GRPO's advantage (``vade.diva.advantage``); the reference run's values."""

    # difficulty weighting exp(k * dd * sign(A)) on the global term
    k: float = default("diva.k")
    # a group whose rewards all lie below low_reward has its advantages multiplied by the scale
    low_reward: float = default("diva.low_reward")
    low_reward_scale: float = default("diva.low_reward_scale")


@dataclass(frozen=True)
class TrainConfig:
    """Section ``train`` (plus the top-level ``name``/``seed`` and the nested configs)."""

    name: str = "tiny"
    seed: int = 0
    backend: str = "local"
    algorithm: str = "grpo"
    method: str = "vade"
    batch_size: int = 16               # B prompts per step (paper: 512)
    rollouts_per_prompt: int = 8       # G (paper: 8)
    steps: int = 100
    lr: float = 1e-6                   # paper: 1e-6
    weight_decay: float = 0.01         # AdamW, verl's default
    grad_clip: float = 1.0             # max grad norm; a non-finite norm skips the update
    ppo_epochs: int = 1
    ppo_mini_batch_size: int | None = None  # prompts per update (None: = batch_size)
    temperature: float = 1.0
    max_new_tokens: int = 64           # verl data.max_response_length (paper: 2048)
    generation_batch_size: int = 128   # local engine: responses per generate() call (memory)
    val_every: int = 10                # steps; 0: only before training and at the end
    val_before_train: bool = True
    val_temperature: float = 0.0       # 0: greedy
    val_n: int = 1                     # samples per validation prompt (average@n)
    val_max_samples: int = 0           # 0: every row of val.parquet
    checkpoint_every: int = 10         # steps; 0: local: none (no resume), verl: at the end
    keep_checkpoints: int = 2
    threads: int = 1                   # local engine: torch CPU threads (1: fastest on 2 cores)
    verl: VerlConfig = field(default_factory=VerlConfig)  # train.verl: verl's hardware knobs
    grpo: AlgoConfig = field(default_factory=AlgoConfig)
    gspo: AlgoConfig = GSPO_DEFAULTS
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    dapo: DapoConfig = field(default_factory=DapoConfig)
    diva: DivaConfig = field(default_factory=DivaConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    def __post_init__(self) -> None:
        # Types and ranges: the schema, checked in from_config. Here: the run's identity (the
        # grid's and the command line's, not a config key) and the rules between keys.
        check_name("name", self.name)
        check_choice("train.algorithm", self.algorithm, ALGORITHMS)
        check_choice("train.method", self.method, TRAIN_METHODS)
        if self.val_temperature == 0 and self.val_n > 1:
            raise ValueError(f"train.val_n = {self.val_n} with train.val_temperature = 0: greedy "
                             "decoding gives the same answer every time (use val_n: 1)")
        mini = self.ppo_mini_batch_size
        if mini and (mini > self.batch_size or self.batch_size % mini):
            raise ValueError(f"train.ppo_mini_batch_size = {mini} must divide train.batch_size "
                             f"= {self.batch_size}")
        if self.backend == "verl":
            self.verl.check_run(self.mini_batch_size, self.rollouts_per_prompt)

    # ------------------------------------------------------------------ views
    @property
    def algo(self) -> AlgoConfig:
        """The loss settings of the chosen algorithm."""
        return self.grpo if self.algorithm == "grpo" else self.gspo

    @property
    def loss_mode(self) -> str:
        return "vanilla" if self.algorithm == "grpo" else "gspo"

    @property
    def mini_batch_size(self) -> int:
        return self.ppo_mini_batch_size or self.batch_size

    @property
    def spec(self) -> methods.Method:
        """The method's row of ``vade.methods``."""
        return methods.get(self.method)

    @property
    def needs_difficulty(self) -> bool:
        return self.spec.needs_difficulty

    @property
    def sampler_method(self) -> str:
        """The sampler-only method that chooses the prompts (``vade.methods``)."""
        return self.spec.sampler_name

    @property
    def is_diva(self) -> bool:
        return self.spec.shaping == "diva"

    @property
    def rollout_budget(self) -> int:
        """DAPO's cap on the whole run: ``max_rollout_factor`` x the rollouts of a non-filtering
        run (steps x B x G). The paper's wording ("three times the total"), and what the verl
        entry enforces; a run that cannot afford another plain batch stops early."""
        return int(self.dapo.max_rollout_factor * self.steps * self.batch_size
                   * self.rollouts_per_prompt)

    def to_dict(self) -> dict[str, Any]:
        """The run's config as plain data (DuckDB ``runs.config``, MLflow params): the backend
        block only where that backend runs."""
        out = asdict(self)
        if self.backend != "verl":
            out.pop("verl")
        return out

    def check_data(self, n_train: int) -> None:
        """Refuse sizes the data cannot serve (called once the training rows are counted)."""
        if self.batch_size > n_train:
            raise ValueError(f"train.batch_size = {self.batch_size} exceeds the {n_train} "
                             "training rows (a batch holds distinct prompts)")

    # ------------------------------------------------------------------ parsing
    @classmethod
    def from_config(cls, config: Mapping[str, Any], **overrides: Any) -> TrainConfig:
        """Build from a whole config mapping; ``overrides`` (CLI flags) replace train keys. An
        unknown top-level section is refused here too (``config_io.check_sections``), so the
        Python entry points are as strict as the CLI's."""
        check_sections(dict(config), "config")
        train = section(config, "train", required=False)
        flags = {k: v for k, v in overrides.items() if v is not None}
        run = {k: train.pop(k) for k in ("algorithm", "method") if k in train}  # the grid's
        named = subschema("train")["properties"]   # a flag that sets a train key is checked too
        check({**train, **{k: v for k, v in flags.items() if k in named}}, "train",
              defaults=True)
        check(flags.get("seed", config.get("seed", 0)), "seed")
        values: dict[str, Any] = {**run, **{k: v for k, v in train.items()
                                            if k not in ("grpo", "gspo")}}
        values["verl"] = VerlConfig.from_dict(train.get("verl"))
        values["grpo"] = algo_config(train, "grpo")
        values["gspo"] = algo_config(train, "gspo")
        for key, kind in (("sampler", SamplerConfig), ("dapo", DapoConfig), ("diva", DivaConfig)):
            part = section(config, key, required=False)
            check(part, key)   # types and ranges: workflow/schemas/config.schema.yaml
            try:
                values[key] = build(kind, part)
            except ValueError as exc:   # a rule between two keys (lambda1 <= lambda2)
                raise ValueError(f"{key}.{exc}") from None
        values["tracking"] = TrackingConfig.from_dict(section(config, "tracking", required=False))
        for key in ("name", "seed"):
            if key in config:
                values[key] = config[key]
        values.update(flags)
        return build(cls, values)

    def with_overrides(self, **values: Any) -> TrainConfig:
        return replace(self, **{k: v for k, v in values.items() if v is not None})
