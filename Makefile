# `make run`: set up .venv and run the demo; `make test`: set up .venv with test extras and run the suite
# (in up to 4 processes, pytest-xdist: about half the time on 2 cores; a module whose tests share
# fitted models is kept on one worker by its xdist_group mark, --dist loadgroup);
# `make docs`: set up .venv with the docs extras and build the site (docs/_build/html/index.html);
# `make peers`: set up .venv-peers (Python >= 3.13) with scikit-lr 0.3.0, the benchmark's peers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench lint docs clean peers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,plot]"
	touch $(VENV)/.installed $@

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/ecrm demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadgroup

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run_all.py

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy

# warnings are errors; every example in examples/ runs (one BLAS thread each, see docs/conf.py)
docs: $(VENV)/.installed-docs
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# scikit-lr 0.3.0 needs Python >= 3.13: PEERS_PYTHON, else a pyenv one, else one on the PATH
PEERS := .venv-peers
PEERS_PYTHON ?= $(firstword $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.1[3-9]*/bin/python3 \
	$(HOME)/.pyenv/versions/3.1[3-9]*/bin/python3) $(shell command -v python3.13 python3.14 2>/dev/null))

$(PEERS)/.installed: pyproject.toml
	@test -n "$(PEERS_PYTHON)" || { echo "make peers: no Python >= 3.13 found; pass" \
		"PEERS_PYTHON=/path/to/python3.13"; exit 1; }
	@$(PEERS_PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 13))' || { echo \
		"make peers: $(PEERS_PYTHON) is older than 3.13 (scikit-lr 0.3.0 needs 3.13)"; exit 1; }
	$(PEERS_PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS)/bin/python -m pip install --quiet scikit-lr==0.3.0 -e .
	$(PEERS)/bin/python -c 'import sklr; print("scikit-lr", sklr.__version__)'
	touch $@

peers: $(PEERS)/.installed

clean:
	rm -rf $(VENV) $(PEERS) build src/*.egg-info docs/_build docs/generated docs/auto_examples \
		docs/sg_execution_times.rst
