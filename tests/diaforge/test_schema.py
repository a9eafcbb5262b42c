"""Tests for diaforge.schema: type normalisation, model validation, and JSONL in/out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.json_schema import normalise_parameters, normalise_type
from diaforge.jsonl import JsonlAppender, dump_record, iter_jsonl, read_jsonl, write_jsonl
from diaforge.schema import Dialogue, Persona, Tool, ToolCall, Turn, load_dialogues, save_dialogues


def _tool(name: str = "get_order", **props: dict) -> Tool:
    properties = props or {"order_id": {"type": "string", "description": "Order number"}}
    return Tool(
        name=name,
        description=f"{name} does something",
        parameters={"type": "object", "properties": properties, "required": list(properties)[:1]},
    )


def _dialogue(i: int = 0) -> Dialogue:
    return Dialogue(
        id=f"d-{i}",
        seed_tool="get_order",
        candidate_tools=[_tool("get_order"), _tool("cancel_order")],
        persona=Persona(id="p-1", description="A buyer in procurement", jargon=["PO", "GR/IR"]),
        goal="check an order",
        gold_args={"order_id": "PO-4471"},
        turns=[
            Turn(role="user", content="Where is my order?"),
            Turn(
                role="assistant",
                thought="which order?",
                content="Which order number?",
                phase="tool_selection",
            ),
            Turn(role="user", content="PO-4471"),
            Turn(
                role="assistant",
                thought="ready",
                tool_calls=[ToolCall(name="get_order", args={"order_id": "PO-4471"})],
                phase="argument_completion",
                act="function_calling",
                action="call",
            ),
        ],
    )


# --------------------------------------------------------------------------------------------
# Type normalisation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("dict", ("object", None)),
        ("float", ("number", None)),
        ("tuple", ("array", None)),
        ("date", ("string", "date")),
        ("datetime", ("string", "date-time")),
        ("any", (None, None)),
        ("Any", (None, None)),
        (" Integer ", ("integer", None)),
        ("str", ("string", None)),
        ("bool", ("boolean", None)),
        ("string", ("string", None)),
        (None, (None, None)),
    ],
)
def test_normalise_type(raw, expected) -> None:
    assert normalise_type(raw) == expected


def test_normalise_type_unknown_raises() -> None:
    with pytest.raises(ValueError, match="unknown type 'widget'"):
        normalise_type("widget")
    with pytest.raises(ValueError, match="must be a string"):
        normalise_type(3)


def test_tool_parameters_are_normalised_recursively() -> None:
    tool = Tool(
        name="book",
        parameters={
            "type": "dict",
            "properties": {
                "when": {"type": "date"},
                "amount": {"type": "float"},
                "anything": {"type": "any", "description": 5},
                "tags": {"type": "list", "items": {"type": "str"}},
                "address": {"type": "dict", "properties": {"zip": {"type": "int"}}},
                "maybe": {"type": ["str", "none"]},
            },
            "required": ["when"],
        },
    )
    props = tool.properties
    assert tool.parameters["type"] == "object"
    assert props["when"] == {"type": "string", "format": "date"}
    assert props["amount"]["type"] == "number"
    assert "type" not in props["anything"] and props["anything"]["description"] == "5"
    assert props["tags"]["items"]["type"] == "string"
    assert props["address"]["properties"]["zip"]["type"] == "integer"
    assert props["maybe"]["type"] == ["string", "null"]
    assert tool.required == ["when"]
    assert tool.param_base_type("when") == "date"
    assert tool.param_base_type("anything") == "any"
    assert tool.param_base_type("maybe") == "string"


def test_unknown_type_in_a_tool_names_the_parameter() -> None:
    with pytest.raises(ValidationError, match="parameter 'address.zip': unknown type 'zipcode'"):
        Tool(
            name="ship",
            parameters={
                "properties": {"address": {"type": "object", "properties": {"zip": {"type": "zipcode"}}}}
            },
        )


def test_required_naming_an_unknown_parameter_fails() -> None:
    with pytest.raises(ValueError, match="required names unknown parameters: ghost"):
        normalise_parameters(
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["ghost"]}
        )
    with pytest.raises(ValidationError, match="ghost"):
        Tool(name="t", parameters={"properties": {}, "required": ["ghost"]})


def test_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ValueError, match="parameters.type must be 'object'"):
        normalise_parameters({"type": "array"})
    with pytest.raises(ValueError, match="required must be a list"):
        normalise_parameters({"properties": {"a": {}}, "required": "a"})
    assert normalise_parameters(None) == {"type": "object", "properties": {}, "required": []}


def test_tool_name_must_be_clean() -> None:
    with pytest.raises(ValidationError):
        Tool(name=" padded ")
    with pytest.raises(ValidationError):
        Tool(name="")


def test_tool_spec_hides_metadata() -> None:
    tool = Tool(name="t", description="d", metadata={"split": "train"})
    assert tool.spec() == {"name": "t", "description": "d", "parameters": tool.parameters}
    assert tool.openai_spec() == {"type": "function", "function": tool.spec()}


# --------------------------------------------------------------------------------------------
# ToolCall, Turn, Dialogue
# --------------------------------------------------------------------------------------------


def test_tool_call_accepts_arguments_alias() -> None:
    assert ToolCall.model_validate({"name": "a", "arguments": {"x": 1}}) == ToolCall(name="a", args={"x": 1})
    assert ToolCall.model_validate({"name": "a"}).args == {}
    with pytest.raises(ValidationError):
        ToolCall.model_validate({"name": "a", "args": {}, "extra": 1})


@pytest.mark.parametrize("name", ["", " ", "\t\n"])
def test_tool_call_name_must_not_be_blank(name: str) -> None:
    with pytest.raises(ValidationError):
        ToolCall(name=name)


def test_user_turn_with_thought_or_calls_is_rejected() -> None:
    with pytest.raises(ValidationError, match="user turn cannot carry a thought"):
        Turn(role="user", content="hi", thought="secret")
    with pytest.raises(ValidationError, match="user turn cannot carry"):
        Turn(role="user", content="hi", tool_calls=[ToolCall(name="a")])


def test_empty_tool_call_list_becomes_none() -> None:
    assert Turn(role="assistant", content="x", tool_calls=[]).tool_calls is None


def test_dialogue_rejects_seed_tool_not_among_candidates() -> None:
    data = _dialogue().model_dump()
    data["seed_tool"] = "delete_order"
    with pytest.raises(ValidationError, match="seed_tool 'delete_order' is not among candidate_tools"):
        Dialogue.model_validate(data)


def test_dialogue_allows_no_seed_tool() -> None:
    data = _dialogue().model_dump()
    data["seed_tool"] = None
    dialogue = Dialogue.model_validate(data)
    assert dialogue.gold_tool is None


def test_dialogue_rejects_duplicate_candidate_names() -> None:
    data = _dialogue().model_dump()
    data["candidate_tools"].append(data["candidate_tools"][0])
    with pytest.raises(ValidationError, match="duplicate names: get_order"):
        Dialogue.model_validate(data)


def test_dialogue_helpers() -> None:
    dialogue = _dialogue()
    assert dialogue.gold_tool.name == "get_order"
    assert dialogue.assistant_turns() == [1, 3]
    assert "PO" in dialogue.persona.text()


# --------------------------------------------------------------------------------------------
# JSONL
# --------------------------------------------------------------------------------------------


def test_jsonl_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dialogues.jsonl"
    dialogues = [_dialogue(i) for i in range(3)]
    assert write_jsonl(path, dialogues) == 3
    assert read_jsonl(path, Dialogue) == dialogues
    assert load_dialogues(path) == dialogues
    assert not (tmp_path / "sub" / "dialogues.jsonl.tmp").exists()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and all(json.loads(line)["schema_version"] == "1.0" for line in lines)
    assert save_dialogues(path, dialogues[:1]) == 1
    assert load_dialogues(path) == dialogues[:1]


def test_dump_record_is_one_line() -> None:
    dialogue = _dialogue()
    dialogue.turns[0].content = "line one\nline two é"
    line = dump_record(dialogue)
    assert "\n" not in line and "é" in line


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("\n" + dump_record(_dialogue()) + "\n\n   \n", encoding="utf-8")
    assert len(read_jsonl(path, Dialogue)) == 1


def test_bad_field_names_path_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    bad = _dialogue(1).model_dump(mode="json")
    bad["turns"][1]["role"] = "system"
    path.write_text(dump_record(_dialogue(0)) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_jsonl(path, Dialogue)
    err = info.value
    assert err.path == str(path)
    assert err.record == 2
    assert err.field == "turns.1.role"
    assert str(err).startswith(f"{path}, line 2, field 'turns.1.role': ")


def test_invalid_json_line_names_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(dump_record(_dialogue()) + "\n{not json\n" + dump_record(_dialogue()) + "\n")
    with pytest.raises(InputError, match=r"line 2: invalid JSON") as info:
        read_jsonl(path, Dialogue)
    assert info.value.record == 2


def test_non_object_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(InputError, match="expected a JSON object, got list"):
        read_jsonl(path, Dialogue)


def test_empty_file_is_an_error_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(InputError, match="file holds no records") as info:
        read_jsonl(path, Dialogue)
    assert info.value.path == str(path)
    assert read_jsonl(path, Dialogue, allow_empty=True) == []


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_jsonl(tmp_path / "nope.jsonl", Dialogue)
    with pytest.raises(InputError, match="is a directory"):
        read_jsonl(tmp_path, Dialogue)


def test_truncated_last_line_tolerated_only_on_request(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    whole = dump_record(_dialogue(0)) + "\n"
    path.write_text(whole + dump_record(_dialogue(1))[:40], encoding="utf-8")
    with pytest.raises(InputError, match="line 2: invalid JSON"):
        read_jsonl(path, Dialogue)
    records = read_jsonl(path, Dialogue, tolerate_truncated_tail=True)
    assert [d.id for d in records] == ["d-0"]


def test_truncated_line_in_the_middle_is_never_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(dump_record(_dialogue(0))[:40] + "\n" + dump_record(_dialogue(1)) + "\n")
    with pytest.raises(InputError, match="line 1"):
        list(iter_jsonl(path, Dialogue, tolerate_truncated_tail=True))


def test_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(dump_record(_dialogue(0)))
    assert [d.id for d in read_jsonl(path, Dialogue, tolerate_truncated_tail=True)] == ["d-0"]


def test_appender_cuts_truncated_tail_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(dump_record(_dialogue(0)) + "\n" + dump_record(_dialogue(1))[:25], encoding="utf-8")
    with JsonlAppender(path) as out:
        out.write(_dialogue(2))
        out.write(_dialogue(3).model_dump(mode="json"))
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    assert [d.id for d in read_jsonl(path, Dialogue)] == ["d-0", "d-2", "d-3"]


def test_appender_on_file_with_only_a_truncated_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "d-')
    with JsonlAppender(path) as out:
        out.write(_dialogue(5))
    assert [d.id for d in read_jsonl(path, Dialogue)] == ["d-5"]


def test_appender_creates_file_and_keeps_existing_lines(tmp_path: Path) -> None:
    path = tmp_path / "new" / "d.jsonl"
    with JsonlAppender(path) as out:
        out.write(_dialogue(0))
    with JsonlAppender(path) as out:
        out.write(_dialogue(1))
    assert [d.id for d in read_jsonl(path, Dialogue)] == ["d-0", "d-1"]
