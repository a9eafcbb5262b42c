"""Tests for diaforge.format: the prompt-mode text format, its parser, and chat-message export."""

from __future__ import annotations

import dataclasses
import json
import math
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from diaforge.format import (
    HISTORY_REASONING,
    PROMPT_MODES,
    ROW_KEYS,
    ParsedMessage,
    PromptFormat,
    assistant_message,
    export_format,
    export_rows_jsonl,
    native_system_prompt,
    openai_tools,
    parse_assistant,
    parse_openai_message,
    prompt_completion_rows,
    render_assistant,
    system_prompt,
    to_chat_messages,
)
from diaforge.schema import Dialogue, Persona, Tool, ToolCall, Turn

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FIGURE_4 = (
    '[{"name": "fn_1126_cloud_transport_management", '
    '"args": {"nodeId": 437292, "transportRequestId": 957841}}]'
)


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


def _tools() -> list[Tool]:
    return [
        Tool(
            name="fn_1126_cloud_transport_management",
            description="Retrieve the action log of a transport request on a node.",
            parameters={
                "type": "object",
                "properties": {
                    "nodeId": {"type": "int", "description": "Transport node"},
                    "transportRequestId": {"type": "int", "description": "Transport request"},
                },
                "required": ["nodeId", "transportRequestId"],
            },
        ),
        Tool(
            name="track_logistics_order",
            description="Show the delivery status of a logistics order.",
            parameters={
                "type": "object",
                "properties": {"orderId": {"type": "str", "description": "Order number"}},
                "required": ["orderId"],
            },
        ),
        Tool(name="list_warehouses", description="List all warehouses."),
    ]


def _dialogue() -> Dialogue:
    return Dialogue(
        id="d-1",
        seed_tool="fn_1126_cloud_transport_management",
        candidate_tools=_tools(),
        persona=Persona(id="p-1", description="A logistics operations manager"),
        goal="review transport actions",
        gold_args={"nodeId": 437292, "transportRequestId": 957841},
        turns=[
            Turn(role="user", content="I need help with our transport processes."),
            Turn(
                role="assistant",
                thought="Several tools fit; ask what they want to monitor.",
                content="Do you want to track orders or review transport actions?",
                phase="tool_selection",
                act="seek_info",
                action="clarify",
            ),
            Turn(role="user", content="Review actions. Node 437292, request 957841."),
            Turn(
                role="assistant",
                thought="The transport tool; both arguments are known.",
                tool_calls=[
                    ToolCall(
                        name="fn_1126_cloud_transport_management",
                        args={"nodeId": 437292, "transportRequestId": 957841},
                    )
                ],
                phase="argument_completion",
                act="function_calling",
                action="call",
            ),
        ],
    )


# --------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------

FRAGMENTS = [
    "<think>",
    "</think>",
    "<think",
    "\n",
    " ",
    "[",
    "]",
    "{",
    "}",
    '{"name":',
    '"name"',
    '"args"',
    '"arguments"',
    ":",
    ",",
    '"f"',
    "{}",
    "[]",
    "null",
    "1",
    "1e999",
    "NaN",
    '"',
    "\\",
    "```",
    "```json\n",
    "\n```",
    "hello",
    "\x00",
    "\ufffd",
]

fragment_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=40).map("".join)


def _check_invariants(text: str, parsed: ParsedMessage) -> None:
    assert isinstance(parsed, ParsedMessage)
    assert parsed.kind in ("reply", "tool_calls", "malformed")
    assert parsed.raw == text
    assert (parsed.reason is None) == (parsed.kind != "malformed")
    if parsed.kind != "reply":
        assert parsed.content == ""
    else:
        assert parsed.content and parsed.content == parsed.content.strip()
    assert bool(parsed.tool_calls) == (parsed.kind == "tool_calls")
    assert parsed.thought is None or parsed.thought == parsed.thought.strip()
    turn = parsed.to_turn()
    assert turn.role == "assistant"


@PROPERTY
@given(st.text())
def test_parse_never_raises_on_any_text(text: str) -> None:
    _check_invariants(text, parse_assistant(text))


@PROPERTY
@given(fragment_text)
def test_parse_never_raises_on_format_fragments(text: str) -> None:
    _check_invariants(text, parse_assistant(text))


