# The two commands a newcomer needs: `make bench` (main job, offline engine, no keys) and `make test` (lint, types
# and the whole suite). `make test-fast` skips the tests marked slow (subprocesses, real-data sweeps): the edit loop.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: bench test test-fast lint perf report soak fault-trial clean-results conformance

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
	$(BIN)/mypy om_core bench conformance

# the long fault trial (kill -9 at named moments, 20%/40% HTTP faults, bad state; scripts/soak.py): not part of `make test`
soak: $(TEST_STAMP)
	$(BIN)/python scripts/soak.py

# the bad-input fault trial (issue 27): ~140 inputs a user types, each a clean one-line error with nothing written
# or a correct run (scripts/fault_trial.py): not part of `make test`
fault-trial: $(TEST_STAMP)
	nice -n 10 $(BIN)/python scripts/fault_trial.py

# Replay throughput (offline engine): the whole LongMemEval_S when the data is found (LONGMEMEVAL_DATA_DIR, else
# ../shared/data beside the checkout), then how OM's time grows with haystack size; a 10-question sample otherwise
# (downloaded from the hub). Figures and how to read them: docs/performance.md. Not part of `make test`.
PERF_DATA ?= $(or $(LONGMEMEVAL_DATA_DIR),$(wildcard ../shared/data))
perf: $(STAMP)
ifneq ($(PERF_DATA),)
	LONGMEMEVAL_DATA_DIR=$(abspath $(PERF_DATA)) $(BIN)/ombench perf --limit 0
	LONGMEMEVAL_DATA_DIR=$(abspath $(PERF_DATA)) $(BIN)/ombench perf --limit 3 --strategies om,om_m11,full_context --scaling 1,2,3,4
else
	$(BIN)/ombench perf
endif

# The conformance suite (docs/conformance.md): the real @mastra/memory 1.1.0 and 1.31.0 (npm ci from the committed
# lockfiles in conformance/mastra-*/; needs Node 20+ and npm) and om_core on the same LongMemEval question, against
# a local fake model. About 35 s for the oracle cases (+1 min for npm ci); CONFORMANCE_S=1 adds LongMemEval_S (3-7 min).
conformance: $(STAMP)
ifneq ($(PERF_DATA),)
	LONGMEMEVAL_DATA_DIR=$(abspath $(PERF_DATA)) $(BIN)/python -m conformance.run
else
	$(BIN)/python -m conformance.run
endif

report: $(STAMP)
	$(BIN)/ombench report --db results/bench.duckdb --out results/report

clean-results:
	rm -rf results/* outputs multirun
