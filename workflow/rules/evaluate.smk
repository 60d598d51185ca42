# Stage 4: lmms-eval on every trained checkpoint and on each base model (the tables' "Base Model"
# line): paper benchmarks with a vLLM-served judge, or the synthetic held-out sets on CPU.
# average@k = k seeded sampling repeats. One DuckDB file of tidy rows per evaluated checkpoint.


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        f"{RESULTS}/eval/{{run}}.duckdb",
    params:
        cfg=as_json({"name": NAME, "seed": config["seed"], "evaluate": config["evaluate"]}),
        checkpoint=checkpoint_of,
        data_dir=DATA,
    log:
        f"logs/{NAME}/evaluate/{{run}}.log",
    benchmark:
        f"benchmarks/{NAME}/evaluate/{{run}}.tsv"
    resources:
        **resources_of("evaluate"),
    conda:
        "../../envs/eval.yaml"
    shell:
        "python -m vade evaluate --config-json {params.cfg:q} --run-id {wildcards.run}"
        " --checkpoint {params.checkpoint} --data-dir {params.data_dir} --out {output} > {log} 2>&1"