@PROPERTY
@given(st.sampled_from(["", "<think>x</think>", "</think>"]), fragment_text)
def test_parse_never_raises_after_think_block(prefix: str, text: str) -> None:
    _check_invariants(prefix + text, parse_assistant(prefix + text))


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,30}", fullmatch=True)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=16,
)
args_dicts = st.dictionaries(st.text(max_size=12), json_values, max_size=5)
calls = st.builds(ToolCall, name=names, args=args_dicts)
thoughts = st.none() | st.text().map(str.strip).filter(lambda t: "</think>" not in t)


def _renders_unambiguously(content: str) -> bool:
    return (
        bool(content)
        and content == content.strip()
        and not content.startswith(("[", "{", "```"))
        and "<think>" not in content
        and "</think>" not in content
        and '"name"' not in content  # no embedded call JSON
    )


@PROPERTY
@given(thought=thoughts, content=st.text(min_size=1).map(str.strip))
def test_reply_round_trip(thought: str | None, content: str) -> None:
    assume(_renders_unambiguously(content))
    turn = Turn(role="assistant", thought=thought, content=content)
    parsed = parse_assistant(render_assistant(turn))
    assert parsed.kind == "reply", parsed.reason
    assert parsed.thought == thought
    assert parsed.content == content
    assert parsed.to_turn() == turn


@PROPERTY
@given(thought=thoughts, tool_calls=st.lists(calls, min_size=1, max_size=4))
def test_tool_call_round_trip(thought: str | None, tool_calls: list[ToolCall]) -> None:
    turn = Turn(role="assistant", thought=thought, tool_calls=tool_calls)
    parsed = parse_assistant(render_assistant(turn))
    assert parsed.kind == "tool_calls", parsed.reason
    assert parsed.thought == thought
    assert parsed.tool_calls == tool_calls
    assert parsed.to_turn() == turn


@PROPERTY
@given(thought=thoughts, tool_calls=st.lists(calls, min_size=1, max_size=3))
def test_history_without_thought_parses_without_thought(
    thought: str | None, tool_calls: list[ToolCall]
) -> None:
    turn = Turn(role="assistant", thought=thought, tool_calls=tool_calls)
    text = render_assistant(turn, include_thought=False)
    assert "<think>" not in text
    parsed = parse_assistant(text)
    assert parsed.kind == "tool_calls" and parsed.thought is None and parsed.tool_calls == tool_calls


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def test_render_reply_with_and_without_thought() -> None:
    turn = Turn(role="assistant", thought="need the id", content="Which order?")
    assert render_assistant(turn) == "<think>\nneed the id\n</think>\nWhich order?"
    assert render_assistant(turn, include_thought=False) == "Which order?"
    assert render_assistant(Turn(role="assistant", content="Hi")) == "Hi"


def test_render_figure_4_call_exactly() -> None:
    turn = _dialogue().turns[3]
    assert render_assistant(turn, include_thought=False) == FIGURE_4
    assert render_assistant(turn).endswith("</think>\n" + FIGURE_4)


def test_render_keeps_non_ascii_and_key_order() -> None:
    turn = Turn(role="assistant", tool_calls=[ToolCall(name="f", args={"city": "Zürich", "a": 1})])
    assert render_assistant(turn) == '[{"name": "f", "args": {"city": "Zürich", "a": 1}}]'


def test_render_escapes_think_tags_inside_strings() -> None:
    turn = Turn(role="assistant", tool_calls=[ToolCall(name="f", args={"note": "x</think>y"})])
    text = render_assistant(turn)
    assert "</think>" not in text
    assert parse_assistant(text).tool_calls == turn.tool_calls


def test_render_never_raises_on_non_json_values() -> None:
    import datetime

    turn = Turn(role="assistant", tool_calls=[ToolCall(name="f", args={"d": datetime.date(2024, 1, 2)})])
    assert "2024-01-02" in render_assistant(turn)


# --------------------------------------------------------------------------------------------
# Parsing: one test per rule
# --------------------------------------------------------------------------------------------


def test_parse_figure_4_call_with_think_block() -> None:
    parsed = parse_assistant("<think> … </think> " + FIGURE_4)
    assert parsed.kind == "tool_calls"
    assert parsed.thought == "…"
    assert parsed.tool_calls == [
        ToolCall(
            name="fn_1126_cloud_transport_management", args={"nodeId": 437292, "transportRequestId": 957841}
        )
    ]
    assert parsed.content == "" and parsed.reason is None


def test_parse_plain_reply() -> None:
    parsed = parse_assistant("  Could you give me the order number?\n")
    assert parsed.kind == "reply"
    assert parsed.content == "Could you give me the order number?"
    assert parsed.thought is None
    assert parsed.raw == "  Could you give me the order number?\n"


