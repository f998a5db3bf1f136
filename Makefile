# The two commands a newcomer needs: `make bench` (main job, offline engine, no keys) and `make test` (lint, types
# and the whole suite). `make test-fast` skips the tests marked slow (subprocesses, real-data sweeps): the edit loop.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: bench test test-fast lint perf report soak clean-results

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(STAMP)

bench: $(STAMP)
	$(BIN)/ombench run experiment=quick

test: lint
	$(BIN)/python -m pytest

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -m "not slow"

# ruff (pyflakes, pycodestyle, bugbear) and mypy (strict for om_core, default for bench; see pyproject.toml)
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy om_core bench

# the long fault trial (kill -9 at named moments, 20%/40% HTTP faults, bad state; scripts/soak.py): not part of `make test`
soak: $(TEST_STAMP)
	$(BIN)/python scripts/soak.py

perf: $(STAMP)
	$(BIN)/ombench perf

report: $(STAMP)
	$(BIN)/ombench report --db results/bench.duckdb --out results/report

clean-results:
	rm -rf results/* outputs multirun
