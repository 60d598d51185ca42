"""The first seconds of a GPU job: everything that would otherwise fail after the models load.

Why: the cluster path has never met a GPU. A wrong environment, a missing GPU, an asset not in
the offline cache, a full disk or a profile placeholder each cost a queue wait plus a model load
(minutes to an hour for a 72B judge) before they surface. Each check here returns what it found
and, on failure, the knob to turn; ``vade preflight`` runs them all, prints every result, and
exits non-zero before anything heavy is loaded. Probes (GPUs, disk) are arguments so the tests
can give a GPU node's answers; on a CPU machine the real probe reports no GPU.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from vade.cluster.assets import assets_of, missing_pins
from vade.cluster.disk import checkpoint_gb, params_of, runs_checkpoint_gb
from vade.cluster.preflight_cache import check_cache_writable, check_local_datasets
from vade.cluster.preflight_check import Check
from vade.cluster.preflight_memory import check_judge_kv, check_training_memory
from vade.cluster.prompt_length import check_prompt_length, data_manifest
from vade.cluster.resources import check_gpu_resources, stage_gpus
from vade.eval.config import EvaluateConfig
from vade.grid import cells as grid_cells
from vade.job.config import ClusterConfig
from vade.job.revisions import resolve_command
from vade.lockfile import pins_for_this_machine
from vade.train.verl.config import VerlConfig

__all__ = ["STAGES", "Check", "check_assets", "check_disk", "check_gpus", "check_packages",
           "check_pins", "check_profile", "probe_gpus", "run_checks", "stage_env", "stage_packages"]

STAGES = ("difficulty", "train", "evaluate")
LOCKS = Path("requirements/lock/envs")
POST_DEPLOY = Path("envs/train-verl.post-deploy.sh")   # pins flash-attn (built there)
PLACEHOLDERS = ("your-account", "your-cpu-partition", "your-gpu-partition")


def stage_env(config: Mapping[str, Any], stage: str) -> str:
    """The conda env a stage's rule runs in (the choice ``workflow/rules/common.smk`` makes)."""
    if stage == "evaluate":
        ev = config.get("evaluate") or {}
        vllm = (ev.get("policy") or {}).get("engine") == "vllm" or (
            ev.get("judge") or {}).get("mode") == "serve"
        return "eval-vllm" if vllm else "eval"
    if stage == "train":
        return "train-verl" if (config.get("train") or {}).get("backend") == "verl" else "cpu"
    return "train-verl" if (config.get("difficulty") or {}).get("engine") == "vllm" else "cpu"


def stage_packages(config: Mapping[str, Any], stage: str) -> list[tuple[str, str]]:
    """(module to import, distribution) a stage uses: what its first minutes would import."""
    env = stage_env(config, stage)
    pkgs = [("torch", "torch"), ("transformers", "transformers")]
    if env == "train-verl":
        pkgs.append(("vllm", "vllm"))
        if stage == "train":
            pkgs += [("verl", "verl"), ("ray", "ray")]
            if attention(config) == "flash_attention_2":
                pkgs.append(("flash_attn", "flash-attn"))
    if stage == "evaluate":
        pkgs.append(("lmms_eval.evaluator", "lmms-eval"))
        if env == "eval-vllm":
            pkgs.append(("vllm", "vllm"))
    return pkgs


def attention(config: Mapping[str, Any]) -> str | None:
    """The verl actor's attention kernels (``train.verl.attention``); None off verl."""
    train = config.get("train") or {}
    if train.get("backend") != "verl":
        return None
    return VerlConfig.from_dict(train.get("verl")).attention


