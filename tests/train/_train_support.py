"""Constants shared by the training tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from _repo import FIXTURES

DIALOGUES = FIXTURES / "dialogues_small.jsonl"
TEMPLATES = FIXTURES / "chat_templates"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Per template: the end-of-turn token, whether content is trimmed, and the special tokens to add
# to a tokenizer that lacks them.
TEMPLATE_SPECS = {
    "chatml": {"eot": "<|im_end|>", "trim": False, "bos": None, "extra": []},
    "llama3": {
        "eot": "<|eot_id|>",
        "trim": True,
        "bos": "<|begin_of_text|>",
        "extra": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    },
    "gemma": {
        "eot": "<end_of_turn>",
        "trim": True,
        "bos": "<bos>",
        "extra": ["<start_of_turn>", "<end_of_turn>"],
    },
}