def test_parse_think_without_newlines_and_leading_whitespace() -> None:
    parsed = parse_assistant("\n  <think>short</think>Which node?")
    assert (parsed.kind, parsed.thought, parsed.content) == ("reply", "short", "Which node?")


def test_parse_unterminated_think_block() -> None:
    parsed = parse_assistant("<think>\nI should call the tool")
    assert parsed.kind == "malformed"
    assert parsed.reason == "unterminated think block"
    assert parsed.thought == "I should call the tool"


def test_parse_stray_closing_tag_means_thought_before_it() -> None:
    parsed = parse_assistant("the template opened the tag\n</think>\n" + FIGURE_4)
    assert parsed.kind == "tool_calls"
    assert parsed.thought == "the template opened the tag"
    parsed = parse_assistant("</think>Hello")
    assert (parsed.kind, parsed.thought, parsed.content) == ("reply", "", "Hello")


def test_parse_think_block_not_first() -> None:
    parsed = parse_assistant("Hello <think>x</think> there")
    assert parsed.kind == "malformed"
    assert parsed.reason == "think block does not start the message"


def test_parse_think_tag_in_reply() -> None:
    assert parse_assistant("<think>a</think> b </think> c").reason == "think tag inside the reply"
    assert parse_assistant("<think>a</think> b <think> c").reason == "think tag inside the reply"
    assert parse_assistant("Hello <think> there").reason == "think tag inside the reply"


@pytest.mark.parametrize("text", ["", "   ", "<think>all thought</think>", "<think>x</think>\n  \n"])
def test_parse_empty_reply(text: str) -> None:
    parsed = parse_assistant(text)
    assert parsed.kind == "malformed" and parsed.reason == "empty reply"


def test_parse_empty_reply_keeps_thought() -> None:
    assert parse_assistant("<think>all thought</think>").thought == "all thought"


def test_parse_fenced_json_block() -> None:
    parsed = parse_assistant("<think>ok</think>\n```json\n" + FIGURE_4 + "\n```")
    assert parsed.kind == "tool_calls" and parsed.tool_calls[0].args["nodeId"] == 437292
    parsed = parse_assistant("```\n" + FIGURE_4 + "\n```")
    assert parsed.kind == "tool_calls"


def test_parse_fence_problems() -> None:
    assert parse_assistant("```json\n" + FIGURE_4).reason == "unterminated code fence"
    assert parse_assistant("```json\n" + FIGURE_4 + "\n``` done").reason == "tool-call list mixed with prose"
    assert parse_assistant('```json\n[{"name": \n```').reason.startswith("invalid JSON in tool-call list")


def test_parse_code_block_in_other_language_is_a_reply() -> None:
    parsed = parse_assistant("```python\nprint('hi')\n```")
    assert parsed.kind == "reply"


def test_parse_single_call_object() -> None:
    parsed = parse_assistant('{"name": "list_warehouses", "args": {}}')
    assert parsed.kind == "tool_calls"
    assert parsed.tool_calls == [ToolCall(name="list_warehouses", args={})]


def test_parse_several_calls() -> None:
    parsed = parse_assistant('[{"name": "a", "args": {"x": 1}}, {"name": "b", "args": {}}]')
    assert [c.name for c in parsed.tool_calls] == ["a", "b"]


def test_parse_arguments_alias_and_json_string_arguments() -> None:
    parsed = parse_assistant('[{"name": "a", "arguments": {"x": 1}}]')
    assert parsed.tool_calls == [ToolCall(name="a", args={"x": 1})]
    parsed = parse_assistant('[{"name": "a", "arguments": "{\\"x\\": [1, 2]}"}]')
    assert parsed.tool_calls == [ToolCall(name="a", args={"x": [1, 2]})]


def test_parse_extra_keys_in_call_are_ignored() -> None:
    parsed = parse_assistant('[{"id": "c1", "name": "a", "args": {}}]')
    assert parsed.kind == "tool_calls"


