"""A job's environment on the cluster: the ``cluster`` config section (``config``), the SLURM
time limit (``timelimit``), the CPUs a job was given (``cpus``) and its node-local scratch
(``scratch``).

Its own low room because the stages below the cluster's planning read it while they run: data
(hub revisions), training (the time guard, Ray's CPU count). ``vade.cluster`` (plan, prefetch,
preflight, the bill) reads every stage's config and so sits above them all.
"""