def check_attention(config: Mapping[str, Any]) -> Check:
    """Which attention the training job will run, said before it loads a model."""
    active = attention(config)
    if active == "flash_attention_2":
        detail = ("flash_attention_2 (train.verl.attention): flash-attn must be built into the "
                  "env (VADE_FLASH_ATTN=1 when envs/train-verl.yaml is created)")
    else:
        detail = "sdpa (train.verl.attention; PyTorch's kernels, flash-attn not needed)"
    return Check("attention", True, detail)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(env: str, root: Path = Path()) -> dict[str, str]:
    """name -> version of an env's lock (``requirements/lock/envs/<env>.txt``), plus flash-attn
    from the post-deploy script that builds it."""
    lock = root / LOCKS / f"{env}.txt"
    out = ({name: pin.version for name, pin in pins_for_this_machine(lock).items()}
           if lock.is_file() else {})
    post = root / POST_DEPLOY
    if env == "train-verl" and post.is_file():
        m = re.search(r"flash-attn==([\w.]+)", post.read_text())
        if m:
            out["flash-attn"] = m.group(1)
    return out


def check_packages(config: Mapping[str, Any], stage: str, root: Path = Path(),
                   importer: Callable[[str], Any] = importlib.import_module) -> list[Check]:
    env = stage_env(config, stage)
    locked = locked_versions(env, root)
    fix = f"install the locked env envs/{env}.yaml (snakemake --sdm conda, or uv pip sync " \
          f"{LOCKS / (env + '.txt')})"
    checks = []
    for module, dist in stage_packages(config, stage):
        want = locked.get(_norm(dist))
        try:
            have = metadata.version(dist)
        except metadata.PackageNotFoundError:
            checks.append(Check(f"package {dist}", False, f"not installed (stage {stage} runs "
                                f"in env {env}, which locks {want or 'it'})", fix))
            continue
        if want and have.split("+")[0] != want.split("+")[0]:
            checks.append(Check(f"package {dist}", False, f"{have} installed, {want} locked "
                                f"for env {env}", fix))
            continue
        try:
            importer(module)
        except Exception as exc:
            checks.append(Check(f"package {dist}", False, f"import {module} failed: "
                                f"{type(exc).__name__}: {str(exc)[:200]}", fix))
            continue
        checks.append(Check(f"package {dist}", True, f"{have} imports"))
    return checks


def probe_gpus() -> list[float]:
    """Memory (GiB) of each GPU this process may use: torch's view (it honours
    CUDA_VISIBLE_DEVICES), else nvidia-smi's; [] when there is none."""
    try:
        import torch  # lazy: torch (cpu/verl envs), seconds to load

        if torch.cuda.is_available():
            return [torch.cuda.get_device_properties(i).total_memory / 2**30
                    for i in range(torch.cuda.device_count())]
    except Exception:
        pass
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return [float(x) / 1024 for x in out.split() if x.strip()]


def check_gpus(config: Mapping[str, Any], stage: str, gpus: Sequence[float],
               needed: int) -> list[Check]:
    """Enough GPUs for the stage, and each served model's weights inside its memory share."""
    key = f"resources.{stage}.gpu"
    if len(gpus) < needed:
        seen = "no GPU visible (torch.cuda and nvidia-smi)" if not gpus else \
            f"{len(gpus)} GPU(s) visible"
        return [Check("gpus", False, f"{seen}, stage {stage} needs {needed} ({key})",
                      f"run on a GPU node with {needed} GPUs (slurm/config.yaml set-resources "
                      f"partition; CUDA_VISIBLE_DEVICES) or lower {key}")]
    checks = [Check("gpus", True, f"{len(gpus)} visible, {needed} needed ({key}); "
                                  f"{min(gpus) if gpus else 0:.0f} GiB the smallest")]
    if stage == "evaluate" and gpus:
        ev = EvaluateConfig.from_dict(config.get("evaluate") or {})
        served = []
        if ev.policy.engine == "vllm":
            served.append(("evaluate.policy", 7e9, ev.policy.tensor_parallel_size,
                           ev.policy.gpu_memory_utilization))
        if ev.judge.mode == "serve":
            served.append(("evaluate.judge", params_of({"name_or_path": ev.judge.model}),
                           ev.judge.tensor_parallel_size, ev.judge.gpu_memory_utilization))
        for where, params, tp, share in served:
            weights = params * 2 / tp / 2**30   # bf16 weights per GPU
            room = share * min(gpus)
            ok = weights < room
            checks.append(Check(f"{where} memory", ok,
                                f"{weights:.1f} GiB of bf16 weights per GPU (TP {tp}) in a "
                                f"{room:.1f} GiB share ({share} x {min(gpus):.0f} GiB)",
                                f"raise {where}.gpu_memory_utilization or "
                                f"{where}.tensor_parallel_size, or use larger GPUs"))
            if where == "evaluate.judge" and ok:
                checks.append(check_judge_kv(ev, room - weights))
    return checks