def test_parse_empty_list() -> None:
    parsed = parse_assistant("<think>nothing to call</think>[]")
    assert parsed.kind == "malformed" and parsed.reason == "empty tool-call list"
    assert parsed.thought == "nothing to call"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[{"name": "a", "args": {}}, {"args": {}}]', "call 2 has no 'name'"),
        ('[{"name": "a"}]', "call 1 has no 'args'"),
        ('[{"name": 3, "args": {}}]', "call 1 has a non-string 'name'"),
        ('[{"name": "  ", "args": {}}]', "call 1 has an empty 'name'"),
        ('[{"name": "a", "args": [1]}]', "call 1 has 'args' that is not an object"),
        ('[{"name": "a", "arguments": "[1]"}]', "call 1 has 'arguments' that is not an object"),
        ('[{"name": "a", "args": {}, "arguments": {}}]', "call 1 has both 'args' and 'arguments'"),
        ('[{"name": "a", "args": {}}, 7]', "call 2 is not an object"),
        ("[1, 2]", "call 1 is not an object"),
        ('{"answer": "yes"}', "call 1 has no 'name'"),
    ],
)
def test_parse_wrong_shape_reasons(text: str, reason: str) -> None:
    parsed = parse_assistant(text)
    assert parsed.kind == "malformed"
    assert parsed.reason == reason


def test_parse_arguments_string_with_bad_json() -> None:
    parsed = parse_assistant('[{"name": "a", "arguments": "{x: 1}"}]')
    assert parsed.kind == "malformed"
    assert parsed.reason.startswith("call 1 has 'arguments' that is not valid JSON")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ('[{"name": "a" "args": {}}]', "Expecting ',' delimiter"),
        ('[{"name": "a", "args": {}}', "Expecting ',' delimiter"),
        ("[{'name': 'a', 'args': {}}]", "Expecting property name enclosed in double quotes"),
        ('{"name": "a", "args": {', "Expecting property name enclosed in double quotes"),
        ('[{"name": "a", "args": {"x": NaN}}]', "NaN is not valid JSON"),
    ],
)
def test_parse_invalid_json(text: str, detail: str) -> None:
    parsed = parse_assistant(text)
    assert parsed.kind == "malformed"
    assert parsed.reason == f"invalid JSON in tool-call list: {detail}"


def test_parse_prose_then_calls_is_mixed() -> None:
    parsed = parse_assistant("<think>x</think>Sure, calling it now: " + FIGURE_4)
    assert parsed.kind == "malformed" and parsed.reason == "tool-call list mixed with prose"
    assert parsed.thought == "x"
    parsed = parse_assistant('Here you go:\n```json\n{"name": "a", "args": {}}\n```')
    assert parsed.reason == "tool-call list mixed with prose"


def test_parse_calls_then_prose_is_mixed() -> None:
    parsed = parse_assistant(FIGURE_4 + "\nLet me know if you need anything else.")
    assert parsed.kind == "malformed" and parsed.reason == "tool-call list mixed with prose"


@pytest.mark.parametrize(
    "text",
    [
        "[Draft] Could you share the node ID?",
        "[1] First, tell me the node. [2] Then the request.",
        "{placeholder} is not a value I can use; which order?",
        'Please name your report, e.g. {"title": "Q3"}.',
        "The list [a, b] has two entries.",
    ],
)
def test_parse_bracketed_prose_is_a_reply(text: str) -> None:
    parsed = parse_assistant(text)
    assert parsed.kind == "reply", parsed.reason
    assert parsed.content == text


def test_parse_truncated_call_start_is_malformed() -> None:
    assert parse_assistant("[").reason.startswith("invalid JSON in tool-call list")
    assert parse_assistant('[{"name": "fn_1126').reason.startswith("invalid JSON in tool-call list")


def test_parse_survives_pathological_inputs() -> None:
    deep_list = "[" * 100_000 + "]" * 100_000
    deep_args = '[{"name": "a", "args": ' + '{"k": ' * 50_000 + "1" + "}" * 50_000 + "}]"
    huge_number = '[{"name": "a", "args": {"n": ' + "9" * 10_000 + "}}]"
    for text in [
        deep_list,
        "[" * 100_000,
        deep_args,
        huge_number,
        "\x00\x01\x02\udcff" * 1000,
        "<think>" * 10_000,
        "</think>" * 10_000,
        "x " * 200_000 + FIGURE_4,
        '{"' * 50_000,
    ]:
        parsed = parse_assistant(text)
        assert parsed.kind in ("reply", "malformed", "tool_calls")
    assert parse_assistant(deep_list).reason.startswith("invalid JSON in tool-call list")
    assert parse_assistant(huge_number).kind == "malformed"


def test_parse_non_string_input() -> None:
    parsed = parse_assistant(None)  # type: ignore[arg-type]
    assert parsed.kind == "malformed" and parsed.raw == ""


def test_parse_never_evaluates_python(tmp_path) -> None:
    marker = tmp_path / "executed"
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    for text in [f"[{code}]", f'[{{"name": "a", "args": {code}}}]', f'{{"name": {code}}}', code]:
        assert parse_assistant(text).kind in ("reply", "malformed")
    assert not marker.exists()


