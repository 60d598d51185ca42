# Stage 5: Tables 1, 2 and 5, Figures 1, 3 and 4, the rollout headline and the per-sample difficulty
# view, from the runs' DuckDB histories and the evaluation files. The HTML report shows report.html
# (everything, figures embedded), each table and each figure as items; report.md is the same text.


rule report:
    input:
        unpack(report_inputs),
    output:
        md=f"{REPORTS}/report.md",
        html=report(f"{REPORTS}/report.html", caption="../report/report.rst", category="Report"),
        tables=report(
            directory(f"{REPORTS}/tables"),
            patterns=["{name}.html"],
            caption="../report/tables.rst",
            category="Tables",
        ),
        figures=report(
            directory(f"{REPORTS}/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    params:
        cfg=as_json(
            {"name": NAME, "report": config["report"], "experiments": config["experiments"]}
        ),
        runs=f"{RESULTS}/runs",
        evals=f"{RESULTS}/eval",
        out=lambda wc, output: Path(output.md).parent,
    log:
        f"logs/{NAME}/report.log",
    resources:
        **resources_of("report"),
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m vade report --config-json {params.cfg:q} --runs {params.runs}"
        " --evals {params.evals}"
        " --samples {input.samples} --difficulty {input.difficulty} --out {params.out}"
        " > {log} 2>&1"
