# Stage 0 (GPU configs): every hub asset the config names (policies, the judge, training sources,
# benchmark datasets), staged once into cluster.cache_dir on the node that runs Snakemake (it has
# network; a localrule), before any job that reads them. Jobs then run offline against it
# (common.smk exports the environment). Not part of a config without hub assets (the CPU demo).


if HUB_ASSETS:

    rule prefetch:
        output:
            CACHE_MANIFEST,
        params:
            assets=as_json(HUB_ASSETS),
        log:
            f"logs/{NAME}/prefetch.log",
        localrule: True
        conda:
            "../../envs/cpu.yaml"
        shell:
            "python -m vade prefetch > {log} 2>&1"