# --------------------------------------------------------------------------------------------
# ParsedMessage.to_turn
# --------------------------------------------------------------------------------------------


def test_to_turn_for_each_kind() -> None:
    reply = parse_assistant("<think>t</think>Which node?").to_turn(phase="tool_selection", act="seek_info")
    assert reply == Turn(
        role="assistant", content="Which node?", thought="t", phase="tool_selection", act="seek_info"
    )
    call = parse_assistant(FIGURE_4).to_turn(action="call")
    assert call.tool_calls[0].name == "fn_1126_cloud_transport_management" and call.content == ""
    raw = "<think>t</think>[{"
    bad = parse_assistant(raw).to_turn(metadata={"sample": 3})
    assert bad.content == raw
    assert bad.thought == "t"
    assert bad.tool_calls is None
    assert bad.metadata["sample"] == 3
    assert bad.metadata["malformed"].startswith("invalid JSON in tool-call list")


# --------------------------------------------------------------------------------------------
# System prompts and tools
# --------------------------------------------------------------------------------------------


def test_system_prompt_is_deterministic_and_lists_every_tool() -> None:
    tools = _tools()
    first = system_prompt(tools)
    assert first == system_prompt(_tools())
    for tool in tools:
        assert f'"name": "{tool.name}"' in first
        assert json.dumps(tool.spec(), ensure_ascii=False) + "\n" in first + "\n"
    assert "<think>" in first and "</think>" in first
    assert '"args"' in first
    assert first.index(tools[0].name) < first.index(tools[1].name) < first.index(tools[2].name)


def test_system_prompt_extra_instructions() -> None:
    base = system_prompt(_tools())
    extra = system_prompt(_tools(), extra_instructions="Answer in French.")
    assert extra.startswith(base) and extra.endswith("Answer in French.")
    assert system_prompt(_tools(), extra_instructions="  ") == base
    assert system_prompt([]).strip()


def test_native_system_prompt() -> None:
    text = native_system_prompt()
    assert text == native_system_prompt()
    assert "fn_1126" not in text
    assert native_system_prompt("Be brief.").endswith("Be brief.")


def test_openai_tools_shape_and_independence() -> None:
    tools = _tools()
    specs = openai_tools(tools)
    assert [s["type"] for s in specs] == ["function"] * 3
    assert specs[0]["function"] == tools[0].spec()
    assert set(specs[0]["function"]) == {"name", "description", "parameters"}
    specs[0]["function"]["parameters"]["properties"].clear()
    assert tools[0].properties  # no aliasing into the Tool


# --------------------------------------------------------------------------------------------
# Chat messages
# --------------------------------------------------------------------------------------------


def test_constants() -> None:
    assert PROMPT_MODES == ("prompt", "native")
    assert HISTORY_REASONING == ("strip", "keep")


def test_to_chat_messages_prompt_mode_strip() -> None:
    dialogue = _dialogue()
    messages = to_chat_messages(dialogue)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert messages[0]["content"] == system_prompt(dialogue.candidate_tools)
    assert messages[2] == {"role": "assistant", "content": dialogue.turns[1].content}
    assert messages[4] == {"role": "assistant", "content": FIGURE_4}
    assert all("<think>" not in m["content"] for m in messages[1:])


def test_to_chat_messages_prompt_mode_keep_and_upto() -> None:
    dialogue = _dialogue()
    messages = to_chat_messages(dialogue, upto=3, history_reasoning="keep", system="SYS")
    assert messages[0] == {"role": "system", "content": "SYS"}
    assert len(messages) == 4
    assert messages[2]["content"] == render_assistant(dialogue.turns[1])
    assert messages[2]["content"].startswith("<think>\nSeveral tools fit")
    assert to_chat_messages(dialogue, upto=0) == [messages[0] | {"content": system_prompt(_tools())}]


def test_to_chat_messages_native_mode() -> None:
    dialogue = _dialogue()
    stripped = to_chat_messages(dialogue, prompt_mode="native")
    assert stripped[0]["content"] == native_system_prompt()
    assert stripped[2] == {"role": "assistant", "content": dialogue.turns[1].content}
    assert stripped[4] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "type": "function",
                "function": {
                    "name": "fn_1126_cloud_transport_management",
                    "arguments": {"nodeId": 437292, "transportRequestId": 957841},
                },
            }
        ],
    }
    kept = to_chat_messages(dialogue, prompt_mode="native", history_reasoning="keep", arguments_as="json")
    assert kept[2]["reasoning_content"] == dialogue.turns[1].thought
    assert kept[4]["reasoning_content"] == dialogue.turns[3].thought
    arguments = kept[4]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"nodeId": 437292, "transportRequestId": 957841}


