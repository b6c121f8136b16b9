# Provenance: `make run` starts the product on its embedded default, `make test` runs the suite.
# Both set up everything they need on a fresh Debian machine (apt + a local .venv).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Torch with 2 threads is ~3x slower than with 1 on the 2-core machines: scale with processes.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export PROVENANCE_DATA_DIR ?= $(CURDIR)/var
export VLLM_CPU_KVCACHE_SPACE ?= 1
export VLLM_CACHE_ROOT ?= $(CURDIR)/var/vllm-cache
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
export PYTHONUNBUFFERED ?= 1

PYTEST_ARGS ?=

.PHONY: run test bench lint setup system-deps clean

setup: system-deps $(STAMP)
	@$(PY) -m provenance.i18n

system-deps:
	@bash scripts/install-system-deps.sh

$(STAMP): pyproject.toml scripts/install-python-deps.sh
	@bash scripts/install-python-deps.sh $(VENV)
	@touch $@

# The provenance suite runs a second time on a throwaway PostgreSQL server (the production
# database); the runner's tests (tests/provenance/runner), the generator's in the playground
# and the browser tests, which do not depend on it, run once.
PG_SKIP := --ignore=tests/provenance/runner --ignore=tests/provenance/playground/test_embedded.py

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)
	PROVENANCE_TEST_DB=postgresql $(PY) -m pytest tests/provenance -m "not browser" $(PG_SKIP) $(PYTEST_ARGS)

run: setup
	$(PY) -m provenance.runner.embedded

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

LINT_PATHS := detector kernels generator provenance tests benchmarks

lint: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) var .pytest_cache
