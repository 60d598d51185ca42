"""Speed and memory of the sampler and of its DuckDB logging, at paper scale and beyond.

Targets (2-core machine): select+observe median <= 40 ms per step at 1e6 samples and <= 0.5 s at
1e7, cost linear in the number of samples, <= 64 bytes of memory per sample; logging 512 events
per step <= 10 ms median. These are measured here, never asserted in tests.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import numpy as np
from tqdm import tqdm

from vade.sampling import VadeSampler
from vade.store import RunStore

__all__ = ["SamplerTiming", "bench_logging", "bench_sampler", "machine_info"]

G = 8


@dataclass(frozen=True)
class SamplerTiming:
    n_samples: int
    batch_size: int
    steps: int
    select_observe_ms_median: float
    select_ms_median: float
    observe_ms_median: float
    ns_per_sample: float
    peak_bytes_per_sample: float


def _sampler(n: int, batch: int, seed: int, threads: int | None) -> VadeSampler:
    rng = np.random.default_rng(seed)
    r = rng.integers(0, G + 1, n).astype(np.float64)
    return VadeSampler(n, batch, alpha=r, beta=G - r, seed=seed, threads=threads)


def _outcomes(rng: np.random.Generator, batch: int) -> np.ndarray:
    return rng.integers(0, G + 1, batch)


def bench_sampler(n: int, batch: int = 512, steps: int = 7, seed: int = 0,
                  threads: int | None = None, progress: tqdm | None = None) -> SamplerTiming:
    """Median wall time of select() and observe() over ``steps`` steps after one warm-up step."""
    rng = np.random.default_rng(seed + 1)
    # memory: everything the sampler allocates, construction included, over one full step
    tracemalloc.start()
    s = _sampler(n, batch, seed, threads)
    idx = s.select()
    s.observe(idx, _outcomes(rng, batch), G)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    sel, obs = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        idx = s.select()
        t1 = time.perf_counter()
        s.observe(idx, _outcomes(rng, batch), G)
        t2 = time.perf_counter()
        sel.append(t1 - t0)
        obs.append(t2 - t1)
        if progress is not None:
            progress.update(1)
    total = np.median(np.add(sel, obs))
    return SamplerTiming(
        n_samples=n, batch_size=batch, steps=steps,
        select_observe_ms_median=float(total * 1e3),
        select_ms_median=float(np.median(sel) * 1e3),
        observe_ms_median=float(np.median(obs) * 1e3),
        ns_per_sample=float(total * 1e9 / n),
        peak_bytes_per_sample=float(peak / n),
    )


def bench_logging(n: int = 100_000, batch: int = 512, steps: int = 30,
                  snapshot_n: int = 1_000_000) -> dict[str, float]:
    """Median time to log one step (``batch`` events + step row + 4 metrics) and one snapshot."""
    rng = np.random.default_rng(0)
    s = _sampler(n, batch, 0, None)
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        with RunStore(Path(tmp) / "bench.duckdb", "bench", snapshot_every=0) as store:
            store.start_run(method="vade", sampler_config=s.config, code_version="bench")
            store.log_initial_state(s.alpha, s.beta)
            for _ in range(steps):
                idx = s.select()
                obs = s.observe(idx, _outcomes(rng, batch), G)
                metrics = {"loss": 0.1, "kl": 0.01, "grad_norm": 1.0, "reward": 0.5}
                t0 = time.perf_counter()
                store.log_step(obs, sampler_seconds=0.01, metrics=metrics)
                times.append(time.perf_counter() - t0)
            big = _sampler(snapshot_n, batch, 0, None)
            t0 = time.perf_counter()
            store.log_initial_state(big.alpha, big.beta)
            snapshot = time.perf_counter() - t0
    return {"events_per_step": batch, "log_step_ms_median": float(np.median(times) * 1e3),
            "log_step_ms_p90": float(np.percentile(times, 90) * 1e3),
            "snapshot_samples": snapshot_n, "snapshot_ms": snapshot * 1e3}


def machine_info() -> dict[str, object]:
    return {"python": platform.python_version(), "machine": platform.machine(),
            "cpu_count": os.cpu_count(), "numpy": np.__version__, "duckdb": duckdb.__version__,
            "processor": platform.processor() or platform.machine()}


def run_all(sizes: list[int], batch: int, steps: int, threads: int | None,
            log_steps: int) -> dict[str, object]:
    with tqdm(total=len(sizes) * steps, desc="sampler steps", unit="step") as bar:
        timings = [asdict(bench_sampler(n, batch, steps, threads=threads, progress=bar))
                   for n in sizes]
    logging = bench_logging(batch=batch, steps=log_steps)
    return {"machine": machine_info(), "threads": threads, "sampler": timings,
            "logging": logging}
