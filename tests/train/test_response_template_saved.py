"""The response template of the prompt format is in the tokenizer config of every model folder the
toolkit writes: a merged model gets it even when the adapter folder has no tokenizer of its own
(the base's tokenizer is saved), from the adapter's prompt_format.json. Nothing is trained here:
the adapter is a fresh LoRA."""

from __future__ import annotations

from pathlib import Path

from diaforge.format import PromptFormat, response_template_for
from diaforge.format.response_template import end_tokens_of, generation_prompt


def test_merge_writes_the_response_template(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from diaforge.train.merge import merge
    from diaforge.train.modeling import build_tiny_model

    base_dir = build_tiny_model(tmp_path / "base", vocab_size=300, hidden_size=16, num_layers=1, num_heads=2)
    base_tokenizer = AutoTokenizer.from_pretrained(base_dir)
    assert getattr(base_tokenizer, "response_template", None) is None
    model = AutoModelForCausalLM.from_pretrained(base_dir)
    adapter = tmp_path / "adapter"
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(adapter)
    fmt = PromptFormat(target_reasoning="drop", tool_style="compact")
    fmt.save(adapter)

    out = merge(adapter, tmp_path / "merged", base=str(base_dir), progress=False)

    saved = AutoTokenizer.from_pretrained(out)
    assert saved.response_template == response_template_for(
        fmt, start_anchor=generation_prompt(saved), end_tokens=end_tokens_of(saved, fmt)
    )
    assert saved.response_template["start_anchor"] == "<|im_start|>assistant\n"
    written = '[{"name": "get_weather", "args": {"city": "Oslo"}}]<|im_end|>'
    assert saved.parse_response(written, prefix="")["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    ]
