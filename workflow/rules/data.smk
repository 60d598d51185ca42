# Stage 1: the training set (paper: LLaVA-OneVision subsets + ChartQA + ScienceQA; tiny: synthetic),
# in verl's multimodal parquet schema, with its manifest and the per-sample catalog for SQL joins.


rule build_data:
    input:
        **prefetched("data"),
    output:
        **data_outputs(),
    params:
        code=code_digest("vade.data.command"),
        # cluster.revisions and the revisions lock prefetch writes: the commits
        # data.paper.require_pinned checks the copies against (the lock's path only where set,
        # so configs without one keep their params)
        # models: whose processors count each prompt's tokens for the manifest
        # (vade/data/prompt_tokens.py; the hub ids are staged by the prefetch above)
        cfg=as_json({"seed": config["seed"], "data": data_section(), "models": {
            m: {k: s[k] for k in ("kind", "name_or_path") if k in s}
            for m, s in config.get("models", {}).items()}, "cluster": {
            "revisions": config.get("cluster", {}).get("revisions", {}),
            **({"revisions_lock": config["cluster"]["revisions_lock"]}
               if config.get("cluster", {}).get("revisions_lock") else {})}}),
        out=lambda wc, output: Path(output.train).parent,
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
        "python -m vade build-data --config-json {params.cfg:q} --out {params.out}"
        " {params.skip_invalid}"
        " > {log} 2>&1"
