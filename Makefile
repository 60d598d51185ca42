# The two front-door commands (README "Quick start"):
#   make demo   install the CPU stack into .venv, then run the whole tiny pipeline with Snakemake
#   make test   install the package with every group the tests exercise into .venv, run the tests
# Versions come from requirements/constraints.txt (one venv that holds the whole stack).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q -c requirements/constraints.txt
DEPS   := pyproject.toml requirements/constraints.txt
# Nothing here may reach the Hugging Face hub (the tiny pipeline builds everything locally).
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export WANDB_MODE := disabled

.PHONY: demo test bench clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.stamp-test: $(PY) $(DEPS)
	$(PIP) -e '.[test,cpu,verl,eval,workflow,report]'
	@touch $@

$(VENV)/.stamp-demo: $(PY) $(DEPS)
	$(PIP) -e '.[cpu,eval,workflow,report]'
	@touch $@

test: $(VENV)/.stamp-test
	$(PY) -m pytest

demo: $(VENV)/.stamp-demo
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" snakemake --cores 2 --configfile config/tiny.yaml
	@echo "report: reports/tiny/report.html (text: reports/tiny/report.md; logs: logs/tiny/)"

bench: $(VENV)/.stamp-demo
	$(VENV)/bin/vade bench sampler

clean-venv:
	rm -rf $(VENV)
