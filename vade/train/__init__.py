"""Training: the single-process local trainer (``vade.train.local``) and the verl adapter
(``vade.train.verl``), sharing one config (``vade.train.config``) and one objective.

``vade.train.algos`` holds the advantage and loss math in torch (verl's ``core_algos`` semantics,
cross-checked against verl in ``tests/test_train_algos.py``), ``vade.train.dapo`` the DAPO
dynamic-sampling loop as a pure function, ``vade.train.checkpoint`` atomic checkpoints,
``vade.train.recorder`` the per-step record (DuckDB history, MLflow) every trainer writes. Nothing
here imports torch at package import time, so ``vade --help`` stays fast.
"""
