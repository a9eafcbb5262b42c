"""Catalogue loading: every supported format, and every kind of bad input named precisely."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _repo import FIXTURES, ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from diaforge.data_gen import catalogue_formats
from diaforge.data_gen.catalogue import FORMATS, Catalogue, LoadReport, load_catalogue, save_catalogue
from diaforge.data_gen.catalogue_formats import CATALOGUE_FORMATS, CatalogueFormat, Document
from diaforge.data_gen.openapi import tools_from_openapi
from diaforge.errors import InputError
from diaforge.schema import Tool
from diaforge.tool_records import RecordEntry, RecordLabel, make_tool, tool_from_record

FIXTURE = FIXTURES / "openapi_petstore_like.yaml"


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def write_json(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def load_error(path: Path, **kwargs: Any) -> str:
    """Load `path`, expect `InputError`, check it is one line naming the file, return the text."""
    with pytest.raises(InputError) as info:
        load_catalogue(path, **kwargs)
    text = str(info.value)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(str(path)), text
    return text


def bare(name: str, **props: str) -> dict[str, Any]:
    """A bare OpenAI-style record with string-typed properties named in `props` (value = type)."""
    return {
        "name": name,
        "description": f"Does {name}.",
        "parameters": {
            "type": "object",
            "properties": {k: {"type": t, "description": k} for k, t in props.items()},
            "required": list(props)[:1],
        },
    }


def wrapped(name: str, **props: str) -> dict[str, Any]:
    return {"type": "function", "function": bare(name, **props)}


REFUND = {
    "type": "function",
    "function": {
        "name": "refund_order",
        "description": "Refund an order, fully or partly.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "Order to refund."},
                "amount": {"type": "float", "description": "Amount in the order's currency."},
                "lines": {"type": "tuple", "items": {"type": "int"}},
                "options": {"type": "dict", "properties": {"notify": {"type": "bool"}}},
                "on": {"type": "date"},
                "note": {"type": "any"},
            },
            "required": ["order_id"],
        },
    },
}


# --------------------------------------------------------------------------------------------
# OpenAI function specs, BFCL, toolkit
# --------------------------------------------------------------------------------------------


def test_openai_list_normalises_types(tmp_path: Path) -> None:
    path = write_json(tmp_path / "cat.json", [REFUND, wrapped("ship_order", order_id="string")])
    cat = load_catalogue(path)
    assert cat.report == LoadReport(path=str(path), format="openai", records=2, loaded=2, skipped=[])
    assert cat.names() == ["refund_order", "ship_order"]
    props = cat.get("refund_order").properties
    assert props["amount"]["type"] == "number"
    assert props["lines"] == {"type": "array", "items": {"type": "integer"}}
    assert props["options"]["type"] == "object"
    assert props["options"]["properties"]["notify"]["type"] == "boolean"
    assert props["on"] == {"type": "string", "format": "date"}
    assert "type" not in props["note"]
    assert cat.get("refund_order").required == ["order_id"]
    assert cat.get("refund_order").parameters["type"] == "object"


def test_openai_tools_object_and_jsonl(tmp_path: Path) -> None:
    obj = write_json(tmp_path / "tools.json", {"tools": [REFUND, wrapped("ship_order", order_id="string")]})
    assert load_catalogue(obj).names() == ["refund_order", "ship_order"]

    lines = write_jsonl(tmp_path / "tools.jsonl", [bare("a", x="int"), bare("b"), bare("c", y="float")])
    cat = load_catalogue(lines)
    assert (cat.report.format, cat.report.records, cat.report.loaded) == ("openai", 3, 3)
    assert cat.get("c").properties["y"]["type"] == "number"

    # JSON Lines are also recognised without the .jsonl suffix.
    plain = tmp_path / "tools.txt"
    plain.write_text(lines.read_text(), encoding="utf-8")
    assert load_catalogue(plain).names() == ["a", "b", "c"]


def test_single_record_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "one.json", REFUND)
    assert load_catalogue(path).names() == ["refund_order"]


def test_bfcl_dict_parameters(tmp_path: Path) -> None:
    bfcl = {
        "name": "calculate_triangle_area",
        "description": "Calculate the area of a triangle given its base and height.",
        "parameters": {
            "type": "dict",
            "properties": {
                "base": {"type": "integer", "description": "The base of the triangle."},
                "height": {"type": "float", "description": "The height of the triangle."},
                "unit": {"type": "string", "description": "The unit of measure.", "enum": ["cm", "m"]},
                "vertices": {"type": "tuple", "items": {"type": "tuple", "items": {"type": "float"}}},
                "meta": {"type": "dict", "properties": {"label": {"type": "String"}}},
            },
            "required": ["base", "height"],
        },
    }
    path = write_jsonl(tmp_path / "bfcl.jsonl", [bfcl])
    tool = load_catalogue(path).get("calculate_triangle_area")
    assert tool.parameters["type"] == "object"
    assert tool.required == ["base", "height"]
    assert tool.properties["height"]["type"] == "number"
    assert tool.properties["vertices"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "number"}},
    }
    assert tool.properties["meta"]["properties"]["label"]["type"] == "string"
    assert tool.properties["unit"]["enum"] == ["cm", "m"]


def test_toolkit_round_trip_and_split(tmp_path: Path) -> None:
    tools = [
        Tool(name="a", description="A.", metadata={"split": "train", "family": "hr"}),
        Tool(
            name="b",
            parameters={"properties": {"x": {"type": "float"}}, "required": ["x"]},
            metadata={"split": "test"},
        ),
        Tool(name="c", metadata={"split": "train"}),
    ]
    path = tmp_path / "out" / "catalogue.json"
    save_catalogue(tools, path)
    saved = json.loads(path.read_text())
    assert [set(r) for r in saved] == [{"name", "description", "parameters", "metadata"}] * 3

    cat = load_catalogue(path)
    assert cat.report.format == "toolkit"
    assert cat.tools == tools
    assert cat.get("b").properties["x"]["type"] == "number"
    train = cat.split("train")
    assert isinstance(train, Catalogue) and train.names() == ["a", "c"]
    assert cat.split("test").names() == ["b"]
    with pytest.raises(InputError, match=r"no tools in split 'dev' \(splits present: test, train\)"):
        cat.split("dev")

    # Saving a loaded catalogue gives the same file back.
    again = tmp_path / "again.json"
    save_catalogue(cat, again)
    assert json.loads(again.read_text()) == saved


def test_catalogue_api(tmp_path: Path) -> None:
    cat = load_catalogue(write_json(tmp_path / "cat.json", [bare("refund_order"), bare("ship_order")]))
    assert len(cat) == 2
    assert [t.name for t in cat] == ["refund_order", "ship_order"]
    assert set(cat.by_name) == {"refund_order", "ship_order"}
    assert "ship_order" in cat and cat.get("ship_order") in cat and "nope" not in cat
    with pytest.raises(KeyError) as info:
        cat.get("refund_ordr")
    msg = str(info.value)
    assert (
        "'refund_ordr'" in msg and str(tmp_path / "cat.json") in msg and "did you mean 'refund_order'" in msg
    )
    assert Catalogue([Tool(name="x")]).report.loaded == 1
    with pytest.raises(ValueError, match="duplicate tool name 'x'"):
        Catalogue([Tool(name="x"), Tool(name="x")])


def test_summary() -> None:
    report = LoadReport(path="cat.json", format="openai", records=414, loaded=412, skipped=["a", "b"])
    assert report.summary() == "loaded 412 tools from cat.json (openai format); skipped 2 invalid records"
    one = LoadReport(path="x.yaml", format="openapi", records=1, loaded=1)
    assert one.summary() == "loaded 1 tool from x.yaml (openapi format)"


def test_tool_from_record_shapes() -> None:
    assert tool_from_record(REFUND).name == "refund_order"
    assert tool_from_record(bare("x", a="int")).properties["a"]["type"] == "integer"
    paper = tool_from_record({"name": "p", "params": {"a": {"type": "float", "required": True}}})
    assert paper.required == ["a"] and paper.properties["a"] == {"type": "number"}
    with pytest.raises(InputError) as info:
        tool_from_record({"name": "p", "parameters": []}, path="cat.json", record=4)
    assert str(info.value) == "cat.json, line 4, field 'parameters': parameters must be an object, got list"


# --------------------------------------------------------------------------------------------
# The paper's maps
# --------------------------------------------------------------------------------------------

PAPER_PARAMS = {
    "request_id": {"type": "str", "description": "Training request ID.", "required": True},
    "approver": {"type": "str", "description": "Who approves.", "required": False},
    "budget": {"type": "float", "description": "Approved budget.", "required": True},
    "start": {"type": "date", "description": "Start date."},
}


def test_paper_records(tmp_path: Path) -> None:
    records = [
        {
            "name": "approve_internal_training_request",
            "description": "Approve it.",
            "parameters": PAPER_PARAMS,
        },
        {"name": "list_training_requests", "description": "List them.", "params": {"team": {"type": "str"}}},
    ]
    cat = load_catalogue(write_jsonl(tmp_path / "paper.jsonl", records))
    assert cat.report.format == "paper"
    tool = cat.get("approve_internal_training_request")
    assert tool.required == ["request_id", "budget"]
    assert tool.properties["budget"] == {"type": "number", "description": "Approved budget."}
    assert tool.properties["start"] == {"type": "string", "description": "Start date.", "format": "date"}
    assert all("required" not in p for p in tool.properties.values())
    assert cat.get("list_training_requests").required == []


def test_paper_whole_file_map(tmp_path: Path) -> None:
    doc = {
        "approve_internal_training_request": {"description": "Approve it.", "parameters": PAPER_PARAMS},
        "close_ticket": {
            "description": "Close a ticket.",
            "params": {"ticket": {"type": "int", "required": True}},
        },
        "no_args": {"description": "Takes nothing."},
    }
    cat = load_catalogue(write_json(tmp_path / "paper.json", doc))
    assert cat.report == LoadReport(path=str(tmp_path / "paper.json"), format="paper", records=3, loaded=3)
    assert cat.names() == list(doc)
    assert cat.get("close_ticket").required == ["ticket"]
    assert cat.get("close_ticket").properties["ticket"]["type"] == "integer"
    assert cat.get("no_args").properties == {}

    yaml_path = tmp_path / "paper.yaml"
    yaml_path.write_text(
        "close_ticket:\n  description: Close a ticket.\n  params:\n"
        "    ticket: {type: int, description: Ticket number, required: true}\n",
        encoding="utf-8",
    )
    assert load_catalogue(yaml_path).get("close_ticket").required == ["ticket"]


def test_required_flags_on_properties_are_lifted(tmp_path: Path) -> None:
    record = {
        "name": "book_room",
        "parameters": {
            "type": "object",
            "properties": {
                "room": {"type": "string", "required": True},
                "notes": {"type": "string", "required": False},
            },
            "required": [],
        },
    }
    tool = load_catalogue(write_json(tmp_path / "c.json", [record])).get("book_room")
    assert tool.required == ["room"]
    assert tool.properties == {"room": {"type": "string"}, "notes": {"type": "string"}}

    # In a paper map, an object parameter may carry its own JSON Schema `required` list.
    paper = {
        "name": "ship",
        "params": {
            "address": {"type": "dict", "properties": {"city": {"type": "str"}}, "required": ["city"]},
            "speed": {"type": "str", "required": True},
        },
    }
    tool = tool_from_record(paper)
    assert tool.required == ["speed"]
    assert tool.properties["address"]["required"] == ["city"]


def test_forced_format(tmp_path: Path) -> None:
    # A parameter literally called "items" looks like a JSON Schema keyword; format="paper" settles it.
    record = {"name": "count", "parameters": {"items": {"type": "list", "description": "Things."}}}
    path = write_jsonl(tmp_path / "c.jsonl", [record])
    cat = load_catalogue(path, format="paper")
    assert cat.report.format == "paper"
    assert cat.get("count").properties == {"items": {"type": "array", "description": "Things."}}

    paper = write_jsonl(tmp_path / "p.jsonl", [{"name": "p", "parameters": PAPER_PARAMS}])
    text = load_error(paper, format="openai")
    assert "line 1" in text and "field 'parameters'" in text and "format='paper'" in text

    assert "unknown catalogue format 'csv'" in load_error(paper, format="csv")


# --------------------------------------------------------------------------------------------
# The registry of formats
# --------------------------------------------------------------------------------------------


def test_formats_are_the_registry_in_order() -> None:
    names = [f.name for f in CATALOGUE_FORMATS]
    assert list(FORMATS) == names
    assert len(set(names)) == len(names)
    for fmt in CATALOGUE_FORMATS:
        assert fmt.summary and "\n" not in fmt.summary, fmt.name


def test_docs_list_every_format_in_order() -> None:
    # docs/catalogues.md opens with the formats as a numbered list, in the order they are asked.
    text = (ROOT / "docs" / "catalogues.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\d+\. `([a-z0-9_-]+)`", text.split("\n## ", 1)[0], re.MULTILINE)
    assert listed == [f.name for f in CATALOGUE_FORMATS], (
        "docs/catalogues.md: the numbered list at the top names the entries of "
        "data_gen/catalogue_formats.py's CATALOGUE_FORMATS, in their order"
    )


def test_detection_picks_the_first_format_that_accepts(tmp_path: Path) -> None:
    doc = openapi_doc()
    cases = {
        "openapi": doc,
        "paper": {"ship": {"description": "Ship.", "params": PAPER_PARAMS}},
        "toolkit": [{**bare("a", x="string"), "metadata": {"split": "train"}}],
        "openai": {"tools": [wrapped("a", x="string")]},
    }
    for name, value in cases.items():
        path = write_json(tmp_path / f"{name}.json", value)
        assert load_catalogue(path).report.format == name
        assert load_catalogue(path, format=name).report.format == name


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ({"nodes": [], "edges": []}, "an object whose 'nodes' is a list, not a tool"),
        ("tools", "a string"),
        (None, "null"),
        (3, "a number"),
    ],
)
def test_no_format_accepts(tmp_path: Path, value: Any, what: str) -> None:
    text = load_error(write_json(tmp_path / "graph.json", value))
    assert f"unrecognised catalogue: no known format accepts {what}; tried in order: " in text
    tried = text.split("tried in order: ", 1)[1]
    assert [part.split(" (", 1)[0] for part in tried.split("; ")] == list(FORMATS)


def test_forced_format_that_cannot_read_the_document(tmp_path: Path) -> None:
    known = ", ".join(FORMATS)
    path = write_json(tmp_path / "s.json", "a string")
    text = load_error(path, format="paper")
    assert f"format 'paper' does not read a string (known formats: {known})" in text
    text = load_error(write_json(tmp_path / "m.json", {"a": {"description": "A."}}), format="toolkit")
    assert "for format 'toolkit', got a {tool_name: spec} map; pass format='paper'" in text
    assert f"unknown catalogue format 'mcp' (expected one of {known})" in load_error(path, format="mcp")


def _is_mcp(doc: Document) -> bool:
    tools = doc.value.get("tools") if isinstance(doc.value, dict) else None
    return (
        isinstance(tools, list)
        and bool(tools)
        and all(isinstance(t, dict) and "inputSchema" in t for t in tools)
    )


def _mcp_entries(doc: Document, forced: bool) -> list[RecordEntry]:
    if not _is_mcp(doc):
        raise InputError("expected an MCP tools/list result", path=doc.path)

    def build(record: dict[str, Any]) -> tuple[Tool, str | None, str]:
        fields = {"name": "name", "description": "description", "parameters": "inputSchema"}
        tool = make_tool(
            name=record.get("name"),
            description=record.get("description"),
            parameters=record["inputSchema"],
            metadata=None,
            fields=fields,
        )
        return tool, "name", "mcp"

    return [
        RecordEntry(position=RecordLabel(str(i)), build=lambda r=r: build(r))
        for i, r in enumerate(doc.value["tools"], start=1)
    ]


def test_a_new_format_is_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The route of docs/extending.md, "A catalogue format": one entry before `openai`, which
    # would otherwise read {"tools": [...]} and refuse the unknown key inputSchema.
    mcp = CatalogueFormat(
        name="mcp", summary="an MCP server's tools/list result", accepts=_is_mcp, read=_mcp_entries
    )
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    path = write_json(tmp_path / "tools.json", {"tools": [{"name": "get_weather", "inputSchema": schema}]})
    assert "unknown key 'inputSchema'" in load_error(path)
    monkeypatch.setattr(
        catalogue_formats, "CATALOGUE_FORMATS", (*CATALOGUE_FORMATS[:-1], mcp, CATALOGUE_FORMATS[-1])
    )
    cat = load_catalogue(path)
    assert cat.report.format == "mcp" and cat.get("get_weather").required == ["city"]
    assert load_catalogue(path, format="mcp").report.format == "mcp"
    other = write_json(tmp_path / "other.json", [bare("a")])
    assert "expected an MCP tools/list result" in load_error(other, format="mcp")
    text = load_error(write_json(tmp_path / "s.json", "x"))
    assert "toolkit (a JSON list of records with metadata, as save_catalogue writes); mcp (" in text


# --------------------------------------------------------------------------------------------
# OpenAPI
# --------------------------------------------------------------------------------------------


def test_openapi_yaml_fixture() -> None:
    cat = load_catalogue(FIXTURE)
    assert (cat.report.format, cat.report.records, cat.report.loaded) == ("openapi", 6, 6)
    assert cat.names() == [
        "listOrders",
        "createOrder",
        "get_orders_by_order_id",
        "replaceOrder",
        "cancelOrder",
        "get_orders_by_order_id_items",
    ]

    listing = cat.get("listOrders")
    assert listing.description == "List orders. Returns orders, newest first."
    assert listing.metadata["source"] == "openapi"
    assert (listing.metadata["method"], listing.metadata["path"], listing.metadata["tags"]) == (
        "GET",
        "/orders",
        ["orders"],
    )
    assert listing.properties["status"]["enum"] == ["pending", "shipped", "delivered", "cancelled"]
    assert listing.properties["status"]["description"] == "Only orders in this status."
    assert listing.properties["limit"]["type"] == "integer"  # from components/parameters
    assert listing.properties["created_after"]["format"] == "date"
    assert listing.required == []

    create = cat.get("createOrder")
    assert create.required == ["customer_id", "items"]
    assert create.properties["items"]["items"]["properties"]["quantity"]["type"] == "integer"
    assert create.properties["shipping_address"]["required"] == ["street", "city"]

    # Path-level parameter ($ref to components/parameters) merged into every operation.
    get_one = cat.get("get_orders_by_order_id")
    assert get_one.required == ["order_id"]
    assert get_one.description == "Get one order"
    assert "operation_id" not in get_one.metadata

    # Body via components/requestBodies -> components/schemas/Order, whose order_id collides
    # with the path parameter; Order refers to itself (cycle guard).
    replace = cat.get("replaceOrder")
    assert list(replace.properties) == ["order_id", "body_order_id", "status", "shipping_address", "replaces"]
    assert replace.required == ["order_id", "body_order_id", "status"]
    assert replace.metadata["bindings"]["body_order_id"] == {"in": "body", "name": "order_id"}
    assert replace.metadata["tags"] == ["orders", "admin"]
    assert replace.properties["replaces"]["type"] == "object"
    assert "recursive" in replace.properties["replaces"]["description"]

    # An optional body's `required` list does not make its properties required.
    cancel = cat.get("cancelOrder")
    assert cancel.required == ["order_id", "X-Request-Id"]
    assert "reason" in cancel.properties

    items = cat.get("get_orders_by_order_id_items")
    assert set(items.properties) == {"order_id", "expand"}
    assert items.metadata["tags"] == ["items"]


def openapi_doc() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "Shop", "version": "1"},
        "paths": {
            "/customers/{customerId}/orders": {
                "parameters": [
                    {"name": "customerId", "in": "path", "required": True, "schema": {"type": "string"}},
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer"},
                        "description": "Path-level.",
                    },
                ],
                "get": {
                    "summary": "List a customer's orders",
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 50}},
                        {"name": "status", "in": "query", "required": True, "schema": {"type": "string"}},
                    ],
                },
                "post": {
                    "operationId": "placeOrder",
                    "description": "Places an order for the customer.",
                    "parameters": [{"name": "status", "in": "query", "schema": {"type": "string"}}],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OrderIn"}}},
                    },
                },
            },
            "/health": {"get": {"operationId": "health"}},
        },
        "components": {
            "schemas": {
                "Money": {
                    "type": "object",
                    "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}},
                },
                "OrderIn": {
                    "type": "object",
                    "required": ["sku", "status"],
                    "properties": {
                        "sku": {"type": "string"},
                        "status": {"type": "string", "enum": ["draft", "final"]},
                        "price": {"$ref": "#/components/schemas/Money"},
                    },
                },
            }
        },
    }


def test_openapi_json_parameters_body_and_derived_names(tmp_path: Path) -> None:
    cat = load_catalogue(write_json(tmp_path / "shop.json", openapi_doc()))
    assert cat.report.format == "openapi"
    assert cat.names() == ["get_customers_by_customer_id_orders", "placeOrder", "health"]

    listing = cat.get("get_customers_by_customer_id_orders")
    assert listing.required == ["customerId", "status"]
    # The operation-level `limit` replaces the path-level one.
    assert listing.properties["limit"] == {"type": "integer", "maximum": 50}

    place = cat.get("placeOrder")
    assert place.description == "Places an order for the customer."
    assert list(place.properties) == ["customerId", "limit", "status", "sku", "body_status", "price"]
    assert place.required == ["customerId", "sku", "body_status"]
    assert place.properties["body_status"]["enum"] == ["draft", "final"]
    assert place.properties["price"]["properties"]["amount"]["type"] == "number"
    assert place.metadata == {
        "source": "openapi",
        "method": "POST",
        "path": "/customers/{customerId}/orders",
        "tags": [],
        "bindings": {
            "customerId": {"in": "path", "name": "customerId"},
            "limit": {"in": "query", "name": "limit"},
            "status": {"in": "query", "name": "status"},
            "sku": {"in": "body", "name": "sku"},
            "body_status": {"in": "body", "name": "status"},
            "price": {"in": "body", "name": "price"},
        },
        "operation_id": "placeOrder",
    }
    assert cat.get("health").properties == {}

    assert [t.name for t in tools_from_openapi(openapi_doc())] == cat.names()


def test_openapi_detected_without_yaml_suffix(tmp_path: Path) -> None:
    path = tmp_path / "api.txt"
    path.write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    assert len(load_catalogue(path)) == 6
    assert len(load_catalogue(FIXTURE, format="openapi")) == 6


# --------------------------------------------------------------------------------------------
# Bad input: file level
# --------------------------------------------------------------------------------------------


def test_missing_file_directory_and_empty(tmp_path: Path) -> None:
    assert "no tools found" in load_error(tmp_path / "missing.json")
    assert "no tools found" in load_error(tmp_path)
    for name, content in [
        ("empty.json", ""),
        ("blank.jsonl", "\n \n"),
        ("list.json", "[]"),
        ("tools.json", '{"tools": []}'),
        ("obj.json", "{}"),
        ("empty.yaml", "# nothing here\n"),
    ]:
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        assert "no tools found" in load_error(path), name


def test_openapi_without_operations(tmp_path: Path) -> None:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "x", "version": "1"},
        "paths": {"/x": {"summary": "nothing"}},
    }
    text = load_error(write_json(tmp_path / "api.json", doc))
    assert "no tools found" in text and "no operations" in text
    with pytest.raises(InputError, match="no tools found"):
        tools_from_openapi(doc)
    swagger = load_error(write_json(tmp_path / "old.json", {"swagger": "2.0", "paths": {}}))
    assert "field 'swagger'" in swagger and "OpenAPI 3" in swagger


def test_truncated_json(tmp_path: Path) -> None:
    full = json.dumps([bare("a"), bare("b")], indent=2)
    path = tmp_path / "cat.json"
    path.write_text(full[:-40], encoding="utf-8")
    text = load_error(path)
    line = full[:-40].count("\n") + 1
    assert f"line {line}" in text and "invalid JSON" in text and "column" in text and "truncated" in text
    # Non-strict mode cannot recover a file that does not parse.
    load_error(path, strict=False)


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "cat.json"
    path.write_text('[\n  {"name": "a"},\n  {"name": "b",, }\n]\n', encoding="utf-8")
    text = load_error(path)
    assert text.startswith(f"{path}, line 3: invalid JSON") and "at column 16" in text


def test_invalid_jsonl_line(tmp_path: Path) -> None:
    path = tmp_path / "cat.jsonl"
    path.write_text(
        json.dumps(bare("a")) + "\n" + json.dumps(bare("b"))[:-5] + "\n" + json.dumps(bare("c")) + "\n"
    )
    text = load_error(path)
    assert text.startswith(f"{path}, line 2: invalid JSON")
    assert "(1 valid tool read before this record; fix or remove this record)" in text

    cat = load_catalogue(path, strict=False)
    assert cat.names() == ["a", "c"]
    assert len(cat.report.skipped) == 1 and cat.report.skipped[0].startswith(f"{path}, line 2: invalid JSON")


def test_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "api.yaml"
    path.write_text("openapi: 3.0.0\npaths:\n  /x:\n    get: [unclosed\n  /y: {}\n", encoding="utf-8")
    text = load_error(path)
    assert "invalid YAML" in text and "line " in text and "column" in text


# --------------------------------------------------------------------------------------------
# Bad input: one record
# --------------------------------------------------------------------------------------------


def test_missing_name(tmp_path: Path) -> None:
    nameless = bare("x")
    del nameless["name"]
    text = load_error(write_json(tmp_path / "cat.json", [bare("a"), nameless]))
    assert text.startswith(f"{tmp_path / 'cat.json'}, record 2, field 'name': tool has no name")

    inner = wrapped("x")
    del inner["function"]["name"]
    text = load_error(write_jsonl(tmp_path / "cat.jsonl", [bare("a"), bare("b"), inner]))
    assert text.startswith(f"{tmp_path / 'cat.jsonl'}, line 3, field 'function.name': tool has no name")
    assert "(2 valid tools read before this record;" in text


def test_non_string_and_blank_names(tmp_path: Path) -> None:
    rec = bare("x")
    rec["name"] = 42
    text = load_error(write_json(tmp_path / "cat.json", [rec]))
    assert "record 1, field 'name': tool name must be a string, got int 42" in text

    rec["name"] = " padded "
    text = load_error(write_json(tmp_path / "cat.json", [rec]))
    assert "record 1" in text and "field 'name'" in text and "whitespace" in text


def test_duplicate_names(tmp_path: Path) -> None:
    records = [bare("a"), bare("b"), bare("a", x="int"), bare("c")]
    path = write_json(tmp_path / "cat.json", records)
    text = load_error(path)
    assert text.startswith(
        f"{path}, record 3 ('a'), field 'name': duplicate tool name 'a' (first at record 1)"
    )

    cat = load_catalogue(path, strict=False)
    assert cat.names() == ["a", "b", "c"]
    assert cat.get("a").properties == {}  # the first one is kept
    assert cat.report.records == 4 and cat.report.loaded == 3 and len(cat.report.skipped) == 1

    jsonl = write_jsonl(tmp_path / "cat.jsonl", records)
    assert "line 3, field 'name': duplicate tool name 'a' (first at line 1)" in load_error(jsonl)

    # Duplicate keys in a {tool_name: spec} map are not silently merged by the JSON parser.
    mapping = tmp_path / "map.json"
    mapping.write_text('{"a": {"params": {}}, "b": {"params": {}}, "a": {"params": {}}}', encoding="utf-8")
    assert "record 3 ('a'): duplicate tool name 'a' (first at record 1)" in load_error(mapping)

    # OpenAPI: derived or explicit names that clash name both operations.
    doc = openapi_doc()
    doc["paths"]["/health"]["get"]["operationId"] = "placeOrder"
    api = write_json(tmp_path / "api.json", doc)
    text = load_error(api)
    assert "record GET /health ('placeOrder'), field 'operationId'" in text
    assert "first at record POST /customers/{customerId}/orders" in text


def test_parameters_not_an_object(tmp_path: Path) -> None:
    rec = bare("refund_order")
    rec["parameters"] = ["order_id"]
    path = write_jsonl(tmp_path / "cat.jsonl", [bare("a"), bare("b"), rec])
    text = load_error(path)
    assert text.startswith(f"{path}, line 3, field 'parameters': parameters must be an object, got list")

    path = write_json(tmp_path / "cat.json", [{"type": "function", "function": rec}])
    assert "record 1 ('refund_order'), field 'function.parameters'" in load_error(path)


def test_unknown_type(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "cat.json", [bare("a"), bare("refund_order", order_id="string", amount="money")]
    )
    text = load_error(path)
    assert text.startswith(f"{path}, record 2 ('refund_order'), field 'parameters.properties.amount.type': ")
    assert "unknown type 'money'" in text and "(1 valid tool read before this record;" in text

    nested = bare("n")
    nested["parameters"]["properties"]["rows"] = {"type": "array", "items": {"type": "matrix"}}
    text = load_error(write_jsonl(tmp_path / "n.jsonl", [nested]))
    assert "line 1, field 'parameters.properties.rows.items.type'" in text

    paper = {"name": "p", "params": {"amount": {"type": "money", "required": True}}}
    assert "field 'params.amount.type'" in load_error(write_jsonl(tmp_path / "p.jsonl", [paper]))
    mapping = {"p": {"parameters": {"amount": {"type": "money", "required": True}}}}
    assert "record 1 ('p'), field 'parameters.amount.type'" in load_error(
        write_json(tmp_path / "m.json", mapping)
    )

    doc = openapi_doc()
    doc["components"]["schemas"]["Money"]["properties"]["amount"]["type"] = "decimal128"
    text = load_error(write_json(tmp_path / "api.json", doc))
    assert "record POST /customers/{customerId}/orders ('placeOrder')" in text
    assert (
        "field 'requestBody.content.application/json.schema.properties.price.properties.amount.type'" in text
    )
    assert "unknown type 'decimal128'" in text


@pytest.mark.parametrize(
    ("record", "field", "fragment"),
    [
        (7, None, "expected a JSON object for a tool, got int"),
        ({"type": "tool", "function": {"name": "x"}}, "type", "must be 'function'"),
        ({"type": "function", "function": "x"}, "function", "function must be an object"),
        ({"name": "x", "description": 5}, "description", "description must be a string"),
        ({"name": "x", "metadata": []}, "metadata", "metadata must be an object"),
        ({"name": "x", "parameters": {"type": "array"}}, "parameters.type", "must be 'object'"),
        ({"name": "x", "parameters": {"properties": []}}, "parameters.properties", "must be an object"),
        (
            {"name": "x", "parameters": {"properties": {"a": {}}, "required": ["b"]}},
            "parameters.required",
            "unknown parameters: b",
        ),
        (
            {"name": "x", "parameters": {"properties": {"a": "string"}}},
            "parameters.properties.a",
            "must be an object",
        ),
        (
            {"name": "x", "parameters": {"properties": {"a": {"enum": "x"}}}},
            "parameters.properties.a.enum",
            "list",
        ),
        (
            {"name": "x", "params": {"a": {"type": "str", "required": "yes"}}},
            "params.a.required",
            "true or false",
        ),
        ({"name": "x", "params": {"a": 3}}, "params.a", "must be an object"),
        ({"name": "x", "params": {}, "parameters": {}}, "params", "both 'parameters' and 'params'"),
    ],
)
def test_bad_records_name_record_and_field(
    tmp_path: Path, record: Any, field: str | None, fragment: str
) -> None:
    path = write_json(tmp_path / "cat.json", [bare("ok"), record])
    text = load_error(path)
    assert text.startswith(f"{path}, record 2"), text
    if field is not None:
        assert f"field {field!r}" in text, text
    assert fragment in text


@pytest.mark.parametrize(
    ("mutate", "record", "field"),
    [
        (lambda d: d["paths"]["/health"]["get"].update(operationId=5), "GET /health", "operationId"),
        (
            lambda d: d["paths"]["/health"]["get"].update(parameters=[{"in": "query"}]),
            "GET /health",
            "parameters[0].name",
        ),
        (
            lambda d: d["paths"]["/health"]["get"].update(parameters=[{"name": "x", "in": "body"}]),
            "GET /health",
            "parameters[0].in",
        ),
        (
            lambda d: d["paths"]["/health"]["get"].update(
                parameters=[{"$ref": "#/components/parameters/Nope"}]
            ),
            "GET /health",
            "parameters[0].$ref",
        ),
        (
            lambda d: d["paths"]["/health"]["get"].update(parameters=[{"$ref": "other.yaml#/X"}]),
            "GET /health",
            "parameters[0].$ref",
        ),
        (
            lambda d: d["components"]["schemas"]["OrderIn"].update(required=["sku", "ghost"]),
            "POST /customers/{customerId}/orders",
            "requestBody.content.application/json.schema.required",
        ),
    ],
)
def test_bad_openapi_operations(tmp_path: Path, mutate: Any, record: str, field: str) -> None:
    doc = openapi_doc()
    mutate(doc)
    text = load_error(write_json(tmp_path / "api.json", doc))
    assert f"record {record}" in text and f"field {field!r}" in text, text


# --------------------------------------------------------------------------------------------
# Non-strict mode
# --------------------------------------------------------------------------------------------


def test_non_strict_skips_and_reports(tmp_path: Path) -> None:
    bad_params = bare("bad_params")
    bad_params["parameters"] = "none"
    records = [bare("a"), {"description": "nameless"}, bare("b", x="float"), bad_params, bare("a"), bare("c")]
    path = write_json(tmp_path / "cat.json", records)
    assert "(1 valid tool read before this record;" in load_error(path)

    cat = load_catalogue(path, strict=False)
    assert cat.names() == ["a", "b", "c"]
    assert cat.get("b").properties["x"]["type"] == "number"
    report = cat.report
    assert (report.records, report.loaded, len(report.skipped)) == (6, 3, 3)
    assert report.skipped[0] == f"{path}, record 2, field 'name': tool has no name"
    assert report.skipped[1].startswith(f"{path}, record 4 ('bad_params'), field 'parameters':")
    assert report.skipped[2].startswith(f"{path}, record 5 ('a'), field 'name': duplicate tool name 'a'")
    assert all("\n" not in s and "strict=False" not in s for s in report.skipped)
    assert report.summary() == f"loaded 3 tools from {path} (openai format); skipped 3 invalid records"


def test_non_strict_openapi_skips_bad_operation(tmp_path: Path) -> None:
    doc = openapi_doc()
    doc["paths"]["/health"]["get"]["parameters"] = [{"name": "x", "in": "query", "schema": {"type": "blob"}}]
    cat = load_catalogue(write_json(tmp_path / "api.json", doc), strict=False)
    assert cat.names() == ["get_customers_by_customer_id_orders", "placeOrder"]
    assert "record GET /health ('health'), field 'parameters[0].schema.type'" in cat.report.skipped[0]


def test_non_strict_all_invalid_is_an_error(tmp_path: Path) -> None:
    path = write_json(tmp_path / "cat.json", [{"description": "x"}, 5])
    text = load_error(path, strict=False)
    assert "no tools found: all 2 records are invalid" in text and "record 1, field 'name'" in text


# --------------------------------------------------------------------------------------------
# Nothing but InputError escapes
# --------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["object", "dict", "float", "money"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "description",
                    "parameters",
                    "params",
                    "properties",
                    "required",
                    "type",
                    "items",
                    "function",
                    "metadata",
                    "enum",
                    "a",
                    "b",
                    "$ref",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(record=json_values)
def test_arbitrary_records_raise_only_input_error(record: Any) -> None:
    try:
        tool = tool_from_record(record, path="cat.json", record=1)
    except InputError as exc:
        text = str(exc)
        assert "\n" not in text and text.startswith("cat.json, line 1")
    else:
        assert isinstance(tool, Tool)


@settings(max_examples=150, deadline=None)
@given(doc=json_values)
def test_arbitrary_openapi_raise_only_input_error(doc: Any) -> None:
    spec = {"openapi": "3.0.0", "paths": {"/x/{id}": {"post": doc, "parameters": doc}}, "components": doc}
    try:
        tools_from_openapi(spec, path="api.json")
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("api.json")
