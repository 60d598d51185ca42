# The two front-door commands (README "Quick start"):
#   make demo   install what the demo needs into .venv, then run it
#   make test   install the package with its test dependencies into .venv, then run the tests
# Versions come from requirements/constraints.txt (one venv that holds the whole stack).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q -c requirements/constraints.txt
DEPS   := pyproject.toml requirements/constraints.txt

.PHONY: demo test bench clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.stamp-test: $(PY) $(DEPS)
	$(PIP) -e '.[test,report]'
	@touch $@

$(VENV)/.stamp-demo: $(PY) $(DEPS)
	$(PIP) -e '.[report]'
	@touch $@

test: $(VENV)/.stamp-test
	$(PY) -m pytest

demo: $(VENV)/.stamp-demo
	$(VENV)/bin/vade demo
	$(VENV)/bin/vade simulate --quick --out reports/simulate

bench: $(VENV)/.stamp-demo
	$(VENV)/bin/vade bench sampler

clean-venv:
	rm -rf $(VENV)
