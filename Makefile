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

# Two pytest processes side by side, each on its own free ports and temporary directories:
# the whole suite on SQLite over two xdist workers (the web product's tests together on one,
# for their shared Redis, Celery worker, Chromium and secret scan; everything else on the
# other: tests/conftest.py), and the web product's tests again on a throwaway PostgreSQL
# server (the production database), whose output is kept in $(PG_LOG) and shown after. The
# runner and browser tests, which do not depend on the database, run once. docs/testing.md.
PG_SKIP := --ignore=tests/provenance/runner --ignore=tests/provenance/playground/test_embedded.py
PG_LOG := var/test-postgresql.log
XDIST := -n 2 --dist loadgroup

test: setup
	@mkdir -p $(dir $(PG_LOG))
	@PROVENANCE_TEST_DB=postgresql $(PY) -m pytest tests/provenance -m "not browser" $(PG_SKIP) \
		$(PYTEST_ARGS) >$(PG_LOG) 2>&1 & pg=$$!; \
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS); main=$$?; \
	wait $$pg; postgresql=$$?; \
	echo "== the web product's tests on PostgreSQL ($(PG_LOG)):"; cat $(PG_LOG); \
	echo "== SQLite pass: exit $$main; PostgreSQL pass: exit $$postgresql"; \
	test $$main -eq 0 && test $$postgresql -eq 0

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