def test_to_chat_messages_rejects_bad_options() -> None:
    dialogue = _dialogue()
    with pytest.raises(ValueError, match="mode"):
        to_chat_messages(dialogue, prompt_mode="chatml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="history_reasoning"):
        to_chat_messages(dialogue, history_reasoning="drop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="arguments_as"):
        to_chat_messages(dialogue, arguments_as="str")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="upto"):
        to_chat_messages(dialogue, upto=99)
    with pytest.raises(ValueError, match="upto"):
        to_chat_messages(dialogue, upto=-1)
    with pytest.raises(ValueError, match="mode"):
        assistant_message(dialogue.turns[1], prompt_mode="xml")  # type: ignore[arg-type]


def test_assistant_message_native_does_not_alias_args() -> None:
    turn = _dialogue().turns[3]
    message = assistant_message(turn, prompt_mode="native")
    message["tool_calls"][0]["function"]["arguments"]["nodeId"] = 0
    assert turn.tool_calls[0].args["nodeId"] == 437292


def test_assistant_message_native_round_trips_through_parse_openai_message() -> None:
    turn = _dialogue().turns[3]
    for arguments_as in ("dict", "json"):
        message = assistant_message(turn, prompt_mode="native", arguments_as=arguments_as)
        parsed = parse_openai_message(message)
        assert parsed.kind == "tool_calls"
        assert parsed.tool_calls == turn.tool_calls
        assert parsed.thought == turn.thought


# --------------------------------------------------------------------------------------------
# Native responses
# --------------------------------------------------------------------------------------------


def test_parse_openai_message_json_string_arguments() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "  both ids known ",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "fn_1126_cloud_transport_management",
                    "arguments": '{"nodeId": 437292, "transportRequestId": 957841}',
                },
            }
        ],
    }
    parsed = parse_openai_message(message)
    assert parsed.kind == "tool_calls"
    assert parsed.thought == "both ids known"
    assert parsed.tool_calls == [
        ToolCall(
            name="fn_1126_cloud_transport_management", args={"nodeId": 437292, "transportRequestId": 957841}
        )
    ]
    assert "fn_1126_cloud_transport_management" in parsed.raw


def test_parse_openai_message_dict_arguments_and_reasoning_alias() -> None:
    message = {
        "content": "",
        "reasoning": "thinking",
        "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {"x": 1}}}],
    }
    parsed = parse_openai_message(message)
    assert parsed.kind == "tool_calls" and parsed.tool_calls == [ToolCall(name="a", args={"x": 1})]
    assert parsed.thought == "thinking"


def test_parse_openai_message_object_with_attributes() -> None:
    function = SimpleNamespace(name="list_warehouses", arguments="")
    message = SimpleNamespace(
        content=None, tool_calls=[SimpleNamespace(id="c", type="function", function=function)]
    )
    parsed = parse_openai_message(message)
    assert parsed.kind == "tool_calls"
    assert parsed.tool_calls == [ToolCall(name="list_warehouses", args={})]
    assert parsed.thought is None


def test_parse_openai_message_sdk_object() -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "from the server",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"k": "v"}'}}
            ],
        }
    )
    parsed = parse_openai_message(message)
    assert parsed.kind == "tool_calls"
    assert parsed.tool_calls == [ToolCall(name="a", args={"k": "v"})]
    assert parsed.thought == "from the server"


def test_parse_openai_message_bad_arguments() -> None:
    message = {"content": None, "tool_calls": [{"function": {"name": "a", "arguments": "{oops"}}]}
    parsed = parse_openai_message(message)
    assert parsed.kind == "malformed"
    assert parsed.reason.startswith("call 1 has 'arguments' that is not valid JSON")
    message = {"content": None, "tool_calls": [{"function": {"arguments": "{}"}}]}
    assert parse_openai_message(message).reason == "call 1 has no 'name'"


def test_parse_openai_message_content_in_prompt_format() -> None:
    parsed = parse_openai_message({"role": "assistant", "content": "<think>x</think>\n" + FIGURE_4})
    assert parsed.kind == "tool_calls" and parsed.thought == "x"
    parsed = parse_openai_message({"content": "Which node?", "reasoning_content": "need node"})
    assert (parsed.kind, parsed.content, parsed.thought) == ("reply", "Which node?", "need node")
    parsed = parse_openai_message(
        {"content": [{"type": "text", "text": "Which "}, {"type": "text", "text": "node?"}]}
    )
    assert parsed.content == "Which node?"


