"""Started by every Python process whose PYTHONPATH holds this folder (the engines tests' verl
runs): install ``verl_cpu_patches`` (its docstring says what and why)."""

import verl_cpu_patches

verl_cpu_patches.install()
