# `make run`: set up .venv and run the demo; `make test`: set up .venv with test extras and run the suite
# (in up to 4 processes, pytest-xdist: about half the time on 2 cores; a module whose tests share
# fitted models is kept on one worker by its xdist_group mark, --dist loadgroup);
# `make docs`: set up .venv with the docs extras and build the site (docs/_build/html/index.html).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench lint docs clean

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

clean:
	rm -rf $(VENV) build src/*.egg-info docs/_build docs/generated docs/auto_examples \
		docs/sg_execution_times.rst
