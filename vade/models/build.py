"""``build_base_model``: the starting policy folder every later stage opens (``models/base``).

tiny: train the tokenizer on the warm-start split's text, build the model from the seed, warm
start it, measure it on a held-out slice of the split, ``save_pretrained`` everything.
pretrained: nothing is built; the folder holds only ``vade_model.json`` pointing at the HF id
or local checkpoint, and ``resolve_model_path`` follows it.

The folder (with ``done.json``, the workflow's output, and ``vade_model.json``: size, timing,
held-out accuracy) is written under a temporary name and renamed, so a killed build never leaves
a half-written model that Snakemake would take as done.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vade.data.records import read_examples
from vade.data.splits import rng_for
from vade.data.variants import variant_example
from vade.models.cache import build_key, cached
from vade.models.config import ModelConfig
from vade.models.hf_engine import HFEngine
from vade.models.tiny import build_tiny, corpus_from_examples
from vade.models.warmstart import gold_response_prob, split_heldout, warm_start
from vade.rewards import score_batch

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example

__all__ = ["DONE_FILE", "META_FILE", "build_base_model", "heldout_metrics", "resolve_model_path",
           "with_variants"]

META_FILE = "vade_model.json"
DONE_FILE = "done.json"  # the Snakemake output of rule build_model (same content as META_FILE)
_HF_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def resolve_model_path(path: str | Path) -> str:
    """A folder from ``build-model``: itself (tiny) or the checkpoint it points to (pretrained)."""
    meta = Path(path) / META_FILE
    if meta.is_file():
        info = json.loads(meta.read_text())
        if info.get("kind") == "pretrained":
            return str(info["name_or_path"])
    return str(path)


def _write_meta(folder: Path, meta: dict[str, Any]) -> None:
    text = json.dumps(meta, indent=2)
    (folder / META_FILE).write_text(text)
    (folder / DONE_FILE).write_text(text)


def _write_folder(out: Path, fill: Any) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        fill(tmp)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def heldout_metrics(model: Any, processor: Any, examples: list, *, seed: int, n: int = 8,
                    max_new_tokens: int = 16) -> dict[str, Any]:
    """Expected accuracy at temperature 1 (mean over n samples; overall and per task), pass@n
    histogram, format rate."""
    if not examples:
        return {}
    ro = HFEngine(model, processor, batch_size=256).generate(
        examples, n, temperature=1.0, max_new_tokens=max_new_tokens, seed=seed)
    pos = ro.example_pos
    acc = score_batch(ro.texts, [examples[p].ground_truth for p in pos],
                      [examples[p].answer_type for p in pos],
                      [examples[p].extra_info for p in pos], key="acc")
    r = ro.correct_counts(acc)
    tasks = np.asarray([examples[p].data_source for p in pos])
    return {
        "heldout_items": len(examples),
        "heldout_expected_accuracy": float(acc.mean()),
        # Per task: the warm start can learn one task's images and not another's (warmstart.py).
        "heldout_expected_accuracy_by_task": {
            str(t): float(acc[tasks == t].mean()) for t in sorted(set(tasks.tolist()))},
        "heldout_boxed_rate": float(np.mean(["\\boxed{" in t for t in ro.texts])),
        "heldout_gold_prob": float(gold_response_prob(model, processor, examples).mean()),
        f"heldout_pass_at_{n}_histogram": np.bincount(r, minlength=n + 1).tolist(),
    }


def with_variants(examples: list, train_pos: np.ndarray, fraction: float, seed: int) -> list:
    """``examples`` with ``fraction`` of the training positions replaced by a DIVA variant of the
    row (offset uniform over -8..8); held-out rows stay originals, so the held-out accuracy keeps
    meaning what it meant."""
    chosen = rng_for(seed, "warmstart-variants").permutation(np.asarray(train_pos))
    out = list(examples)
    for pos in chosen[:round(fraction * len(chosen))]:
        ex = examples[int(pos)]
        rng = rng_for(seed, "warmstart-variant", ex.uid)
        try:
            out[int(pos)] = variant_example(ex, int(rng.integers(-8, 9)), 5, rng)
        except ValueError as exc:
            raise ValueError(f"model.warm_start.variant_fraction: {exc}") from None
    return out


def build_base_model(cfg: ModelConfig, seed: int, out: str | Path,
                     warmstart: str | Path | None = None, *, progress: bool = True,
                     cache: str | Path | None = None) -> dict[str, Any]:
    """Build (tiny) or point to (pretrained) the base policy in ``out``; returns its metadata.
    ``cache``: a folder of earlier tiny builds by key (``vade.models.cache``), reused on a hit."""
    out = Path(out)
    meta: dict[str, Any] = {"kind": cfg.kind, "seed": int(seed), "config": cfg.to_dict()}
    if cfg.kind == "pretrained":
        name = str(cfg.name_or_path)
        local = Path(name).expanduser()
        if local.exists():
            if not (local / "config.json").is_file():
                raise FileNotFoundError(f"model.name_or_path {name}: folder has no config.json")
            name = str(local.resolve())
        elif not _HF_ID.match(name):
            raise ValueError(f"config key 'model.name_or_path' is neither an existing folder nor "
                             f"a Hugging Face id like 'Qwen/Qwen2.5-VL-3B-Instruct': {name!r}")
        meta["name_or_path"] = name
        _write_folder(out, lambda d: _write_meta(d, meta))
        return meta

    if warmstart is None:
        raise ValueError("model.kind 'tiny' needs --warmstart data/<name>/warmstart.parquet")

    examples = read_examples(warmstart)
    if len(examples) < 2:
        raise ValueError(f"{warmstart}: the warm-start split needs at least 2 rows, has "
                         f"{len(examples)}")
    if cache is None:
        return _build_tiny(cfg, seed, out, examples, meta, progress)

    return cached(cache, build_key(cfg.to_dict(), int(seed), examples), out,
                  (META_FILE, DONE_FILE), lambda: _build_tiny(cfg, seed, out, examples, meta,
                                                              progress))


def _build_tiny(cfg: ModelConfig, seed: int, out: Path, examples: list[Example],
                meta: dict[str, Any], progress: bool) -> dict[str, Any]:
    import torch  # lazy: torch (cpu/verl envs), seconds to load

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    train_pos, eval_pos = split_heldout(len(examples), cfg.warm_start.eval_fraction, seed)
    if cfg.warm_start.variant_fraction > 0:
        examples = with_variants(examples, train_pos, cfg.warm_start.variant_fraction, seed)
    model, processor = build_tiny(corpus_from_examples(examples), cfg.tiny, seed)
    meta["parameters"] = int(sum(p.numel() for p in model.parameters()))
    meta["vocab_size"] = len(processor.tokenizer)
    meta["warm_start"] = warm_start(model, processor, [examples[i] for i in train_pos],
                                    cfg.warm_start, seed=seed, progress=progress)
    meta.update(heldout_metrics(model, processor, [examples[i] for i in eval_pos], seed=seed))

    def fill(d: Path) -> None:
        model.save_pretrained(str(d))
        processor.save_pretrained(str(d))
        _write_meta(d, meta)

    _write_folder(out, fill)
    return meta
