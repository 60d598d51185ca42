# Shared helpers: config validation, the experiment grid, paths, and what each rule tracks.
#
# Rerun policy (the point of this file): each job's params hold exactly the config it depends
# on and the version of the package code it runs (`code_digest`), so Snakemake's params/code/input
# triggers rerun a job when, and only when, something it uses changed. Settings that do not change
# results (MLflow URI, SLURM resources) reach jobs through the environment, never through params.
import json
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

ROOT = Path(workflow.basedir)
# Every job imports torch, transformers and (evaluation) lmms-eval: about 5,500 modules. With
# PYTHONDONTWRITEBYTECODE set (some shells and CI set it), no bytecode is ever cached and each job
# compiles them all again (about 10 s of CPU per job on the 2-core machine, docs/testing.md "How
# long the demo takes"). `make` installs the venv with its bytecode; jobs may write what is still
# missing (the project's own modules, an environment installed without it): the first job pays.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# The method table and the config reader (vade/methods.py, vade/config_io.py: standard library
# and PyYAML only) from this checkout; appended, so it shadows nothing installed.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))
from vade import methods as METHODS
from vade.config_io import read_yaml
from vade.config_schema import check as check_config
from vade.provenance import source_version

for _file in workflow.configfiles:  # Snakemake's YAML reader keeps the last of duplicate keys
    try:
        read_yaml(_file)
    except ValueError as exc:
        raise WorkflowError(str(exc)) from None
# Types, ranges and choices: one line naming the dotted key, the value and what is allowed, as
# every verb prints it (vade/config_schema.py); then Snakemake's own pass fills in the schema's
# defaults (it cannot fail where the first passed: same schema, finite numbers only in ours).
try:
    check_config(config)
except ValueError as exc:
    raise WorkflowError(f"{exc} (schema: workflow/schemas/config.schema.yaml)") from None
validate(config, schema="../schemas/config.schema.yaml")

NAME = config["name"]
# The runs and each run's steps (a grid block may override train.steps): vade/grid.py, the one
# expansion the bill, the report and preflight read too.
from vade.grid import cells as grid_cells, run_config

try:
    CELLS = {c.run_id: c for c in grid_cells(config)}
except ValueError as exc:
    raise WorkflowError(f"config {exc}") from None
from vade.cluster.bill import make_bill, pin_warnings
from vade.cluster.resources import check_gpu_resources

# GPUs asked of SLURM against the tensor-parallel sizes (refused here, naming the keys, rather than
# inside vLLM or Ray once the job runs), then the whole grid's bill (vade plan), computed on every
# start: a rule between keys that the schema cannot state (a mini-batch that does not divide the
# batch, a tensor-parallel size that does not divide the GPUs) is one line naming the keys, as the
# CLI prints it, not a traceback out of the bill. (A NaN lr or a 31-digit step count is the
# schema's to refuse, above.)
try:
    check_gpu_resources(config)
    BILL = make_bill(config, (workflow.configfiles or ['<config>'])[-1])
except (ValueError, OverflowError) as exc:
    raise WorkflowError(f"config {exc}") from None
# Missing dataset pins are said on every invocation, dry runs included, before prefetch stages
# anything (one line, with the command that writes them); nothing is said when all are pinned.
for _line in pin_warnings(config, (workflow.configfiles or ['<config>'])[-1]):
    logger.warning(_line)


# The bill is printed where it helps: when jobs are about to start and some stage asks for GPUs
# (the cluster profile's real run). Not on a dry run, --lint, a CPU-only config or a job's own
# re-read of this file; `vade plan` prints it on demand.
# A job that checkpoints and stops before its time limit ends as failed, and Snakemake's retry
# resumes it: each resumable GPU rule gets the retries its worst job needs (the bill's
# submissions, less one: 17 for the paper's DAPO runs), or the profile's own when that is more.
# Set when the run starts, where the profile's value is known (a rule's `retries:` would replace
# it); Snakemake reads a rule's retries only when one of its jobs fails.
onstart:
    if any(section.get("gpu") for section in config["resources"].values()):
        logger.info(BILL.text())
    for _name, _stage in (("train", "training"), ("init_difficulty", "initial rollouts")):
        _rule = getattr(rules, _name).rule
        _rule.restart_times = max(_rule.restart_times or 0, BILL.retries(_stage))
        if BILL.retries(_stage):
            logger.info(f"{_name} jobs get {_rule.restart_times} retries (resumable jobs of up to "
                        f"{BILL.retries(_stage) + 1} submissions, vade plan)")

