"""Evaluation with lmms-eval: local tasks over the synthetic held-out sets (CPU) or the paper's
benchmarks with a vLLM-served judge; tidy results per repeat in DuckDB (``vade.eval.store``)."""
