"""The single-process trainer for CPU (and small GPU) runs: ``train_local(cfg, paths)``.

Modules: ``loop`` (the step loop, logging, checkpoint/resume), ``update`` (the PPO actor update),
``batch`` (rollouts -> rows, rewards, log-probs), ``policy`` (model, optimizer, reference,
engine), ``inputs`` (paths and input checks). Heavy imports happen inside functions.
"""

from vade.train.local.inputs import RunPaths
from vade.train.local.loop import train_local

__all__ = ["RunPaths", "train_local"]