# `vade preflight`, the first command of every GPU job, reads the whole config from here (like the
# MLflow store: an environment setting, so that changing it reruns nothing).
os.environ.update(VADE_WORKFLOW_CONFIG=json.dumps(config))
# Hub assets staged by `vade prefetch` (rule prefetch) for configs with GPU stages; their jobs then
# run offline against the cache (cluster.offline). Both empty for the CPU demo.
from vade.cluster.assets import assets_of
from vade.job.config import ClusterConfig, job_env, near_miss_env, overridden

# Said, not done silently: a user's own value replaced for the jobs, and a variable whose name is
# a near miss of one we read (MLFLOW_TRACKING_URL falls back to the default store otherwise).
for _line in near_miss_env(os.environ) + overridden(os.environ, job_env(config), {
        "HF_HOME": "cluster.cache_dir: the staged assets; cluster.offline: false keeps yours",
        "LMMS_EVAL_DATASETS_CACHE": "a node-local mirror of the staged datasets"}):
    logger.warning(_line)
os.environ.update(job_env(config))
# unlocked: the revisions lock the first prefetch writes must not change the rule's params (and
# so rerun it and every stage after it)
HUB_ASSETS = ([[a.id, a.revision, list(a.stages)] for a in assets_of(config, locked=False)]
              if job_env(config) else [])
CACHE_MANIFEST = f"{ClusterConfig.from_config(config).cache_dir}/manifest.json"


def prefetched(stage):
    """The staged cache's manifest as an input of a stage that reads hub assets."""
    return {"assets": CACHE_MANIFEST} if any(stage in a[2] for a in HUB_ASSETS) else {}


def preflight(stage, log="> {log}", extra=""):
    """The command a GPU job runs before its own: `vade preflight` (its findings in the rule's log,
    which the stage's command then overwrites; `log` is the redirection, `>> {log}` where the
    stage's command empties the log itself once it holds its lock); '' when the stage has no
    GPU, so the CPU demo's jobs run exactly what they ran before."""
    if not config["resources"].get(stage, {}).get("gpu"):
        return ""
    return (f"python -m vade preflight --stage {stage} --no-profile {extra} {log} 2>&1 && ")
DATA = f"data/{NAME}"
RESULTS = f"results/{NAME}"
REPORTS = f"reports/{NAME}"
# Jobs inherit this process's environment (a SLURM job re-reads this file), which is how they get
# settings that must not rerun anything when changed: the checked-out package on PYTHONPATH (so
# `python -m vade` runs the code Snakemake tracks, in any venv, conda env or cluster image) and the
# MLflow store. A user's own MLFLOW_TRACKING_URI wins over the default store.
_user_pythonpath = os.environ.get("PYTHONPATH", "")
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), _user_pythonpath) if p),
    MLFLOW_EXPERIMENT_NAME=config["tracking"].get("experiment") or NAME,
)
if config["tracking"].get("mlflow_uri"):
    for _line in overridden(os.environ, {"MLFLOW_TRACKING_URI": config["tracking"]["mlflow_uri"]},
                            {"MLFLOW_TRACKING_URI": "tracking.mlflow_uri in the config"}):
        logger.warning(_line)
    os.environ.update(MLFLOW_TRACKING_URI=config["tracking"]["mlflow_uri"])
elif "MLFLOW_TRACKING_URI" not in os.environ:  # relative: jobs run in the working directory
    # (jobs that start together and open the new store serialise on a lock: vade/tracking.py)
    os.environ.update(MLFLOW_TRACKING_URI=f"sqlite:///{RESULTS}/mlflow.db")