def test_parse_openai_message_preamble_and_think_in_content() -> None:
    message = {
        "content": "<think>pick a</think>Calling it.",
        "tool_calls": [{"function": {"name": "a", "arguments": "{}"}}],
    }
    parsed = parse_openai_message(message)
    assert parsed.kind == "tool_calls" and parsed.thought == "pick a" and parsed.content == ""


def test_parse_openai_message_legacy_function_call() -> None:
    parsed = parse_openai_message({"content": None, "function_call": {"name": "a", "arguments": '{"x": 2}'}})
    assert parsed.tool_calls == [ToolCall(name="a", args={"x": 2})]


@pytest.mark.parametrize("message", [{}, None, 42, {"content": None}, {"tool_calls": 5}, SimpleNamespace()])
def test_parse_openai_message_never_raises(message: object) -> None:
    parsed = parse_openai_message(message)
    assert parsed.kind == "malformed"


# --------------------------------------------------------------------------------------------
# Hugging Face export
# --------------------------------------------------------------------------------------------


def test_native_rows_one_per_assistant_turn() -> None:
    dialogue = _dialogue()
    rows = prompt_completion_rows(dialogue)
    assert [r["id"] for r in rows] == ["d-1/1", "d-1/3"] and [r["final"] for r in rows] == [False, True]
    assert list(rows[0]) == [*ROW_KEYS, "tools"]
    assert rows[0]["tools"] == openai_tools(dialogue.candidate_tools)
    assert rows[0]["prompt"] == [
        {"role": "system", "content": native_system_prompt()},
        {"role": "user", "content": dialogue.turns[0].content},
    ]
    # The completion is the turn the model writes, thought included (target_reasoning keep) ...
    assert rows[0]["completion"][0]["reasoning_content"] == dialogue.turns[1].thought
    assert rows[1]["completion"][0]["tool_calls"][0]["function"]["name"] == dialogue.seed_tool
    # ... and earlier turns appear in the prompt without theirs (history_reasoning strip).
    assert "reasoning_content" not in rows[1]["prompt"][2]
    json.dumps(rows)  # plain JSON


def test_prompt_mode_rows_and_history_reasoning() -> None:
    dialogue = _dialogue()
    rows = prompt_completion_rows(dialogue, export_format("hf-prompt", target_reasoning="drop"))
    assert "tools" not in rows[0]  # the tools are in the system prompt already
    assert rows[1]["prompt"][0]["content"] == system_prompt(dialogue.candidate_tools)
    assert rows[1]["completion"] == [{"role": "assistant", "content": FIGURE_4}]
    assert rows[1]["prompt"][2]["content"] == dialogue.turns[1].content  # no earlier thought
    kept = prompt_completion_rows(dialogue, export_format("hf-prompt", history_reasoning="keep"))
    assert kept[1]["prompt"][2]["content"] == render_assistant(dialogue.turns[1])
    assert kept[1]["completion"][0]["content"] == render_assistant(dialogue.turns[3])
    compact = prompt_completion_rows(dialogue, export_format("hf-prompt", tool_style="compact"))
    assert compact[0]["prompt"][0]["content"] == system_prompt(dialogue.candidate_tools, tool_style="compact")


@pytest.mark.parametrize("name", ["hf", "hf-prompt"])
def test_export_format_records_the_reference_prompt_it_renders(name: str) -> None:
    """prompt_format.json holds the system prompt's text and hash, and that text renders the same
    rows as the built-in prompt."""
    fmt = export_format(name)
    assert fmt.system_prompt and fmt.as_dict()["system_prompt_sha256"]
    builtin = PromptFormat(prompt_mode=fmt.prompt_mode)
    for tool_style in ("json", "compact"):
        ours = dataclasses.replace(fmt, tool_style=tool_style)
        theirs = dataclasses.replace(builtin, tool_style=tool_style)
        assert ours.messages(_dialogue()) == theirs.messages(_dialogue())
    assert PromptFormat.from_dict(json.loads(json.dumps(fmt.as_dict()))) == fmt


def test_export_rows_jsonl(tmp_path) -> None:
    path = tmp_path / "out" / "hf.jsonl"
    fmt = export_format("hf-prompt")
    n = export_rows_jsonl([_dialogue(), _dialogue()], path, fmt)
    assert n == 4
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    assert json.loads(lines[1]) == json.loads(json.dumps(prompt_completion_rows(_dialogue(), fmt)[1]))


