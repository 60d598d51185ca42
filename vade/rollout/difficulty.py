"""Initial per-sample difficulty (Algorithm 1, lines 1-4): G rollouts per training sample.

Before RL starts, the base policy answers every training prompt G times; r_i, the number of
verified-correct answers, seeds sample i's Beta posterior (alpha = r_i, beta = G - r_i). The
pass@G histogram of r shows how many items sit in the informative middle (0 < r < G), the
regime where group-normalised advantages are non-zero.

Outputs (``--out results/<name>/difficulty``), each written under a temporary name and renamed:
``initial.parquet`` (sample_id int64, correct int64, rollouts int64) and ``difficulty.duckdb``
(table ``initial_difficulty``, same columns), plus ``summary.json`` (histogram, throughput).
Generation is chunked (``batch_size`` rollouts per engine call) with a seed per chunk derived
from (seed, chunk), so the result is deterministic for (model, data, config, seed). With
``resume_dir`` each chunk's counts are written there as it finishes (``chunk-<k>.npy``, renamed
into place), under a key of everything the counts depend on: a job killed at its time limit
restarts after its last written chunk, and a changed input starts over.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from vade.config_schema import build, check
from vade.rewards import score_batch
from vade.store.file_format import connect_for_writing

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example
    from vade.rollout.engine import GenerationEngine

__all__ = [
    "DifficultyConfig",
    "difficulty_config_from_section",
    "format_histogram",
    "initial_difficulty",
    "pass_histogram",
    "write_difficulty",
]

TABLE = "initial_difficulty"


@dataclass(frozen=True)
class DifficultyConfig:
    """The ``difficulty`` section."""

    engine: str = "hf"          # hf (CPU, transformers) | vllm (GPU)
    rollouts: int = 8           # G
    temperature: float = 1.0    # sampling temperature of the rollouts (the RL rollout's)
    max_new_tokens: int = 16    # response budget (tiny default; paper scale: ~2048)
    batch_size: int = 256       # rollouts per engine call (HF); vLLM batches internally
    threads: int = 1            # torch CPU threads for the HF engine (0 = torch's default)
    tensor_parallel_size: int = 1  # vllm: GPUs per engine; the job's GPUs / this = engines


def difficulty_config_from_section(values: Mapping[str, Any] | None) -> DifficultyConfig:
    """The ``difficulty`` section; its types, ranges and choices: the schema's (the workflow's
    required ``engine`` and ``rollouts`` have defaults here)."""
    values = dict(values or {})
    check(values, "difficulty", defaults=True)
    return build(DifficultyConfig, values)


def _check_sample_ids(examples: Sequence[Example]) -> np.ndarray:
    ids = np.array([ex.index for ex in examples], dtype=np.int64)
    bad = np.flatnonzero(ids != np.arange(len(ids)))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"train row {i}: extra_info.index is {ids[i]}, expected {i} (the training "
                         "split's index must equal the row position: it is the sampler's sample id)")
    return ids


def _default_scorer(texts: list[str], examples: list[Example]) -> np.ndarray:
    return score_batch(texts, [e.ground_truth for e in examples],
                       [e.answer_type for e in examples], [e.extra_info for e in examples],
                       key="acc")


def initial_difficulty(engine: GenerationEngine, examples: Sequence[Example],
                       cfg: DifficultyConfig, *, seed: int,
                       score: Callable[[list[str], list[Example]], np.ndarray] | None = None,
                       progress: bool = True, resume_dir: str | Path | None = None,
                       resume_key: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """r (correct out of G) per training sample; returns arrays and run statistics.

    ``resume_dir``: chunks already written there under the same ``resume_key`` (plus the
    config, seed and row count) are read back instead of generated."""
    if not examples:
        raise ValueError("init-difficulty: the training split is empty")
    sample_ids = _check_sample_ids(examples)
    score = score or _default_scorer
    g = cfg.rollouts
    per_call = max(1, cfg.batch_size // g)
    correct = np.zeros(len(examples), dtype=np.int64)
    chunks = None if resume_dir is None else _Chunks(Path(resume_dir), {
        **dict(resume_key or {}), "config": asdict(cfg), "seed": int(seed),
        "rows": len(examples)})
    t0 = time.perf_counter()
    bar = tqdm(total=len(examples), desc="initial difficulty", unit="prompt",
               disable=not progress, mininterval=1.0)
    with bar:
        for k, start in enumerate(range(0, len(examples), per_call)):
            chunk = list(examples[start:start + per_call])
            kept = chunks.read(k, len(chunk)) if chunks is not None else None
            if kept is not None:
                correct[start:start + len(chunk)] = kept
                bar.update(len(chunk))
                continue
            chunk_seed = int(np.random.SeedSequence([seed, k]).generate_state(1)[0])
            ro = engine.generate(chunk, g, temperature=cfg.temperature,
                                 max_new_tokens=cfg.max_new_tokens, seed=chunk_seed)
            acc = np.asarray(score(list(ro.texts), [chunk[int(p)] for p in ro.example_pos]))
            counts = np.bincount(ro.example_pos, minlength=len(chunk))
            if np.any(counts != g):
                raise ValueError(f"engine returned {counts.tolist()} rollouts per prompt, "
                                 f"expected {g} each")
            correct[start:start + len(chunk)] = np.bincount(
                ro.example_pos, weights=acc > 0.5, minlength=len(chunk)).astype(np.int64)
            if chunks is not None:
                chunks.write(k, correct[start:start + len(chunk)])
            bar.update(len(chunk))
            done = start + len(chunk)
            bar.set_postfix(acc=f"{correct[:done].sum() / (done * g):.3f}", refresh=False)
    seconds = time.perf_counter() - t0
    return {"sample_id": sample_ids, "correct": correct,
            "chunks_resumed": chunks.resumed if chunks is not None else 0,
            "rollouts": np.full(len(examples), g, dtype=np.int64), "seconds": seconds,
            "prompts_per_second": len(examples) / seconds if seconds > 0 else float("inf")}


class _Chunks:
    """Per-chunk counts on disk, valid only under the key they were written with."""

    def __init__(self, folder: Path, key: Mapping[str, Any]) -> None:
        self.folder = folder
        text = json.dumps(key, sort_keys=True, default=str)
        key_file = folder / "key.json"
        if folder.is_dir() and (not key_file.is_file() or key_file.read_text() != text):
            print(f"{folder}: written chunks are of {_what_changed(key_file, key)}; "
                  "recomputing them")
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not key_file.is_file():
            key_file.write_text(text)
        self.resumed = 0

    def read(self, k: int, rows: int) -> np.ndarray | None:
        path = self.folder / f"chunk-{k:06d}.npy"
        if not path.is_file():
            return None
        try:
            values = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:   # truncated or garbled on disk
            values, why = None, f"unreadable ({exc})"
        else:
            why = (f"holds {values.dtype} {values.shape}, expected int64 ({rows},)"
                   if values.shape != (rows,) or values.dtype != np.int64 else "")
        if why:
            print(f"{path}: {why}; recomputing this chunk")
            path.unlink(missing_ok=True)
            return None
        self.resumed += 1
        return values

    def write(self, k: int, values: np.ndarray) -> None:
        path = self.folder / f"chunk-{k:06d}.npy"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.npy")
        np.save(tmp, np.asarray(values, dtype=np.int64))
        os.replace(tmp, path)


def _what_changed(key_file: Path, key: Mapping[str, Any]) -> str:
    """'another model', 'other data, settings' ...: which of the key's parts differ."""
    try:
        old = json.loads(key_file.read_text())
    except (OSError, ValueError):
        return "unknown inputs (no readable key.json)"
    names = {"model": "another model", "data": "other data"}
    new = json.loads(json.dumps(key, sort_keys=True, default=str))
    diff = [names.get(k, k) for k in sorted(new) if not isinstance(old, dict) or old.get(k) != new[k]]
    return ", ".join(diff) or "other inputs"


