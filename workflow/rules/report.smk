# Stage 5: Tables 1, 2 and 5, Figures 1, 3 and 4, the rollout headline and the per-sample difficulty
# view, from the runs' DuckDB histories and the evaluation files; items of `snakemake --report`.


def report_inputs(wc):
    runs = [run_id(*cell) for cell in cells()]
    bases = sorted({m for m, _, _, _ in cells()})
    return {
        "runs": [f"{RESULTS}/runs/{r}/done.json" for r in runs],
        "evals": [f"{RESULTS}/eval/{r}.duckdb" for r in runs]
        + [f"{RESULTS}/eval/{m}-base.duckdb" for m in bases],
        "samples": f"{DATA}/samples.duckdb",
        "code": sources("vade/report", "vade/store"),
    }


rule report:
    input:
        unpack(report_inputs),
    output:
        md=report(f"{REPORTS}/report.md", caption="../report/report.rst", category="Report"),
        figures=report(
            directory(f"{REPORTS}/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    params:
        cfg=as_json({"name": NAME, "report": config["report"]}),
    log:
        f"logs/{NAME}/report.log",
    resources:
        **resources_of("report"),
    conda:
        "../../envs/report.yaml"
    shell:
        "{VADE} report --config-json {params.cfg:q} --runs {RESULTS}/runs --evals {RESULTS}/eval"
        " --samples {input.samples} --out {REPORTS} > {log} 2>&1"