def _manifest(cache: Path) -> dict[str, Any]:
    path = cache / "manifest.json"
    if not path.is_file():
        return {}
    return {a["id"]: a for a in json.loads(path.read_text()).get("assets", [])}


def check_assets(config: Mapping[str, Any], stage: str,
                 environ: Mapping[str, str] | None = None) -> list[Check]:
    """The stage's hub assets in the prefetched cache (manifest entries whose files are there
    at the recorded sizes), and the job's environment pointing offline at that cache."""
    env = os.environ if environ is None else environ
    cluster = ClusterConfig.from_config(config)
    cache = Path(cluster.cache_dir)
    need = [a for a in assets_of(config) if stage in a.stages]
    if not need:
        return [Check("assets", True, f"stage {stage} reads no hub asset")]
    fix = (f"run `vade prefetch --config <config>` on a node with network "
           f"(cluster.cache_dir = {cache})")
    staged = _manifest(cache)
    checks = []
    for asset in need:
        entry = staged.get(asset.id)
        if entry is None:
            checks.append(Check(f"asset {asset.id}", False,
                                f"not in {cache / 'manifest.json'}", fix))
            continue
        missing = [f["path"] for f in entry["files"]
                   if not (p := cache / entry["path"] / f["path"]).is_file()
                   or p.stat().st_size != f["bytes"]]
        unprepared = [c for c in asset.configs if c not in entry.get("prepared", [c])]
        ok = not missing and not unprepared and asset.revision in (entry["revision"],
                                                                    entry.get("commit"))
        detail = (f"{len(entry['files'])} files, {entry['bytes'] / 1e9:.2f} GB at "
                  f"{entry.get('commit') or entry['revision']}" if ok else
                  f"{len(missing)} file(s) missing or resized (first: {missing[:1]}), "
                  f"unprepared configs {unprepared}, revision {entry['revision']} (wanted "
                  f"{asset.revision})")
        checks.append(Check(f"asset {asset.id}", ok, detail, fix))
    if cluster.offline:
        want = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(cache.resolve())}
        wrong = [f"{k}={env.get(k)!r} (want {v!r})" for k, v in want.items()
                 if (str(Path(env[k]).resolve()) if k == "HF_HOME" and env.get(k)
                     else env.get(k)) != v]
        checks.append(Check("offline environment", not wrong,
                            "; ".join(wrong) or "HF_HUB_OFFLINE=1, HF_HOME at the cache",
                            "run through the workflow (workflow/rules/common.smk sets them), "
                            "or export them; cluster.offline: false lets jobs reach the hub"))
    return checks




