# Stage 1: the training set (paper: LLaVA-OneVision subsets + ChartQA + ScienceQA; tiny: synthetic),
# in verl's multimodal parquet schema, with its manifest and the per-sample catalog for SQL joins.


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


rule build_data:
    input:
        code=sources("vade/data", "vade/rewards"),
    output:
        **data_outputs(),
    params:
        cfg=as_json({"seed": config["seed"], "data": config["data"]}),
        skip_invalid="--skip-invalid" if config["data"].get("skip_invalid") else "",
    log:
        f"logs/{NAME}/build_data.log",
    benchmark:
        f"benchmarks/{NAME}/build_data.tsv"
    resources:
        **resources_of("data"),
    conda:
        "../../envs/cpu.yaml"
    shell:
        "{VADE} build-data --config-json {params.cfg:q} --out {DATA} {params.skip_invalid}"
        " > {log} 2>&1"