# The profile's (slurm/config.yaml) values a user must replace: left as they are, sbatch fails
# only once jobs are submitted, so say it at the start, dry runs included.
PROFILE_PLACEHOLDERS = {"your-account", "your-cpu-partition", "your-gpu-partition"}


def placeholder_resources():
    """`rule.resource=value` of every SLURM resource still set to a profile placeholder."""
    settings = workflow.resource_settings
    scopes = {"default-resources": settings.default_resources or {}}
    scopes.update({f"set-resources.{rule}": res
                   for rule, res in settings.overwrite_resources.items()})
    found = []
    for scope, resources in scopes.items():
        for key, res in resources.items():
            value = getattr(res, "raw", res)
            if isinstance(value, str) and value.strip("'\"") in PROFILE_PLACEHOLDERS:
                found.append(f"{scope}.{key}={value}")
    return found


if placeholder_resources():
    logger.warning(
        "SLURM profile placeholders are still set: " + ", ".join(placeholder_resources())
        + ". Put your cluster's account and partitions in slurm/config.yaml (sbatch rejects"
        " these names)."
    )
def run_id(model, algorithm, method, seed):
    return f"{model}-{algorithm}-{method}-s{seed}"


def run_dir(model, algorithm, method, seed):
    return f"{RESULTS}/runs/{run_id(model, algorithm, method, seed)}"


