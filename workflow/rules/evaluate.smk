# Stage 4: lmms-eval on every trained checkpoint and on each base model (the tables' "Base Model"
# line): paper benchmarks with the policy and a judge served by vLLM, or the synthetic held-out
# sets on CPU. average@k = k seeded sampling repeats. GPU evaluation (the cluster): one job per
# repeat, in parallel, merged by a small CPU rule into one DuckDB file of tidy rows per checkpoint;
# each repeat job prints its plan (`vade evaluate --plan`) and refuses one that cannot finish
# inside its runtime. CPU evaluation (the demo): one job runs a checkpoint's k repeats in one
# process and writes that same file, since a job per repeat only adds a process and lmms-eval
# start-up (most of a demo repeat's time) where the repeats cannot run side by side anyway.
REPEAT_JOBS = bool(resources_of("evaluate").get("gpu"))


if config["evaluate"].get("kind") == "paper":  # the paper's cost, on every run and dry run
    _plan_text, _refusal = evaluation_plan()
    logger.info(_plan_text)
    if _refusal:
        logger.warning(f"{_refusal} (every evaluation job will refuse to start)")


rule evaluate_repeat:  # (REPEAT_JOBS: eval_repeat_files asks for its outputs)
    input:
        unpack(eval_inputs),
    output:
        f"{RESULTS}/eval/repeats/{{run}}/r{{repeat}}.duckdb",
    wildcard_constraints:
        run=r"[^/]+",
        repeat=r"\d+",
    params:
        code=code_digest("vade.eval.command"),
        cfg=eval_params(),
        checkpoint=checkpoint_of,
        data_dir=DATA,
        gpus=resources_of("evaluate").get("gpu", 0),
    log:
        main=f"logs/{NAME}/evaluate/{{run}}/r{{repeat}}.log",
        judge=f"logs/{NAME}/evaluate/{{run}}/r{{repeat}}.judge.log",
        samples=f"logs/{NAME}/evaluate/{{run}}/r{{repeat}}.samples.jsonl",
    benchmark:
        f"benchmarks/{NAME}/evaluate/{{run}}/r{{repeat}}.tsv"
    resources:
        **resources_of("evaluate"),
    conda:
        eval_env()
    shell:
        preflight("evaluate", log="> {log.main}", extra="--out {output}")
        + "python -m vade evaluate --config-json {params.cfg:q} --run-id {wildcards.run}"
        " --repeat {wildcards.repeat} --checkpoint {params.checkpoint} --data-dir {params.data_dir}"
        " --runtime-min {resources.runtime} --gpus {params.gpus} --judge-log {log.judge}"
        " --samples-log {log.samples}"
        " --out {output} > {log.main} 2>&1"


if REPEAT_JOBS:

    rule evaluate:
        input:
            repeats=eval_repeat_files,
        output:
            f"{RESULTS}/eval/{{run}}.duckdb",
        wildcard_constraints:
            run=r"[^/]+",
        params:
            code=code_digest("vade.eval.command"),
            cfg=eval_params(),
        log:
            f"logs/{NAME}/evaluate/{{run}}.log",
        resources:
            **resources_of("report"),
        conda:
            "../../envs/cpu.yaml"
        shell:
            "python -m vade evaluate --config-json {params.cfg:q} --run-id {wildcards.run}"
            " --merge {input.repeats} --out {output} > {log} 2>&1"

else:

    rule evaluate:
        input:
            unpack(eval_inputs),
        output:
            f"{RESULTS}/eval/{{run}}.duckdb",
        wildcard_constraints:
            run=r"[^/]+",
        params:
            code=code_digest("vade.eval.command"),
            cfg=eval_params(),
            checkpoint=checkpoint_of,
            data_dir=DATA,
        log:
            main=f"logs/{NAME}/evaluate/{{run}}.log",
            judge=f"logs/{NAME}/evaluate/{{run}}.judge.log",
            samples=f"logs/{NAME}/evaluate/{{run}}.samples.jsonl",
        benchmark:
            f"benchmarks/{NAME}/evaluate/{{run}}.tsv"
        resources:
            **resources_of("evaluate"),
        conda:
            eval_env()
        shell:
            "python -m vade evaluate --config-json {params.cfg:q} --run-id {wildcards.run}"
            " --checkpoint {params.checkpoint} --data-dir {params.data_dir} --gpus 0"
            " --judge-log {log.judge} --samples-log {log.samples} --out {output}"
            " > {log.main} 2>&1"
