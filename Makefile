# `make run`: set up .venv and run the demo; `make test`: set up .venv with test extras and run the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,plot]"
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/ecrm demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run_all.py

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build src/*.egg-info