def pass_histogram(correct: np.ndarray, g: int) -> list[int]:
    """Number of items with r = 0, 1, ..., G correct rollouts."""
    return np.bincount(np.asarray(correct, dtype=np.int64), minlength=g + 1).tolist()


def format_histogram(hist: Sequence[int]) -> str:
    """A text histogram of pass@G counts (one line per r)."""
    total = max(1, sum(hist))
    width = max(len(str(h)) for h in hist)
    top = max(hist) or 1
    lines = [f"pass@{len(hist) - 1} histogram (r correct out of {len(hist) - 1}, {total} items):"]
    for r, h in enumerate(hist):
        lines.append(f"  r={r:<3d} {h:>{width}d} {100 * h / total:5.1f}%  {'#' * round(40 * h / top)}")
    mixed = sum(hist[1:-1])
    lines.append(f"  informative (0 < r < G): {mixed} ({100 * mixed / total:.1f}%), never right: "
                 f"{hist[0]}, always right: {hist[-1]}")
    return "\n".join(lines)


def write_difficulty(out: str | Path, result: Mapping[str, Any], *, cfg: DifficultyConfig,
                     extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """initial.parquet + difficulty.duckdb (table ``initial_difficulty``) + summary.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = pa.table({k: pa.array(np.asarray(result[k], dtype=np.int64), pa.int64())
                      for k in ("sample_id", "correct", "rollouts")})
    tag = f"tmp-{os.getpid()}"
    pq_tmp, db_tmp = out / f".initial.parquet.{tag}", out / f".difficulty.duckdb.{tag}"
    for p in (pq_tmp, db_tmp):
        p.unlink(missing_ok=True)
    try:
        pq.write_table(table, pq_tmp)
        con = connect_for_writing(db_tmp)
        try:
            con.register("initial_arrow", table)
            con.execute(f"CREATE TABLE {TABLE} AS SELECT sample_id, correct, rollouts "
                        "FROM initial_arrow ORDER BY sample_id")
        finally:
            con.close()
        hist = pass_histogram(result["correct"], cfg.rollouts)
        summary = {"items": len(table), "rollouts": cfg.rollouts,
                   "mean_accuracy": float(np.mean(result["correct"]) / cfg.rollouts),
                   f"pass_at_{cfg.rollouts}_histogram": hist,
                   "informative_fraction": float(sum(hist[1:-1]) / max(1, sum(hist))),
                   "seconds": float(result.get("seconds", 0.0)),
                   "prompts_per_second": float(result.get("prompts_per_second", 0.0)),
                   "config": asdict(cfg), **dict(extra or {})}
        summary_tmp = out / f".summary.json.{tag}"
        summary_tmp.write_text(json.dumps(summary, indent=2))
        os.replace(db_tmp, out / "difficulty.duckdb")
        os.replace(summary_tmp, out / "summary.json")
        os.replace(pq_tmp, out / "initial.parquet")  # last: the Snakemake output
    finally:
        for p in (pq_tmp, db_tmp, out / f".summary.json.{tag}", out / f".difficulty.duckdb.{tag}.wal"):
            p.unlink(missing_ok=True)
    return summary
