"""Data-parallel generation: one engine per group of GPUs, each in its own process.

Why: a 4-GPU rollout job with one ``vllm.LLM`` used one GPU (vLLM places an engine on
``tensor_parallel_size`` GPUs and no more). vLLM 0.12's own offline data parallelism
(``examples/offline_inference/data_parallel.py``) is also one process per rank, each told its
GPUs before vLLM is imported; this module does that with ``CUDA_VISIBLE_DEVICES`` and a spawned
process per engine, and splits each ``generate`` call's examples into contiguous shards. An engine
seeds each request from the example's own sample id (``VLLMEngine``), so the responses do not
depend on how many engines share the work.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vade.models.rollouts import Rollouts

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example
    from vade.models.rollouts import GenerationEngine

__all__ = ["DataParallelEngine", "gpu_groups", "visible_gpus"]


def visible_gpus(environ: Mapping[str, str] | None = None,
                 smi: Callable[[], list[str]] | None = None) -> list[str]:
    """The GPU ids this job may use: ``CUDA_VISIBLE_DEVICES`` (SLURM sets it for ``--gpus``),
    else the indices ``nvidia-smi -L`` lists; [] on a machine without one. No CUDA context is
    made here: the engines' processes make their own."""
    env = os.environ if environ is None else environ
    listed = env.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    return (smi or _smi_indices)()


def _smi_indices() -> list[str]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30,
                             check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return [str(i) for i, line in enumerate(out.splitlines()) if line.startswith("GPU ")]


def gpu_groups(gpus: Sequence[str], tensor_parallel_size: int,
               key: str = "difficulty.tensor_parallel_size") -> list[list[str]]:
    """The GPUs split into groups of ``tensor_parallel_size``, one engine each. Refuses fewer
    GPUs than one group and a count the size does not divide (those GPUs would sit idle)."""
    tp = int(tensor_parallel_size)
    if tp < 1:
        raise ValueError(f"{key} must be >= 1, got {tp}")
    if len(gpus) < tp:
        raise ValueError(f"{key} = {tp} but this job sees {len(gpus)} GPU(s) "
                         f"({','.join(gpus) or 'none'}): lower {key} or ask for more GPUs "
                         "(resources.difficulty.gpu)")
    if len(gpus) % tp:
        raise ValueError(f"{key} = {tp} does not divide the job's {len(gpus)} GPUs: "
                         f"{len(gpus) % tp} would sit idle; set resources.difficulty.gpu to a "
                         f"multiple of {tp}")
    return [list(gpus[i:i + tp]) for i in range(0, len(gpus), tp)]


def _worker(factory: Callable[[], Any], gpus: list[str], conn: Any) -> None:
    """One engine's process: its GPUs set before anything imports CUDA, then requests."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    try:
        engine = factory()
    except BaseException as exc:  # noqa: BLE001  (reported to the parent, which raises)
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    try:
        conn.send(("ready", None))
        _serve(engine, conn)
    finally:   # the engine's own processes end with it (VLLMEngine.close)
        if hasattr(engine, "close"):
            engine.close()


def _serve(engine: Any, conn: Any) -> None:
    """Answer ``generate`` requests until told to stop or the job is gone."""
    while True:
        try:
            msg = conn.recv()
        except EOFError:   # the job died (a kill -9 at its time limit): nobody to answer
            return
        if msg is None:
            return
        examples, n, kwargs = msg
        try:
            ro = engine.generate(examples, n, **kwargs)
            reply = ("ok", (ro.example_pos, list(ro.texts), ro.n))
        except BaseException as exc:  # noqa: BLE001
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):   # the job died while this call ran
            return


class DataParallelEngine:
    """``generate`` over one engine per GPU group, in spawned processes.

    ``factory`` builds one engine and must pickle (a module-level function or a
    ``functools.partial`` of one); it runs in the child with ``CUDA_VISIBLE_DEVICES`` set to
    its group. Only texts come back (``VLLMEngine`` returns no tensors).

    The processes are not daemons: vLLM 0.12 starts its engine core as a child process of the
    ``LLM`` (``vllm/v1/engine/utils.py``, ``launch_core_engines``), and a daemon process may not
    have children ("daemonic processes are not allowed to have children": every data-parallel
    vLLM job failed at start). A non-daemon child is joined at interpreter exit, so ``close``
    is also registered with ``atexit``; an engine whose parent is killed sees its pipe close
    and exits."""

    def __init__(self, factory: Callable[[], GenerationEngine],
                 groups: Sequence[Sequence[str]]) -> None:
        if not groups:
            raise ValueError("DataParallelEngine needs at least one GPU group")
        ctx = mp.get_context("spawn")  # a forked CUDA or vLLM state is not usable
        self.groups = [list(g) for g in groups]
        self._conns, self._procs = [], []
        atexit.register(self.close)
        try:
            for group in self.groups:
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker, args=(factory, group, child), daemon=False)
                proc.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(proc)
            for group, conn in zip(self.groups, self._conns):
                self._receive(conn, group, "start")
        except BaseException:
            self.close()
            raise

    def _receive(self, conn: Any, group: list[str], what: str) -> Any:
        try:
            status, payload = conn.recv()
        except EOFError:
            raise RuntimeError(f"the engine on GPU(s) {','.join(group)} exited during {what}"
                               ) from None
        if status == "error":
            raise RuntimeError(f"the engine on GPU(s) {','.join(group)} failed during {what}: "
                               f"{payload}")
        return payload

    def generate(self, examples: Sequence[Example], n: int, *, temperature: float = 1.0,
                 max_new_tokens: int = 16, seed: int = 0, progress: Any = None) -> Rollouts:
        """The examples split into contiguous shards, one per engine, run at once."""
        if not examples:
            raise ValueError("DataParallelEngine.generate: no examples")
        kwargs = {"temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed}
        k = len(self._conns)
        bounds = [i * len(examples) // k for i in range(k + 1)]
        busy = []
        for conn, group, lo, hi in zip(self._conns, self.groups, bounds[:-1], bounds[1:]):
            if hi > lo:
                conn.send((list(examples[lo:hi]), n, kwargs))
                busy.append((conn, group, lo))
        pos, texts = [], []
        for conn, group, lo in busy:
            shard_pos, shard_texts, _ = self._receive(conn, group, "generate")
            pos.append(np.asarray(shard_pos, dtype=np.int64) + lo)
            texts += shard_texts
        if progress is not None:
            progress.update(len(examples))
        return Rollouts(example_pos=np.concatenate(pos), texts=texts, n=n)

    def close(self) -> None:
        atexit.unregister(self.close)
        for conn in self._conns:
            try:
                conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for proc in self._procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
        self._conns, self._procs = [], []

    def __enter__(self) -> DataParallelEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