# --------------------------------------------------------------------------------------------
# A chat template consumes native messages
# --------------------------------------------------------------------------------------------

LLAMA_LIKE_TEMPLATE = """\
{{- bos_token -}}
{%- for message in messages -%}
<|start_header_id|>{{ message.role }}<|end_header_id|>

{% if message.role == 'system' -%}
{{ message.content }}
{%- if tools -%}
{{ "\n\nYou may call these functions:" }}
{%- for tool in tools %}{{ "\n" ~ (tool | tojson) }}{% endfor -%}
{%- endif %}
{%- elif message.role == 'assistant' -%}
{%- if message.reasoning_content is defined and message.reasoning_content -%}
<think>{{ message.reasoning_content }}</think>
{% endif -%}
{%- if message.tool_calls is defined and message.tool_calls -%}
{%- for call in message.tool_calls -%}
{"name": "{{ call.function.name }}", "parameters": \
{%- if call.function.arguments is string %} {{ call.function.arguments }}\
{%- else %} {{ call.function.arguments | tojson }}{% endif %}}
{%- endfor -%}
{%- else -%}
{{ message.content }}
{%- endif -%}
{%- else -%}
{{ message.content }}
{%- endif -%}
<|eot_id|>
{% endfor -%}
{%- if add_generation_prompt -%}
<|start_header_id|>assistant<|end_header_id|>

{% endif -%}
"""


@pytest.fixture(scope="module")
def llama_like_tokenizer():
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<|begin_of_text|>": 1, "<|eot_id|>": 2, "hello": 3}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", unk_token="<unk>"
    )
    tokenizer.chat_template = LLAMA_LIKE_TEMPLATE
    return tokenizer


@pytest.mark.parametrize("arguments_as", ["dict", "json"])
def test_chat_template_renders_native_messages(llama_like_tokenizer, arguments_as: str) -> None:
    dialogue = _dialogue()
    messages = to_chat_messages(
        dialogue, prompt_mode="native", history_reasoning="keep", arguments_as=arguments_as
    )
    text = llama_like_tokenizer.apply_chat_template(
        messages, tools=openai_tools(dialogue.candidate_tools), tokenize=False
    )
    assert isinstance(text, str)
    assert text.startswith("<|begin_of_text|><|start_header_id|>system")
    for tool in dialogue.candidate_tools:
        assert f'"name": "{tool.name}"' in text
    assert '{"name": "fn_1126_cloud_transport_management", "parameters":' in text
    call_line = next(line for line in text.splitlines() if line.startswith('{"name": "fn_1126'))
    payload = json.loads(call_line.removesuffix("<|eot_id|>"))
    assert payload["parameters"] == {"nodeId": 437292, "transportRequestId": 957841}
    assert "<think>Several tools fit" in text
    assert text.count("<|eot_id|>") == len(messages)

    prompt = llama_like_tokenizer.apply_chat_template(
        messages[:4], tools=openai_tools(dialogue.candidate_tools), tokenize=False, add_generation_prompt=True
    )
    assert prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_floats_round_trip_in_rendered_calls() -> None:
    values = [0.1, -0.0, 1e-310, 1.7976931348623157e308, 3.0]
    turn = Turn(role="assistant", tool_calls=[ToolCall(name="f", args={"v": values})])
    parsed = parse_assistant(render_assistant(turn))
    got = parsed.tool_calls[0].args["v"]
    assert all(
        math.copysign(1, a) == math.copysign(1, b) and a == b for a, b in zip(got, values, strict=True)
    )


def test_compact_tool_listing() -> None:
    from diaforge.format import compact_tool, tool_listing

    tool = Tool(
        name="set_priority",
        description="Sets the priority of a ticket.",
        parameters={
            "type": "object",
            "properties": {
                "ticket_id": {"type": "string", "pattern": "^T[0-9]{4}$"},
                "level": {"type": "string", "enum": ["low", "high"]},
                "due": {"type": "string", "format": "date"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["ticket_id", "level"],
        },
    )
    line = compact_tool(tool)
    assert line == (
        '- set_priority(ticket_id*: string, level*: "low"|"high", due: date, tags: array of string): '
        "Sets the priority of a ticket."
    )
    assert tool_listing([tool], "compact").endswith(line)
    assert len(tool_listing([tool], "compact")) < len(tool_listing([tool], "json"))
    assert compact_tool(tool) in system_prompt([tool], tool_style="compact")
    with pytest.raises(ValueError, match="tool_style"):
        tool_listing([tool], "yaml")
