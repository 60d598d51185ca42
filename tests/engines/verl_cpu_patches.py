"""Where torch and verl 0.7.1 hard-code CUDA: the patches that let verl's own workers run on CPU.

Installed in every Python process of the run by ``sitecustomize.py`` beside this file (this
folder is on the run's ``PYTHONPATH``, which the project's launcher hands to Ray's runtime_env):
each patch is applied when the module it patches is first imported (``_PatchOnImport``), so the
Ray actors (task runner, FSDP worker, vLLM server, reward workers) and the processes vLLM spawns
itself (its engine core and worker, which Ray never sees) are patched before verl or vLLM use
the patched names, and a process that never imports torch pays nothing. Nothing the project
ships is patched. Each patch names the upstream file and line and why (``PATCHES``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

# (upstream file:line, why): the test modules' docstrings count these
PATCHES = (
    ("verl/workers/fsdp_workers.py:158-159",
     ("the worker builds the process group 'cpu:gloo,cpu:nccl' on CPU (get_device_name() is "
      "'cpu') and torch refuses a backend list with one device type twice: keep 'cpu:gloo'")),
    ("verl/utils/memory_utils.py:46-61, verl/workers/fsdp_workers.py:995,1021-1022",
     ("torch.cpu has no memory_reserved/memory_allocated/max_memory_*/empty_cache/ipc_collect: "
      "verl calls them on get_torch_device() after init, each update and save (and "
      "bucketed_weight_transfer.py:196,300); on CPU the counters report 0, the rest do nothing")),
    ("verl/workers/rollout/vllm_rollout/vllm_rollout.py:97-98, utils.py:232-236",
     ("the weight sync's ZeroMQ socket is named after the device's uuid, and vLLM's CpuPlatform "
      "has none (vllm/platforms/interface.py:309-311 raises): one uuid per run, from the "
      "environment, for the FSDP worker (sender) and vLLM's worker (receiver)")),
    ("verl/workers/rollout/vllm_rollout/vllm_async_server.py:818-823, verl/utils/device.py:55",
     ("the vLLM server asks each FSDP worker for the accelerator id Ray bound it to, under "
      "get_resource_name(), which is 'NPU' without CUDA; Ray binds none to a CPU worker: the "
      "'NPU' list answers ['0'] (the one CPU 'device') when empty")),
    ("verl/workers/rollout/vllm_rollout/utils.py:161-185",
     ("the weight receiver in vLLM's worker asserts the worker's device is set; vLLM's "
      "CpuWorker.init_device (vllm/v1/worker/cpu_worker.py:66) leaves it None (only the GPU and "
      "NPU workers set it): set it to cpu after init_device")),
    ("verl/workers/fsdp_workers.py:625",
     ("the reference worker's FSDP2 CPUOffloadPolicy(pin_memory=True): pinning needs a CUDA "
      "driver; without one the policy must not pin")),
)


def _gloo_only() -> None:
    import torch.distributed as dist

    if getattr(dist.init_process_group, "_vade_cpu", False):
        return
    original = dist.init_process_group

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        backend = kwargs.get("backend")
        if isinstance(backend, str) and backend.startswith("cpu:gloo,"):
            kwargs["backend"] = "cpu:gloo"
        return original(*args, **kwargs)

    init_process_group._vade_cpu = True  # type: ignore[attr-defined]
    dist.init_process_group = init_process_group


def _cpu_memory_stats() -> None:
    import torch

    for name in ("memory_reserved", "memory_allocated", "max_memory_allocated",
                 "max_memory_reserved"):
        if not hasattr(torch.cpu, name):
            setattr(torch.cpu, name, lambda *a, **k: 0)
    for name in ("reset_peak_memory_stats", "empty_cache", "ipc_collect"):
        if not hasattr(torch.cpu, name):
            setattr(torch.cpu, name, lambda *a, **k: None)


def _unpinned_offload() -> None:
    import torch

    if torch.cuda.is_available():
        return
    from torch.distributed import fsdp

    if getattr(fsdp.CPUOffloadPolicy, "_vade_cpu", False):
        return
    base = fsdp.CPUOffloadPolicy

    class CPUOffloadPolicy(base):  # type: ignore[misc, valid-type]
        _vade_cpu = True

        def __init__(self, pin_memory: bool = True) -> None:
            super().__init__(pin_memory=False)

    fsdp.CPUOffloadPolicy = CPUOffloadPolicy   # before verl imports it (fsdp_utils.py:39)


UUID_ENV = "VADE_CPU_DEVICE_UUID"


def _cpu_device_uuid() -> None:
    from vllm.platforms.cpu import CpuPlatform

    CpuPlatform.get_device_uuid = classmethod(  # type: ignore[method-assign]
        lambda cls, device_id=0: os.environ.get(UUID_ENV) or f"cpu-{os.getuid()}")


def _torch() -> None:
    _cpu_memory_stats()


def _torch_distributed() -> None:
    _gloo_only()


def _torch_fsdp() -> None:
    _unpinned_offload()


def _cpu_accelerator_id() -> None:
    from ray.runtime_context import RuntimeContext

    original = RuntimeContext.get_accelerator_ids
    if getattr(original, "_vade_cpu", False):
        return

    def get_accelerator_ids(self: Any) -> dict:
        ids = original(self)
        if not ids.get("NPU"):
            ids["NPU"] = ["0"]
        return ids

    get_accelerator_ids._vade_cpu = True  # type: ignore[attr-defined]
    RuntimeContext.get_accelerator_ids = get_accelerator_ids  # type: ignore[method-assign]


def _cpu_worker_device() -> None:
    import torch
    from vllm.v1.worker.cpu_worker import CPUWorker

    original = CPUWorker.init_device
    if getattr(original, "_vade_cpu", False):
        return

    def init_device(self: Any) -> None:
        original(self)
        if getattr(self, "device", None) is None:
            self.device = torch.device("cpu")

    init_device._vade_cpu = True  # type: ignore[attr-defined]
    CPUWorker.init_device = init_device  # type: ignore[method-assign]


# module -> the patch that runs right after that module's first import
_ON_IMPORT = {"torch": _torch, "torch.distributed": _torch_distributed,
              "torch.distributed.fsdp": _torch_fsdp, "vllm.platforms.cpu": _cpu_device_uuid,
              "ray.runtime_context": _cpu_accelerator_id,
              "vllm.v1.worker.cpu_worker": _cpu_worker_device}


class _PatchOnImport:
    """A meta-path finder that lets the real finders load a module of ``_ON_IMPORT``, then
    runs its patch."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _ON_IMPORT:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchingLoader(spec.loader, _ON_IMPORT[name])
        return spec