def as_json(value):
    """A config fragment as one shell-safe argument (rules quote it with `:q`)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def code_digest(command):
    """The code a job of `python -m vade <verb>` runs, as one params value: the count and digest of
    this checkout's package files in the verb module's import closure (vade/provenance.py; ROOT,
    which jobs run through PYTHONPATH, not whichever vade the Snakemake process imported). A change to any
    of them reruns the job (Snakemake's params trigger); the dry run's reasons stay short (the
    files are not inputs), and a moved checkout reruns nothing (relative paths, file bytes)."""
    return source_version("vade.__main__", command, root=ROOT)


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
    """SLURM resources of a kind of job, from the config's resources section; CPU-friendly defaults.

    A GPU job is one process on one node (Ray starts inside it and spreads over its GPUs): without
    `nodes=1` SLURM may scatter `--gpus=4` over nodes, and the plugin's default of one task per GPU
    would start the command once per GPU."""
    spec = {"mem_mb": 8000, "runtime": 60, **config["resources"].get(kind, {})}
    if spec.get("gpu", 0):
        spec.setdefault("cpus_per_gpu", 8)
        spec.update(nodes=1, tasks_per_gpu=0)
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


def data_section():
    """The `data` section as `vade build-data` reads it (`skip_invalid` is a command-line flag)."""
    return {k: v for k, v in config["data"].items() if k != "skip_invalid"}


def data_outputs():
    """What build-data writes; the synthetic set adds a warm-start split and held-out eval sets."""
    out = {
        "train": f"{DATA}/train.parquet",
        "val": f"{DATA}/val.parquet",
        "manifest": f"{DATA}/manifest.json",
        "samples": f"{DATA}/samples.duckdb",
    }
    if config["data"]["kind"] == "synthetic":
        out["warmstart"] = f"{DATA}/warmstart.parquet"
        out.update({f"eval_{d}": f"{DATA}/eval/{d}.parquet" for d in synthetic_domains()})
    return out


def train_params(wc):
    """Exactly what a run depends on: changing a VADE lambda reruns only the runs that choose with
    VADE's posterior, a DAPO cap only DAPO runs, a GSPO setting only GSPO runs, a verl knob only
    verl runs (the sections each method reads: vade/methods.py), a grid block's `steps` only
    that block's runs."""
    rid = run_id(wc.model, wc.algorithm, wc.method, wc.seed)
    run = run_config(config, CELLS[rid]) if rid in CELLS else config
    train = {k: v for k, v in run["train"].items() if k not in ("grpo", "gspo", "verl")}
    if train["backend"] == "verl":
        train["verl"] = run["train"].get("verl", {})
    cfg = {
        "name": NAME,
        "train": {**train, wc.algorithm: run["train"].get(wc.algorithm, {})},
    }
    for key in METHODS.get(wc.method).config_sections:
        cfg[key] = config.get(key, {})
    return as_json(cfg)


def train_inputs(wc):
    method = METHODS.get(wc.method)
    inputs = {
        **prefetched("train"),
        "train": f"{DATA}/train.parquet",
        "val": f"{DATA}/val.parquet",
        "model": model_input(wc.model),
    }
    if method.needs_difficulty:
        inputs["difficulty"] = f"{RESULTS}/difficulty/{wc.model}/initial.parquet"
    return inputs


def eval_inputs(wc):
    """A trained run's done.json, or, for `<model>-base`, the base model itself."""
    inputs = {**prefetched("evaluate")}
    if config["data"]["kind"] == "synthetic":
        inputs["eval_sets"] = [f"{DATA}/eval/{d}.parquet" for d in synthetic_domains()]
    if wc.run.endswith("-base"):
        inputs["model"] = model_input(wc.run[: -len("-base")])
    else:
        inputs["run"] = f"{RESULTS}/runs/{wc.run}/done.json"
    return inputs


def eval_env():
    """The paper's evaluation serves the policy or the judge with vLLM: an env that has it."""
    ev = config["evaluate"]
    policy, judge = ev.get("policy", {}), ev.get("judge", {})
    vllm = policy.get("engine") == "vllm" or judge.get("mode") == "serve"
    return "../../envs/eval-vllm.yaml" if vllm else "../../envs/eval.yaml"


def eval_repeat_files(wc):
    return [f"{RESULTS}/eval/repeats/{wc.run}/r{i}.duckdb"
            for i in range(config["evaluate"].get("repeats", 4))]


def evaluation_plan():
    """`vade evaluate --plan` for the dry run's log: (text, refusal or None). Imported from the
    checkout (appended to sys.path, so it shadows nothing installed); pure arithmetic."""
    import sys

    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from vade.eval.config import EvaluateConfig
    from vade.eval.plan import PlanError, make_plan

    res = resources_of("evaluate")
    plan = make_plan(EvaluateConfig.from_dict(config["evaluate"]), runtime_min=res["runtime"],
                     gpus=res.get("gpu", 0))
    try:
        plan.check()
    except PlanError as exc:
        return "\n".join(plan.lines()), str(exc)
    return "\n".join(plan.lines()), None


def eval_params():
    """What an evaluation job and its merge depend on."""
    return as_json({"name": NAME, "seed": config["seed"], "evaluate": config["evaluate"]})


def checkpoint_of(wc):
    if wc.run.endswith("-base"):
        return model_ref(wc.run[: -len("-base")])
    return f"{RESULTS}/runs/{wc.run}/final"


def report_inputs(wc, runs=None):
    """The report's inputs: every run of the grid, or only ``runs``."""
    runs = list(CELLS) if runs is None else runs
    bases = sorted({c.model for c in CELLS.values()})
    return {
        "runs": [f"{RESULTS}/runs/{r}/done.json" for r in runs],
        "evals": [f"{RESULTS}/eval/{r}.duckdb" for r in runs]
        + [f"{RESULTS}/eval/{m}-base.duckdb" for m in bases],
        "samples": f"{DATA}/samples.duckdb",
        "difficulty": [f"{RESULTS}/difficulty/{m}/initial.parquet" for m in bases],
    }


def finished_report_inputs(wc):
    """The report's inputs over the runs whose training had finished (done.json on disk) when the
    DAG was built, with the evaluation and difficulty files on disk: a long study's results so
    far. It makes nothing but its report, so beside the study's own Snakemake (which locks every
    output its invocation will write, finished ones too) it runs with --nolock. A run trained but
    not yet evaluated shows no benchmark scores; one not yet trained shows as missing."""
    runs = [r for r in CELLS if Path(f"{RESULTS}/runs/{r}/done.json").exists()]
    if not runs:
        raise WorkflowError(f"no run of the grid has finished yet (no {RESULTS}/runs/*/done.json): "
                            "nothing to report")
    inputs = report_inputs(wc, runs)
    for key in ("evals", "difficulty"):
        inputs[key] = [f for f in inputs[key] if Path(f).exists()]
    return inputs
