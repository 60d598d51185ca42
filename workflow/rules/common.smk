# Shared helpers: config validation, the experiment grid, paths, and what each rule tracks.
#
# Rerun policy (the point of this file): every rule's `params:` holds exactly the config it
# depends on, and its `input:` lists the package sources it runs, so Snakemake's params/code/input
# triggers rerun a job when, and only when, something it uses changed. Settings that do not change
# results (MLflow URI, SLURM resources) reach jobs through the environment, never through params.
import json
from pathlib import Path

from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")

NAME = config["name"]
ROOT = Path(workflow.basedir)
DATA = f"data/{NAME}"
RESULTS = f"results/{NAME}"
REPORTS = f"reports/{NAME}"
# Jobs run the checked-out package, whatever environment they are in (venv, conda, cluster image).
VADE = f"PYTHONPATH={ROOT}${{PYTHONPATH:+:$PYTHONPATH}} python -m vade"
TRACKING = config["tracking"]
MLFLOW_URI = TRACKING.get("mlflow_uri") or f"sqlite:///{ROOT}/{RESULTS}/mlflow.db"
MLFLOW_ENV = (
    f"MLFLOW_TRACKING_URI={MLFLOW_URI} "
    f"MLFLOW_EXPERIMENT_NAME={TRACKING.get('experiment') or NAME}"
)
VADE_FAMILY = ("vade", "symmetric", "greedy", "last-update")


wildcard_constraints:
    model=r"[A-Za-z0-9_.-]+",
    algorithm="grpo|gspo",
    method="vanilla|dapo|vade|symmetric|greedy|last-update",
    seed=r"\d+",


def cells():
    """(model, algorithm, method, seed) of every training run the config asks for, in order."""
    seen = []
    for block in config["experiments"]["grid"]:
        for m in block["models"]:
            for a in block["algorithms"]:
                for meth in block["methods"]:
                    for s in config["experiments"]["seeds"]:
                        if (m, a, meth, s) not in seen:
                            seen.append((m, a, meth, s))
    return seen


def run_id(model, algorithm, method, seed):
    return f"{model}-{algorithm}-{method}-s{seed}"


def run_dir(model, algorithm, method, seed):
    return f"{RESULTS}/runs/{run_id(model, algorithm, method, seed)}"


def as_json(value):
    """A config fragment as one shell-safe argument (rules quote it with `:q`)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def sources(*packages):
    """The package's Python files a rule runs: listed as input so a code change reruns it."""
    files = []
    for pkg in ("vade/cli.py", "vade/config_io.py", *packages):
        path = ROOT / pkg
        files += [str(path)] if path.is_file() else sorted(str(p) for p in path.rglob("*.py"))
    return files


def model_config(model):
    return config["models"][model]


def model_ref(model):
    """What `--model` receives: the locally built directory, or a hub id / path for pretrained."""
    spec = model_config(model)
    if spec["kind"] == "tiny":
        return f"{RESULTS}/models/{model}"
    return spec["name_or_path"]


def model_input(model):
    """The model as a file dependency (only locally built models are files the DAG makes)."""
    if model_config(model)["kind"] == "tiny":
        return [f"{RESULTS}/models/{model}/done.json"]
    return []


def resources_of(kind):
    """SLURM resources of a rule kind from config (`resources:`), with CPU-friendly fallbacks."""
    spec = {"mem_mb": 8000, "runtime": 60, **config["resources"].get(kind, {})}
    if spec.get("gpu", 0):
        spec.setdefault("cpus_per_gpu", 8)
    else:  # no GPU: ask for neither GPUs nor CPUs per GPU
        spec.pop("gpu", None)
        spec.pop("cpus_per_gpu", None)
    return spec


def all_targets():
    targets = [f"{REPORTS}/report.md"]
    if config["simulate"]["enabled"]:
        targets.append(f"{REPORTS}/simulate/sim_summary.csv")
    return targets


def synthetic_domains():
    return config["data"].get("synthetic", {}).get("domains", ["math", "chart", "science"])


def engine_env(gpu_stack):
    """The conda env of a stage that runs on the GPU stack (verl, vLLM) or on the CPU stack."""
    return "../../envs/train-verl.yaml" if gpu_stack else "../../envs/cpu.yaml"
