"""The vLLM backend (`diaforge.llm.vllm_backend`) on a stand-in `LLM`: each conversation's own tools
reach the chat template with that conversation only, and the replies come back in order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from diaforge.llm.base import GenerationRequest
from diaforge.llm.vllm_backend import VLLMBackend, group_by_tools


class FakeLLM:
    """Records each `chat` call and answers every conversation with its last user message."""

    def __init__(self, **kwargs: Any) -> None:
        self.built = kwargs
        self.calls: list[dict[str, Any]] = []

    def chat(self, conversations: list[list[dict]], params: Any, **kwargs: Any) -> list[Any]:
        self.calls.append({"conversations": conversations, "params": params, **kwargs})
        return [
            SimpleNamespace(outputs=[SimpleNamespace(text=f"re: {c[-1]['content']}", finish_reason="stop")])
            for c in conversations
        ]


def _tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }


def test_groups_keep_first_appearance_order() -> None:
    a, b = [_tool("a")], [_tool("b")]
    assert group_by_tools([a, b, a, None, b]) == [(a, [0, 2]), (b, [1, 4]), (None, [3])]


def test_each_conversation_gets_its_own_tools() -> None:
    backend = VLLMBackend("base", adapter="adapter", max_tokens=7, llm_factory=FakeLLM)
    a, b = [_tool("a")], [_tool("b")]
    convs = [[{"role": "user", "content": str(i)}] for i in range(3)]
    replies = backend.generate_batch([GenerationRequest(c, t) for c, t in zip(convs, [a, b, a], strict=True)])
    assert [r.text for r in replies] == ["re: 0", "re: 1", "re: 2"]
    assert all(r.finish_reason == "stop" for r in replies)
    calls = backend.llm.calls
    assert [(c["tools"], [m[-1]["content"] for m in c["conversations"]]) for c in calls] == [
        (a, ["0", "2"]),
        (b, ["1"]),
    ]
    assert all(c["lora_request"]["lora_path"] == "adapter" for c in calls)
    assert calls[0]["params"] == [{"temperature": 0.0, "max_tokens": 7}] * 2
    assert backend.llm.built["enable_lora"] is True


def test_no_tools_sends_none() -> None:
    backend = VLLMBackend("base", llm_factory=FakeLLM)
    replies = backend.generate_batch([GenerationRequest([{"role": "user", "content": "x"}])])
    assert replies[0].text == "re: x" and "tools" not in backend.llm.calls[0]
    assert "lora_request" not in backend.llm.calls[0]


def test_a_requests_own_budget_and_temperature_reach_its_sampling_settings() -> None:
    backend = VLLMBackend("base", max_tokens=7, llm_factory=FakeLLM)
    backend.generate_batch(
        [GenerationRequest([{"role": "user", "content": "x"}], temperature=0.5, max_tokens=3)]
    )
    assert backend.llm.calls[0]["params"] == [{"temperature": 0.5, "max_tokens": 3}]
