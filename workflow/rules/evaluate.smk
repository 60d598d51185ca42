# Stage 4: lmms-eval on every trained checkpoint and on each base model (the tables' "Base Model"
# line): paper benchmarks with a vLLM-served judge, or the synthetic held-out sets on CPU.
# average@k = k seeded sampling repeats. One DuckDB file of tidy rows per evaluated checkpoint.


def eval_inputs(wc):
    """A trained run's done.json, or, for `<model>-base`, the base model itself."""
    inputs = {"code": sources("vade/eval", "vade/rewards", "vade/tracking.py")}
    if config["data"]["kind"] == "synthetic":
        inputs["eval_sets"] = [f"{DATA}/eval/{d}.parquet" for d in synthetic_domains()]
    if wc.run.endswith("-base"):
        inputs["model"] = model_input(wc.run[: -len("-base")])
    else:
        inputs["run"] = f"{RESULTS}/runs/{wc.run}/done.json"
    return inputs


def checkpoint_of(wc):
    if wc.run.endswith("-base"):
        return model_ref(wc.run[: -len("-base")])
    return f"{RESULTS}/runs/{wc.run}/final"


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        f"{RESULTS}/eval/{{run}}.duckdb",
    params:
        cfg=as_json({"name": NAME, "seed": config["seed"], "evaluate": config["evaluate"]}),
        checkpoint=checkpoint_of,
    log:
        f"logs/{NAME}/evaluate/{{run}}.log",
    benchmark:
        f"benchmarks/{NAME}/evaluate/{{run}}.tsv"
    resources:
        **resources_of("evaluate"),
    conda:
        "../../envs/eval.yaml"
    shell:
        "{MLFLOW_ENV} {VADE} evaluate --config-json {params.cfg:q} --run-id {wildcards.run}"
        " --checkpoint {params.checkpoint} --data-dir {DATA} --out {output} > {log} 2>&1"
