# Stage 3: one training run per (model, algorithm, method, seed). Backend `verl` launches verl's
# trainer (Ray, FSDP, vLLM; 4 GPUs per run in the paper) with the VADE sampler plugin; backend `local`
# is the single-process CPU trainer. Both write the run's DuckDB history and `done.json` last.


def train_params(wc):
    """Exactly what a run depends on: changing a VADE lambda reruns only VADE-family runs, a DAPO
    cap only DAPO runs, a GSPO setting only GSPO runs."""
    train = {k: v for k, v in config["train"].items() if k not in ("grpo", "gspo")}
    cfg = {
        "name": NAME,
        "train": {**train, wc.algorithm: config["train"].get(wc.algorithm, {})},
    }
    if wc.method in VADE_FAMILY:
        cfg["sampler"] = config["sampler"]
    if wc.method == "dapo":
        cfg["dapo"] = config["dapo"]
    return as_json(cfg)


def train_inputs(wc):
    inputs = {
        "train": f"{DATA}/train.parquet",
        "val": f"{DATA}/val.parquet",
        "model": model_input(wc.model),
        "code": sources("vade/train", "vade/sampling", "vade/store", "vade/rewards",
                        "vade/models", "vade/rollout", "vade/tracking.py"),
    }
    if wc.method in VADE_FAMILY:
        inputs["difficulty"] = f"{RESULTS}/difficulty/{wc.model}/initial.parquet"
    return inputs


rule train:
    input:
        unpack(train_inputs),
    output:
        f"{RESULTS}/runs/{{model}}-{{algorithm}}-{{method}}-s{{seed}}/done.json",
    params:
        cfg=train_params,
        backend=config["train"]["backend"],
        model=lambda wc: model_ref(wc.model),
        out=lambda wc: run_dir(wc.model, wc.algorithm, wc.method, wc.seed),
        difficulty=lambda wc, input: (
            f"--difficulty {input.difficulty}" if "difficulty" in input.keys() else ""
        ),
    log:
        f"logs/{NAME}/train/{{model}}-{{algorithm}}-{{method}}-s{{seed}}.log",
    benchmark:
        f"benchmarks/{NAME}/train/{{model}}-{{algorithm}}-{{method}}-s{{seed}}.tsv"
    resources:
        **resources_of("train"),
    conda:
        engine_env(config["train"]["backend"] == "verl")
    shell:
        "{MLFLOW_ENV} {VADE} train --config-json {params.cfg:q}"
        " --backend {params.backend} --algorithm {wildcards.algorithm}"
        " --method {wildcards.method} --seed {wildcards.seed} --data-dir {DATA}"
        " --model {params.model} {params.difficulty} --out {params.out} > {log} 2>&1"
