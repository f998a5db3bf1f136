# The two commands a newcomer needs: `make bench` (main job, offline engine, no keys) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: bench test perf report clean-results

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

test: $(TEST_STAMP)
	$(BIN)/python -m pytest

perf: $(STAMP)
	$(BIN)/ombench perf

report: $(STAMP)
	$(BIN)/ombench report --db results/bench.duckdb --out results/report

clean-results:
	rm -rf results/* outputs multirun