def check_disk(config: Mapping[str, Any], stage: str, where: str | Path,
               model: str | None = None,
               free_gb: Callable[[Path], float] | None = None) -> Check:
    """Free disk where the stage writes: for training, every unfinished run's checkpoints of
    the grid (they run at once on the same disk; ``vade.cluster.disk.runs_checkpoint_gb``) plus
    cluster.min_free_gb. ``where`` is ``--out``: a run's folder inside a job (with ``model``),
    else the results root."""
    path = Path(where)
    while not path.exists() and path != path.parent:
        path = path.parent
    free = (free_gb or (lambda p: shutil.disk_usage(p).free / 1e9))(path)
    need = ClusterConfig.from_config(config).min_free_gb
    what = "cluster.min_free_gb"
    if stage == "train":
        if model:   # inside a job: this run and the others already started beside it
            ckpt, runs = runs_checkpoint_gb(config, Path(where).parent, Path(where).name)
            if Path(where).name not in {c.run_id for c in grid_cells(config)}:
                ckpt, runs = ckpt + checkpoint_gb(config, model), runs + 1   # not the grid's
            who = f"this run and {runs - 1} other started, unfinished run(s)"
        else:       # by hand: every unfinished run of the grid at once
            ckpt, runs = runs_checkpoint_gb(
                config, Path(where) / str(config.get("name", "")) / "runs")
            who = f"the {runs} unfinished run(s) of the grid at once"
        need += ckpt
        what = (f"{ckpt:.0f} GB of checkpoints for {who} (train.keep_checkpoints) + "
                "cluster.min_free_gb")
    return Check("disk", free >= need, f"{free:.0f} GB free at {path}, {need:.0f} GB needed "
                 f"({what})", "free space there, lower train.keep_checkpoints, run fewer "
                 "training runs at once (snakemake --jobs), or lower cluster.min_free_gb")


def check_pins(config: Mapping[str, Any]) -> Check:
    """Every dataset the build reads pinned to a commit, when ``data.paper.require_pinned``
    (``cluster.revisions`` or the revisions lock): named here rather than by build-data after
    prefetch staged every dataset at ``main``."""
    missing = missing_pins(config)
    return Check("revision pins", not missing,
                 f"not pinned to a commit: {', '.join(missing)}" if missing else
                 "every dataset the build reads is pinned (or data.paper.require_pinned is off)",
                 resolve_command(config))


def check_profile(profile: str | Path) -> Check:
    """slurm/config.yaml's placeholders replaced (sbatch rejects them only at submission)."""
    path = Path(profile) / "config.yaml"
    if not path.is_file():
        return Check("slurm profile", True, f"no {path} (not submitting through SLURM)")
    code = [ln.split("#", 1)[0] for ln in path.read_text().splitlines()]
    left = [p for p in PLACEHOLDERS if any(p in ln for ln in code)]
    return Check("slurm profile", not left, f"placeholders left in {path}: {left}" if left
                 else f"{path} has no placeholder",
                 f"put your cluster's account and partitions in {path}")


def run_checks(config: Mapping[str, Any], stage: str, *, gpus: int | None = None,
               out_dir: str | Path = "results", model: str | None = None,
               profile: str | Path | None = "slurm", root: Path = Path(),
               probe: Callable[[], list[float]] = probe_gpus,
               importer: Callable[[str], Any] = importlib.import_module,
               environ: Mapping[str, str] | None = None,
               free_gb: Callable[[Path], float] | None = None) -> list[Check]:
    """Every check of one stage, cheapest first (the config, then packages, GPUs, assets)."""
    if stage not in STAGES:
        raise ValueError(f"--stage must be one of {STAGES}, got {stage!r}")
    try:
        check_gpu_resources(config)
        checks = [Check("gpu layout", True, "resources.<stage>.gpu cover the tensor-parallel "
                                            "sizes")]
    except ValueError as exc:
        checks = [Check("gpu layout", False, str(exc), "the keys named")]
    if profile is not None:
        checks.append(check_profile(root / profile))
    checks.append(check_disk(config, stage, out_dir, model, free_gb))
    checks.append(check_pins(config))
    checks += check_packages(config, stage, root, importer)
    if stage == "train" and attention(config):
        checks.append(check_attention(config))
    needed = stage_gpus(config, stage) if gpus is None else gpus
    seen = probe() if needed else []
    if needed:
        checks += check_gpus(config, stage, seen, needed)
    if stage == "train":
        checks.append(check_prompt_length(config, (root / data_manifest(config)).parent))
        checks += check_training_memory(config, model, seen)
    checks += check_assets(config, stage, environ)
    writable = check_cache_writable(config, stage)
    if writable is not None:
        checks.append(writable)
    if stage == "evaluate":
        checks += check_local_datasets(config, environ)
    return checks

