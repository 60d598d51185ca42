# Stage 2: Algorithm 1, lines 1-4. G rollouts per training sample with the base model give each
# sample's initial alpha = r, beta = G - r, which the VADE-family samplers start from.


rule init_difficulty:
    input:
        **prefetched("difficulty"),
        train=f"{DATA}/train.parquet",
        model=lambda wc: model_input(wc.model),
    output:
        f"{RESULTS}/difficulty/{{model}}/initial.parquet",
    params:
        code=code_digest("vade.rollout.command"),
        cfg=lambda wc: as_json({"seed": config["seed"], "difficulty": config["difficulty"]}),
        model=lambda wc: model_ref(wc.model),
        out=lambda wc, output: Path(output[0]).parent,
    log:
        f"logs/{NAME}/init_difficulty/{{model}}.log",
    benchmark:
        f"benchmarks/{NAME}/init_difficulty/{{model}}.tsv"
    priority: 2  # on the critical path: the VADE-family runs wait for it
    resources:
        **resources_of("difficulty"),
    conda:
        engine_env(config["difficulty"]["engine"] == "vllm")
    shell:
        preflight("difficulty") + "python -m vade init-difficulty --config-json {params.cfg:q} --data {input.train}"
        " --model {params.model} --out {params.out} > {log} 2>&1"
