# Stage 5: Tables 1, 2 and 5, Figures 1, 3 and 4, the rollout headline and the per-sample difficulty
# view, from the runs' DuckDB histories and the evaluation files. The HTML report shows report.html
# (everything, figures embedded), each table and each figure as items; report.md is the same text.
# It reads exactly the rule's inputs (the grid's histories and evaluation files), never a folder
# listing: a stale file left in results/<name>/eval by a removed grid cell is not averaged in.


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
        code=code_digest("vade.report.command"),
        cfg=as_json(
            {
                "name": NAME,
                "report": config["report"],
                "experiments": config["experiments"],
                "evaluate": {  # the benchmark columns (vade.report.config.table_columns)
                    "kind": config["evaluate"].get("kind", "synthetic"),
                    "benchmarks": config["evaluate"].get("benchmarks"),
                },
                # the sampler lab's page is written beside the report: linked from it
                "simulate": {"enabled": config["simulate"]["enabled"]},
            }
        ),
        histories=lambda wc, input: [str(Path(p).with_name("history.duckdb")) for p in input.runs],
        out=lambda wc, output: Path(output.md).parent,
    log:
        f"logs/{NAME}/report.log",
    resources:
        **resources_of("report"),
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m vade report --config-json {params.cfg:q} --runs {params.histories}"
        " --evals {input.evals}"
        " --samples {input.samples} --difficulty {input.difficulty} --out {params.out}"
        " > {log} 2>&1"


# The same report over the runs that have finished so far (`finished_report_inputs`), for a study
# that takes longer than one sitting: `snakemake reports/<name>/finished/report.md` (--nolock
# beside the study's running Snakemake). It runs no other job: not-yet-trained runs appear as
# missing, not-yet-evaluated ones without scores. Kept apart from report.md, the whole grid's.
use rule report as report_finished with:
    input:
        unpack(finished_report_inputs),
    output:
        md=f"{REPORTS}/finished/report.md",
        html=f"{REPORTS}/finished/report.html",
        tables=directory(f"{REPORTS}/finished/tables"),
        figures=directory(f"{REPORTS}/finished/figures"),
    log:
        f"logs/{NAME}/report_finished.log",


# The study's per-run table for the repository (`vade.report.export`): one row per finished run
# and validation step, the input of every number of its results section (docs/results.md blocks,
# `vade results check`). Over the runs finished so far, like report_finished:
# `snakemake --nolock docs/data/<name>/runs.csv`, then commit the file.
rule results_table:
    input:
        unpack(finished_report_inputs),
    output:
        f"docs/data/{NAME}/runs.csv",
    params:
        cfg=as_json({"name": NAME, "report": config["report"]}),
        histories=lambda wc, input: [str(Path(p).with_name("history.duckdb")) for p in input.runs],
    log:
        f"logs/{NAME}/results_table.log",
    resources:
        **resources_of("report"),
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m vade results export --config-json {params.cfg:q} --runs {params.histories}"
        " --difficulty {input.difficulty} --out {output} > {log} 2>&1"


# What each finished run trained on, by third of its steps (`vade.report.picks`): the table
# behind the page's picks blocks. `snakemake --nolock docs/data/<name>/picks.csv`, then commit.
rule picks_table:
    input:
        unpack(finished_report_inputs),
    output:
        f"docs/data/{NAME}/picks.csv",
    params:
        cfg=as_json({"name": NAME, "report": config["report"]}),
        histories=lambda wc, input: [str(Path(p).with_name("history.duckdb")) for p in input.runs],
    log:
        f"logs/{NAME}/picks_table.log",
    resources:
        **resources_of("report"),
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m vade results picks --config-json {params.cfg:q} --runs {params.histories}"
        " --out {output} > {log} 2>&1"
