# The sampler lab: samplers compared on a non-stationary bandit in seconds (no training), with the
# lambda1 x lambda2 sweep; tables and plots beside the report.


rule simulate:
    input:
        cfg=config["simulate"]["config"],
    output:
        summary=f"{REPORTS}/simulate/sim_summary.csv",
        table=report(f"{REPORTS}/simulate/summary.html", caption="../report/simulate.rst",
                     category="Sampler lab"),
        curves=report(f"{REPORTS}/simulate/curves.png", caption="../report/simulate.rst",
                      category="Sampler lab"),
        sweep=report(f"{REPORTS}/simulate/sweep.png", caption="../report/simulate.rst",
                     category="Sampler lab"),
    params:
        code=code_digest("vade.simulate.command"),
        quick="--quick" if config["simulate"]["quick"] else "",
        out=lambda wc, output: Path(output.summary).parent,
    log:
        f"logs/{NAME}/simulate.log",
    benchmark:
        f"benchmarks/{NAME}/simulate.tsv"
    resources:
        **resources_of("simulate"),
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m vade simulate --config {input.cfg} {params.quick} --out {params.out} > {log} 2>&1"
