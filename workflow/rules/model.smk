# Stage 1b: the starting policy. Paper: a pretrained Instruct model (nothing to build). Tiny: a
# Qwen2.5-VL-architecture model, tokenizer and processor built locally and warm-started with a short
# supervised run on a split disjoint from training (the stand-in for an Instruct model). A build
# with the same config, seed, warm-start rows and code is copied from the shared cache instead
# (vade/models/cache.py): the tiny study reuses the demo's model. Set through the environment, so
# that the cache's place reruns nothing.
os.environ.setdefault("VADE_MODEL_CACHE", "results/.model-cache")


rule build_model:
    input:
        warmstart=f"{DATA}/warmstart.parquet",
    output:
        f"{RESULTS}/models/{{model}}/done.json",
    params:
        code=code_digest("vade.models.command"),
        cfg=lambda wc: as_json({"seed": config["seed"], "model": model_config(wc.model)}),
        out=lambda wc, output: Path(output[0]).parent,
    log:
        f"logs/{NAME}/build_model/{{model}}.log",
    benchmark:
        f"benchmarks/{NAME}/build_model/{{model}}.tsv"
    # a data-parallel warm start (model.warm_start.processes) keeps that many cores busy
    threads: lambda wc: int(model_config(wc.model).get("warm_start", {}).get("processes", 1))
    resources:
        **resources_of("model"),
    conda:
        "../../envs/cpu.yaml"
    shell:
        "python -m vade build-model --config-json {params.cfg:q} --warmstart {input.warmstart}"
        " --out {params.out} > {log} 2>&1"
