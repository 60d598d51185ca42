#!/usr/bin/env bash
# Run by Snakemake after it creates envs/train-verl.yaml (inside that env). Needs network once.
set -euo pipefail
# Attention runs on PyTorch's SDPA kernels by default (train.verl.attention: sdpa), so nothing
# here needs a compiler. flash-attn 2.8.3 has no wheel for torch 2.9 on PyPI and builds from
# source (nvcc and an hour of CPU): only with VADE_FLASH_ATTN=1 in the environment that creates
# this env, for train.verl.attention: flash_attention_2 (`vade preflight` says which is active).
if [ "${VADE_FLASH_ATTN:-0}" = "1" ]; then
    python -m pip install --no-build-isolation "flash-attn==2.8.3"
fi
# verl-recipe's DAPO trainer at the commit that imports with verl 0.7.1 (keep in sync with
# vade/train/verl/recipe.py: RECIPE_COMMIT), checked out as the namespace package `recipe`.
dest="${CONDA_PREFIX}/verl-recipe/recipe"
if [ ! -d "${dest}/.git" ]; then
    git clone --filter=blob:none https://github.com/verl-project/verl-recipe.git "${dest}"
fi
git -C "${dest}" checkout --detach 8f9e7ac93acac57f6ef7e8dffa3de788d148a09a
mkdir -p "${CONDA_PREFIX}/etc/conda/activate.d"
echo "export VADE_VERL_RECIPE_DIR='${CONDA_PREFIX}/verl-recipe'" \
    > "${CONDA_PREFIX}/etc/conda/activate.d/vade-verl-recipe.sh"
