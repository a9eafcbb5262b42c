"""The response template saved with a trained model (diaforge/format/response_template.py) parses
what the model was trained to write exactly as the toolkit's own parser does.

Parity: every assistant turn of the bundled corpus and of the held-out benchmark, rendered as
training renders its target (prompt mode, thought kept and thought dropped) and ended by the
end-of-turn token, goes through transformers' `parse_response` with the template, with
``prefix=""`` and with the turn's rendered prompt as the prefix, and through `parse_assistant`;
thought, call names, argument dicts and reply text must be equal on every turn. Only what
`parse_assistant` reads as well-formed is compared (malformed output is a gap of the template
language, listed in the module's docstring); every rendered turn is well-formed, which is
checked too, so no turn is left out silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from diaforge.format import (
    PromptFormat,
    attach_response_template,
    parse_assistant,
    render_assistant,
    response_template_for,
)
from diaforge.schema import load_dialogues
from tests._repo import ROOT

pytest.importorskip("transformers.utils.chat_parsing")
from transformers.utils.chat_parsing.response_parser import ResponseParser, parse_response  # noqa: E402

CORPORA = {
    "dialogues_small": ROOT / "tests" / "fixtures" / "dialogues_small.jsonl",
    "diabench_heldout_v1": ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl",
}
EOT = "<|im_end|>"


@pytest.fixture(scope="module")
def tokenizer():
    from diaforge.train.modeling import build_tiny_tokenizer

    return build_tiny_tokenizer([], vocab_size=300)


def _toolkit_view(text: str) -> dict[str, Any]:
    parsed = parse_assistant(text)
    assert parsed.kind != "malformed", (parsed.reason, text[:200])
    return {
        "thought": parsed.thought or None,
        "calls": [(call.name, call.args) for call in parsed.tool_calls],
        "content": parsed.content,
    }


def _template_view(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls") or []
    assert all(call["type"] == "function" for call in calls)
    return {
        "thought": message.get("reasoning_content"),
        "calls": [(call["function"]["name"], call["function"]["arguments"]) for call in calls],
        "content": message.get("content", ""),
    }


def _streamed(text: str, template: dict[str, Any], prefix: str, chunk: int = 5) -> dict[str, Any]:
    parser = ResponseParser(template, prefix=prefix)
    for i in range(0, len(text), chunk):
        parser.feed(text[i : i + chunk])
    return parser.finalize()[0]


@pytest.mark.parametrize("keep", [True, False], ids=["thought-kept", "thought-dropped"])
@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_parity_on_every_assistant_turn(corpus: str, keep: bool, tokenizer) -> None:
    fmt = PromptFormat(target_reasoning="keep" if keep else "drop")
    template = attach_response_template(tokenizer, fmt)
    assert template is not None and template["start_anchor"] == "<|im_start|>assistant\n"
    matched = total = calls = replies = 0
    mismatches = []
    for dialogue in load_dialogues(CORPORA[corpus]):
        for index, turn in enumerate(dialogue.turns):
            if turn.role != "assistant":
                continue
            total += 1
            target = fmt.target_text(turn)
            assert target == render_assistant(turn, include_thought=keep)
            written = target + EOT  # what the model writes: the target and its end-of-turn token
            prompt = tokenizer.apply_chat_template(
                fmt.messages(dialogue, upto=index), tokenize=False, add_generation_prompt=True
            )
            want = _toolkit_view(target)
            got = [
                _template_view(parse_response(written, template, prefix="")),
                _template_view(parse_response(written, template, prefix=prompt)),
                _template_view(tokenizer.parse_response(written, prefix=prompt)),
            ]
            if index % 3 == 0:  # streaming, in small chunks, on a third of the turns (time)
                got.append(_template_view(_streamed(written, template, prompt)))
            if all(view == want for view in got):
                matched += 1
                calls += bool(want["calls"])
                replies += not want["calls"]
            else:
                mismatches.append((dialogue.id, index, want, got))
    print(
        f"{corpus} thought {'kept' if keep else 'dropped'}: {matched}/{total} turns matched "
        f"({calls} call turns, {replies} replies)"
    )
    assert total > 0 and calls > 0 and replies > 0
    assert not mismatches, mismatches[:3]
    assert matched == total


def test_special_tokens_after_the_turn_are_not_content(tokenizer) -> None:
    template = attach_response_template(tokenizer, PromptFormat())
    reply = parse_response(
        "<think>\nAsk.\n</think>\nWhich city?<|im_end|>\n<|endoftext|>", template, prefix=""
    )
    assert reply == {"role": "assistant", "reasoning_content": "Ask.", "content": "Which city?"}
    call = parse_response(
        '[{"name": "f", "args": {"a": [1, {"b": null}]}}]<|im_end|><|pad|>', template, prefix=""
    )
    assert call["tool_calls"] == [
        {"type": "function", "function": {"name": "f", "arguments": {"a": [1, {"b": None}]}}}
    ]
    assert "content" not in call


def test_a_reply_with_brackets_inside_stays_a_reply(tokenizer) -> None:
    template = attach_response_template(tokenizer, PromptFormat())
    for text in ("[1] First, the date.", "Use {name} here", 'Call it like [{"name": "f"}] later'):
        assert parse_response(text, template, prefix="")["content"] == text


def test_native_mode_has_no_template_and_leaves_the_tokenizers_own(tokenizer) -> None:
    assert response_template_for(PromptFormat(prompt_mode="native")) is None
    tokenizer.response_template = own = {"fields": {"content": {}}}
    assert attach_response_template(tokenizer, PromptFormat(prompt_mode="native")) is None
    assert tokenizer.response_template is own
    tokenizer.response_template = None


def test_the_template_round_trips_through_save_pretrained(tokenizer, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    fmt = PromptFormat(eot_token="<|im_end|>")
    template = attach_response_template(tokenizer, fmt)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.response_template == template
    text = '<think>\nAll known.\n</think>\n[{"name": "get_weather", "args": {"city": "Oslo"}}]<|im_end|>'
    prompt = loaded.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    assert loaded.parse_response(text, prefix=prompt) == {
        "role": "assistant",
        "reasoning_content": "All known.",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
        ],
    }
