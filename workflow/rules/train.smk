# Stage 3: one training run per (model, algorithm, method, seed). Backend `verl` launches verl's
# trainer (Ray, FSDP, vLLM; 4 GPUs per run in the paper) with the VADE sampler plugin; backend `local`
# is the single-process CPU trainer. Both write the run's DuckDB history and `done.json` last.


rule train:
    input:
        unpack(train_inputs),
    output:
        f"{RESULTS}/runs/{{model}}-{{algorithm}}-{{method}}-s{{seed}}/done.json",
    params:
        code=code_digest("vade.train.command"),
        cfg=train_params,
        backend=config["train"]["backend"],
        model=lambda wc: model_ref(wc.model),
        data_dir=lambda wc, input: Path(input.train).parent,
        out=lambda wc, output: Path(output[0]).parent,
        difficulty=lambda wc, input: (
            f"--difficulty {input.difficulty}" if "difficulty" in input.keys() else ""
        ),
    log:
        f"logs/{NAME}/train/{{model}}-{{algorithm}}-{{method}}-s{{seed}}.log",
    benchmark:
        f"benchmarks/{NAME}/train/{{model}}-{{algorithm}}-{{method}}-s{{seed}}.tsv"
    # before evaluations that are ready: a run frees the evaluation waiting on it, while the
    # base model's evaluation can fill a core at any time (on 2 cores it used to run first)
    priority: 1
    resources:
        **resources_of("train"),
    conda:
        engine_env(config["train"]["backend"] == "verl")
    # `--log`, not `> {log}`: the log is emptied only once the run folder's lock is held, so
    # a second trainer (`snakemake --nolock` beside a running job) is refused without wiping
    # the running job's log; the GPU preflight appends to it for the same reason
    shell:
        preflight("train", log=">> {log}", extra="--model {wildcards.model} --out {params.out}")
        + "python -m vade train --config-json {params.cfg:q}"
        " --backend {params.backend} --algorithm {wildcards.algorithm}"
        " --method {wildcards.method} --seed {wildcards.seed} --data-dir {params.data_dir}"
        " --model {params.model} {params.difficulty} --out {params.out} --log {log}"
