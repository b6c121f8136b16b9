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

.PHONY: run test bench bench-quick lint setup system-deps clean compose-test

setup: system-deps $(STAMP)
	@$(PY) -m provenance.i18n

system-deps:
	@bash scripts/install-system-deps.sh

$(STAMP): pyproject.toml scripts/install-python-deps.sh
	@bash scripts/install-python-deps.sh $(VENV)
	@touch $@

# Two pytest runs side by side, each over two xdist workers, on its own free ports and
# temporary directories: the whole suite on SQLite, and the web product's tests again on a
# throwaway PostgreSQL server per worker (the production database), whose output is kept in
# $(PG_LOG) and shown after. The web product's tests form two shards, each whole on one worker
# with its own Redis, Celery worker, Chromium and secret scan (tests/conftest.py). Tests that
# do not depend on the database run once: the runner's, the browser's, the two-instance peers'
# (their own SQLite databases) and SmolLM2's forward passes (marker `model`). The embedded
# model is converted once, before the runs that read it. docs/testing.md.
PG_SKIP := --ignore=tests/provenance/runner --ignore=tests/provenance/playground/test_embedded.py \
	--ignore=tests/provenance/public/test_peers.py
PG_LOG := var/test-postgresql.log
XDIST := -n 2 --dist loadgroup

test: setup
	@mkdir -p $(dir $(PG_LOG))
	@$(PY) -c "from generator.models import embedded_model_dir; embedded_model_dir()"
	@PROVENANCE_TEST_DB=postgresql $(PY) -m pytest tests/provenance -m "not browser and not model" \
		$(PG_SKIP) $(XDIST) \
		$(PYTEST_ARGS) >$(PG_LOG) 2>&1 & pg=$$!; \
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS); main=$$?; \
	wait $$pg; postgresql=$$?; \
	echo "== the web product's tests on PostgreSQL ($(PG_LOG)):"; cat $(PG_LOG); \
	echo "== SQLite pass: exit $$main; PostgreSQL pass: exit $$postgresql"; \
	test $$main -eq 0 && test $$postgresql -eq 0

# The compose deployment built from this checkout and exercised from outside (docs/compose.md):
# a Docker engine started if none runs (root), stand-in base images where no registry is
# reachable, then scripts/compose_test.py's steps, each with its figure.
compose-test: setup
	@$(PY) scripts/compose_test.py

run: setup
	$(PY) -m provenance.runner.embedded

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The CPU per check of each path (inline, queued, audit, public) next to scoring's own, in one
# process: a change that doubles one shows in review (docs/benchmarks.md).
bench-quick: setup
	@$(PY) benchmarks/bench_load.py --quick

LINT_PATHS := detector kernels generator provenance tests benchmarks

lint: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) var .pytest_cache
