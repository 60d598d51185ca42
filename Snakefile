# VADE pipeline: data -> initial difficulty rollouts -> GRPO/GSPO training with the VADE sampler
# -> evaluation -> ablation report. Every rule calls the `vade` CLI; all logic lives in the package.
#
#   snakemake --profile slurm                                  # the paper (config/config.yaml)
#   snakemake --cores 2 --configfile config/tiny.yaml          # the CPU demo
#
# Configuration: config/README.md; schema: workflow/schemas/config.schema.yaml.
from snakemake.utils import min_version

min_version("9.0")


# The paper config is the default; a `--configfile` replaces it rather than merging into it, so
# the tiny demo cannot inherit the paper's models or GPU resources. `--config k=v` applies to both.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
wildcard_constraints:
    model=r"[A-Za-z0-9_.-]+",
    algorithm="grpo|gspo",
    method="|".join(METHODS.NAMES),  # vade/methods.py
    seed=r"\d+",


include: "workflow/rules/prefetch.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/difficulty.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/simulate.smk"


rule all:
    input:
        all_targets(),
    default_target: True