class _PatchingLoader:
    """The real loader, then the patch; anything else is the real loader's."""

    def __init__(self, inner: Any, patch: Any) -> None:
        self._inner, self._patch = inner, patch

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        self._patch()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def install() -> None:
    """From ``sitecustomize``: every patch of ``PATCHES``, each on its module's first import."""
    if os.environ.get("VADE_CPU_PATCHES_OFF") or any(
            isinstance(f, _PatchOnImport) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _PatchOnImport())


# What CPU needs on top of the project's overrides (vade.train.verl.overrides.build_overrides),
# each a plain verl or Ray setting, not a patch
CPU_OVERRIDES = (
    "trainer.device=cpu",
    # FSDP1's sync_module_states refuses CPU parameters (fsdp_workers.py:602-611)
    "actor_rollout_ref.actor.strategy=fsdp2",
    "actor_rollout_ref.ref.strategy=fsdp2",
    # vLLM's sleep mode is CUDA's memory pool (CuMemAllocator); eager: no CUDA graphs
    "+actor_rollout_ref.rollout.enable_sleep_mode=false",
    "actor_rollout_ref.rollout.free_cache_engine=false",
    "actor_rollout_ref.rollout.enforce_eager=true",
    "actor_rollout_ref.rollout.max_model_len=256",
    "actor_rollout_ref.rollout.max_num_batched_tokens=1024",
    "actor_rollout_ref.rollout.max_num_seqs=16",
    "data.filter_overlong_prompts_workers=1",
    # Ray: a GPU declared for verl's resource-pool count and one unit of the custom resource
    # named by trainer.device for its placement-group bundles; nothing is bound to them
    "+ray_kwargs.ray_init.num_gpus=1",
    "+ray_kwargs.ray_init.resources={cpu:1}",
    "+ray_kwargs.ray_init.include_dashboard=False",
    # one process per role: verl's default reward/agent worker counts are for a GPU node
    "actor_rollout_ref.rollout.agent.num_workers=1",
    "reward.num_workers=1",
    # vLLM's CPU KV cache (GiB; unset: 4 and a warning) and no OpenMP thread pinning (the
    # machine's cores are shared)
    "+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_CPU_KVCACHE_SPACE='1'",
    "+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_CPU_OMP_THREADS_BIND=nobind",
)


def launch_main(argv: list[str]) -> int:
    """``python verl_cpu_patches.py SPEC.json``: the project's ``launch`` (a driver, killed by
    the tests) with ``CPU_OVERRIDES`` after the project's own overrides and ``extra``."""
    import json
    import time
    from pathlib import Path

    from vade.train.config import TrainConfig
    from vade.train.verl import launch as launcher

    spec = json.loads(Path(argv[0]).read_text())
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH")) if p)
    sys.path.insert(0, here)
    project = launcher.build_overrides

    def build_overrides(*args: Any, **kwargs: Any) -> list[str]:
        return [*project(*args, **kwargs), *CPU_OVERRIDES, *spec.get("extra", []),
                f"+ray_kwargs.ray_init.runtime_env.env_vars.{UUID_ENV}={os.environ[UUID_ENV]}"]

    launcher.build_overrides = build_overrides
    os.environ[UUID_ENV] = f"cpu-{os.getpid()}-{time.time_ns()}"   # this run's weight-sync socket
    cfg = TrainConfig.from_config(spec["config"], algorithm=spec["algorithm"],
                                  method=spec["method"], seed=spec.get("seed", 0))
    launcher.launch(cfg, model="tiny", model_path=spec["model_path"], data_dir=spec["data_dir"],
                    difficulty=spec.get("difficulty"), out_dir=spec["out_dir"])
    return 0


if __name__ == "__main__":
    sys.exit(launch_main(sys.argv[1:]))
