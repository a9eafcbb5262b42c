"""Bad inputs at the generator's doors (`python -m diaforge.data_gen generate | analyze | analyze-corpus |
export | pairs | build-benchmark | build-no-tool-split`), as the table in `_bad_inputs.py` checks them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _bad_inputs import (
    BOMB,
    CAT_OK,
    DIALOGUES_FIX,
    FOLDER,
    NO_OUTPUT,
    NON_UTF8,
    SMALL,
    TRAIN,
    Case,
    Fix,
    attach_fixes,
    case_ids,
    check_bad_input,
)
from _repo import ROOT

PERSONAS_OK = "".join(
    (ROOT / "data_gen" / "assets" / "personas.jsonl")
    .read_text(encoding="utf-8")
    .splitlines(keepends=True)[:3]
)


def _cfg(text: str) -> str:
    return f"catalogue: {TRAIN}\nnum_dialogues: 2\n{text}"


CFG_OK = Fix({"c.yaml": _cfg("")})
CAT_FIX = Fix({"cat.json": CAT_OK})


def _one_tool(**record: object) -> str:
    tool = {
        "name": "get_order",
        "description": "Look up one order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The order id."}},
            "required": ["order_id"],
        },
    }
    return json.dumps([{**tool, **record}, {**tool, "name": "get_invoice"}])


def _gen(*extra: str) -> list[str]:
    return ["generate", "--catalogue", str(TRAIN), *extra]


def _analyze(name: str) -> list[str]:
    return ["analyze", "--catalogue", "{dir}/" + name, "--encoder", "tfidf"]


def _export(*extra: str) -> list[str]:
    return ["export", str(SMALL), "--format", "hf-prompt", *extra]


PAPER_MAP = json.dumps(
    {
        "get_order": {
            "description": "Look up one order.",
            "params": {"order_id": {"type": "string", "description": "Id.", "required": True}},
        }
    }
)
OPENAPI = """openapi: 3.0.0
info: {title: shop, version: "1"}
paths:
  /orders/{order_id}:
    get:
      operationId: get_order
      summary: Look up one order.
      parameters:
        - {name: order_id, in: path, required: true, schema: {type: string}}
"""

CASES = [
    # --- data_gen generate: configs
    Case(
        "config-not-utf8",
        "data_gen",
        {"c.yaml": NON_UTF8},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "line 1", "not UTF-8"),
    ),
    Case(
        "config-concurrency-lots",
        "data_gen",
        {"c.yaml": _cfg("concurrency: lots\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'concurrency'", "integer"),
    ),
    Case(
        "config-no-tool-share-above-1",
        "data_gen",
        {"c.yaml": _cfg("no_tool_share: 1.5\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'no_tool_share'", "at most 1"),
        fix=CFG_OK,
    ),
    Case(
        "config-no-tool-share-boolean",
        "data_gen",
        {"c.yaml": _cfg("no_tool_share: true\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'no_tool_share'", "a number"),
        fix=Fix({"c.yaml": _cfg("no_tool_share: 0.5\n")}),
    ),
    Case(
        "config-k-2.7-before-encoder",
        "data_gen",
        {"c.yaml": _cfg("k: 2.7\nencoder: minilm\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'k'", "integer"),
        max_seconds=5,
    ),
    Case(
        "config-inf",
        "data_gen",
        {"c.yaml": _cfg("roles: {user: {temperature: 1.0e+999}}\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "roles.user.temperature", "finite"),
    ),
    Case(
        "config-alias-bomb",
        "data_gen",
        {"c.yaml": BOMB},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "config-too-deep",
        "data_gen",
        {"c.yaml": "a: " + "[" * 100_000},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml",),
    ),
    Case(
        "config-unknown-encoder",
        "data_gen",
        {"c.yaml": _cfg("encoder: bert\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'encoder'"),
    ),
    Case(
        "config-unknown-key",
        "data_gen",
        {"c.yaml": _cfg("bogus_key: 1\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 'bogus_key'"),
    ),
    Case(
        "config-yaml-syntax",
        "data_gen",
        {"c.yaml": _cfg("roles: [1\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "invalid YAML"),
    ),
    Case(
        "config-not-a-mapping",
        "data_gen",
        {"c.yaml": "- a\n- b\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "mapping"),
    ),
    Case(
        "config-num-dialogues-negative",
        "data_gen",
        {"c.yaml": f"catalogue: {TRAIN}\nnum_dialogues: -2\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "at least 1"),
    ),
    Case(
        "config-t-max-0",
        "data_gen",
        {"c.yaml": _cfg("t_max: 0\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'t_max'", "at least 1"),
    ),
    Case(
        "config-temperature-not-a-number",
        "data_gen",
        {"c.yaml": _cfg("roles: {user: {temperature: hot}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "roles.user.temperature", "number"),
    ),
    Case(
        "config-k-five",
        "data_gen",
        {"c.yaml": _cfg("k: five\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'k'", "must be an integer, got 'five'"),
    ),
    Case(
        "config-validators-string-no",
        "data_gen",
        {"c.yaml": _cfg('validators: "no"\n')},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'validators'", "must be true or false, got 'no'"),
    ),
    Case(
        "config-unknown-key-suggested",
        "data_gen",
        {"c.yaml": _cfg("t_mx: 4\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 't_mx'", "did you mean 't_max'"),
    ),
    Case(
        "config-renamed-key-named",
        "data_gen",
        {"c.yaml": _cfg("phrasing: heldout\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 'phrasing'", "did you mean 'wording'"),
    ),
    Case(
        "config-role-setting-wrong-type",
        "data_gen",
        {"c.yaml": _cfg("roles: {critique: {max_retries: [1]}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'roles.critique.max_retries'", "must be an integer, got list"),
    ),
    Case(
        "config-missing",
        "data_gen",
        {},
        ["generate", "--config", "{dir}/missing.yaml", "--out", "{dir}/run"],
        ("missing.yaml", "not found"),
    ),
    # --- data_gen generate: flags and files
    Case(
        "out-is-a-file",
        "data_gen",
        {"out": "x"},
        ["generate", "--catalogue", str(TRAIN), "--out", "{dir}/out", "--num-dialogues", "1", "--quiet"],
        ("out", "not a folder"),
    ),
    Case(
        "num-dialogues-0",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--num-dialogues", "0"],
        ("--num-dialogues", "at least 1"),
    ),
    Case(
        "k-not-a-number",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--k", "2.7"],
        ("--k", "whole number"),
    ),
    Case(
        "concurrency-0",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--concurrency", "0", "--out", "{dir}/run"],
        ("--concurrency", "at least 1"),
    ),
    Case(
        "shard-index-out-of-range",
        "data_gen",
        {},
        [
            "generate",
            "--catalogue",
            str(TRAIN),
            "--num-shards",
            "2",
            "--shard-index",
            "5",
            "--out",
            "{dir}/run",
        ],
        ("shard_index", "[0, 1]"),
    ),
    Case(
        "catalogue-missing",
        "data_gen",
        {},
        ["generate", "--catalogue", "{dir}/missing.json", "--out", "{dir}/run"],
        ("missing.json", "does not exist"),
    ),
    Case(
        "catalogue-empty",
        "data_gen",
        {"cat.json": ""},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "empty"),
    ),
    Case(
        "catalogue-bad-json",
        "data_gen",
        {"cat.json": "{not json"},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "line 1", "invalid JSON"),
    ),
    Case(
        "catalogue-tool-without-name",
        "data_gen",
        {"cat.json": '[{"description": "no name"}]'},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "record 1", "'name'"),
    ),
    Case(
        "personas-missing",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--personas", "{dir}/nope.jsonl", "--out", "{dir}/run"],
        ("nope.jsonl", "not found"),
    ),
    Case(
        "personas-bad-json",
        "data_gen",
        {"p.jsonl": "not json\n"},
        ["generate", "--catalogue", str(TRAIN), "--personas", "{dir}/p.jsonl", "--out", "{dir}/run"],
        ("p.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "dialogues-bad-json",
        "data_gen",
        {"d.jsonl": "not json\n"},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "dialogues-missing-field",
        "data_gen",
        {"d.jsonl": '{"id": "x"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "'seed_tool'"),
    ),
    Case(
        "catalogue-nested-100000",
        "data_gen",
        {"cat.json": "[" * 100_000},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "nested deeper"),
    ),
    Case(
        "catalogue-not-utf8",
        "data_gen",
        {"cat.json": b'[{"name": "caf\xe9"}]'},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "UTF-8"),
    ),
    Case(
        "catalogue-inf",
        "data_gen",
        {
            "cat.json": '[{"name": "a", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "number", "maximum": 1e999}}}}]'
        },
        ["analyze", "--catalogue", "{dir}/cat.json"],
        ("cat.json", "finite"),
    ),
    Case(
        "catalogue-yaml-alias-bomb",
        "data_gen",
        {"cat.yaml": BOMB},
        ["analyze", "--catalogue", "{dir}/cat.yaml"],
        ("cat.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "personas-not-utf8",
        "data_gen",
        {"p.jsonl": b'{"id": "p", "description": "caf\xe9"}\n'},
        [
            "generate",
            "--catalogue",
            str(TRAIN),
            "--personas",
            "{dir}/p.jsonl",
            "--out",
            "{dir}/run",
        ],
        ("p.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "dialogues-not-utf8",
        "data_gen",
        {"d.jsonl": b'{"id": "\xff"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "dialogues-nested-100000",
        "data_gen",
        {"d.jsonl": "[" * 100_000 + "\n"},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "nested deeper"),
    ),
    Case(
        "dialogues-surrogate",
        "data_gen",
        {"d.jsonl": '{"id": "\\ud83d"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "'id'", "surrogate"),
    ),
    # --- python -m diaforge.data_gen generate
    Case(
        "gen-out-below-a-file",
        "data_gen",
        {"f": "x"},
        _gen("--out", "{dir}/f/run"),
        ("f/run", "'--out'", "is a file"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-out-under-proc",
        "data_gen",
        {},
        _gen("--out", "/proc/diaforge/run"),
        ("/proc/diaforge/run", "'--out'", "cannot create"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-out-under-dev-full",
        "data_gen",
        {},
        _gen("--out", "/dev/full/run"),
        ("/dev/full/run", "'--out'", "/dev/full is a file"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-config-out-below-a-file",
        "data_gen",
        {"f": "x", "c.yaml": _cfg("out: {dir}/f/run\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("f/run", "'out'", "is a file"),
        fix=Fix({"c.yaml": _cfg("out: {dir}/run\n")}),
    ),
    Case(
        "gen-num-dialogues-10e12",
        "data_gen",
        {},
        _gen("--num-dialogues", "1000000000000", "--out", "{dir}/run"),
        ("--num-dialogues", "at most 1,000,000"),
        max_seconds=5,
        fix=Fix(argv=_gen("--num-dialogues", "1", "--out", "{dir}/run")),
    ),
    Case(
        "gen-concurrency-100000",
        "data_gen",
        {},
        _gen("--concurrency", "100000", "--out", "{dir}/run"),
        ("--concurrency", "at most 1,024"),
        fix=Fix(argv=_gen("--concurrency", "64", "--out", "{dir}/run")),
    ),
    Case(
        "gen-backend-bogus",
        "data_gen",
        {"c.yaml": _cfg("")},
        ["generate", "--config", "{dir}/c.yaml", "--backend", "bogus", "--out", "{dir}/run"],
        ("--backend", "'bogus'"),
        fix=Fix(argv=["generate", "--config", "{dir}/c.yaml", "--backend", "scripted", "--out", "{dir}/run"]),
    ),
    Case(
        "config-duplicate-key",
        "data_gen",
        {"c.yaml": _cfg("k: 2\nk: 3\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "line 4", "'k'", "duplicate key", "line 3"),
        fix=Fix({"c.yaml": _cfg("k: 3\n")}),
    ),
    Case(
        "config-duplicate-nested-key",
        "data_gen",
        {"c.yaml": _cfg("roles:\n  user: {temperature: 0.5, temperature: 0.9}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'roles.user.temperature'", "duplicate key"),
        fix=Fix({"c.yaml": _cfg("roles:\n  user: {temperature: 0.9}\n")}),
    ),
    Case(
        "config-duplicate-top-key-num-dialogues",
        "data_gen",
        {"c.yaml": _cfg("num_dialogues: 3\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "duplicate key"),
        fix=CFG_OK,
    ),
    Case(
        "config-negative-price",
        "data_gen",
        {"c.yaml": _cfg("prices: {gpt-4o: {input_per_million: -1, output_per_million: 10}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'prices.gpt-4o.input_per_million'", "0 or more"),
        fix=Fix({"c.yaml": _cfg("prices: {gpt-4o: {input_per_million: 2.5, output_per_million: 10}}\n")}),
    ),
    Case(
        "config-price-key-typo",
        "data_gen",
        {"c.yaml": _cfg("prices: {gpt-4o: {input_per_milion: 2.5}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "prices.gpt-4o.input_per_milion", "did you mean 'input_per_million'"),
        fix=Fix({"c.yaml": _cfg("prices: {gpt-4o: {input_per_million: 2.5}}\n")}),
    ),
    Case(
        "config-concurrency-100000",
        "data_gen",
        {"c.yaml": _cfg("concurrency: 100000\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'concurrency'", "at most 1,024"),
        fix=Fix({"c.yaml": _cfg("concurrency: 16\n")}),
    ),
    Case(
        "config-num-dialogues-10e12",
        "data_gen",
        {"c.yaml": f"catalogue: {TRAIN}\nnum_dialogues: 1000000000000\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "at most 1,000,000", "num_shards"),
        max_seconds=5,
        fix=CFG_OK,
    ),
    Case(
        "config-is-dev-zero",
        "data_gen",
        {},
        ["generate", "--config", "/dev/zero", "--out", "{dir}/run"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"c.yaml": _cfg("")}, argv=["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"]),
    ),
    Case(
        "config-is-a-folder",
        "data_gen",
        {"c.yaml": FOLDER},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "directory"),
        fix=Fix({"c2.yaml": _cfg("")}, argv=["generate", "--config", "{dir}/c2.yaml", "--out", "{dir}/run"]),
    ),
    Case(
        "catalogue-is-dev-zero",
        "data_gen",
        {},
        ["generate", "--catalogue", "/dev/zero", "--out", "{dir}/run"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "personas-is-dev-zero",
        "data_gen",
        {},
        _gen("--personas", "/dev/zero", "--out", "{dir}/run"),
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"p.jsonl": PERSONAS_OK}, argv=_gen("--personas", "{dir}/p.jsonl", "--out", "{dir}/run")),
    ),
    Case(
        "gen-catalogue-key-typo",
        "data_gen",
        {"cat.json": _one_tool(paramters={})},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "record 1", "'paramters'", "did you mean 'parameters'"),
        fix=CAT_FIX,
    ),
    Case(
        "run-json-unreadable",
        "data_gen",
        {"run/run.json": "{not json", "run/dialogues.jsonl": SMALL.read_text(encoding="utf-8")},
        _gen("--out", "{dir}/run"),
        ("run.json", "remove this file alone", "records stay"),
        fix=Fix(remove=("run/run.json",)),
    ),
    # --- python -m diaforge.data_gen analyze: unknown and duplicate keys in every catalogue format
    Case(
        "cat-bare-paramters",
        "data_gen",
        {"cat.json": _one_tool(paramters={})},
        _analyze("cat.json"),
        ("cat.json", "record 1 ('get_order')", "'paramters'", "did you mean 'parameters'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-bare-descripton",
        "data_gen",
        {"cat.json": _one_tool(descripton="x")},
        _analyze("cat.json"),
        ("cat.json", "'descripton'", "did you mean 'description'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-wrapped-record-key",
        "data_gen",
        {
            "cat.json": json.dumps(
                [
                    {
                        "type": "function",
                        "fuction": {"name": "a"},
                        "function": {"name": "b", "description": "d"},
                    }
                ]
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'fuction'", "did you mean 'function'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-wrapped-proprties",
        "data_gen",
        {
            "cat.json": json.dumps(
                [
                    {
                        "type": "function",
                        "function": {
                            "name": "a",
                            "description": "d",
                            "parameters": {"type": "object", "proprties": {}},
                        },
                    }
                ]
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'function.parameters.proprties'", "did you mean 'properties'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-property-key-typo",
        "data_gen",
        {
            "cat.json": _one_tool(
                parameters={
                    "type": "object",
                    "properties": {"order_id": {"type": "string", "descriptoin": "Id."}},
                }
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'parameters.properties.order_id.descriptoin'", "did you mean 'description'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-items-key-typo",
        "data_gen",
        {
            "cat.json": _one_tool(
                parameters={
                    "type": "object",
                    "properties": {"ids": {"type": "array", "items": {"tpye": "string"}}},
                }
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'parameters.properties.ids.items.tpye'", "did you mean 'type'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-jsonl-key-typo",
        "data_gen",
        {
            "cat.jsonl": json.dumps({"name": "a", "description": "d"})
            + "\n"
            + json.dumps({"name": "b", "descriptio": "d"})
            + "\n"
        },
        _analyze("cat.jsonl"),
        ("cat.jsonl", "line 2", "'descriptio'"),
        fix=Fix({"cat.jsonl": "".join(json.dumps(t) + "\n" for t in json.loads(CAT_OK))}),
    ),
    Case(
        "cat-paper-map-key-typo",
        "data_gen",
        {"cat.json": PAPER_MAP.replace('"description": "Id."', '"descripton": "Id."')},
        _analyze("cat.json"),
        ("cat.json", "'params.order_id.descripton'", "did you mean 'description'"),
        fix=Fix({"cat.json": PAPER_MAP}),
    ),
    Case(
        "cat-paper-map-tool-key-typo",
        "data_gen",
        {"cat.json": PAPER_MAP.replace('"params"', '"parms"')},
        _analyze("cat.json"),
        ("cat.json", "'parms'", "did you mean 'params'"),
        fix=Fix({"cat.json": PAPER_MAP}),
    ),
    Case(
        "cat-openapi-operation-key-typo",
        "data_gen",
        {"cat.yaml": OPENAPI.replace("      parameters:", "      paramters:")},
        _analyze("cat.yaml"),
        ("cat.yaml", "GET /orders/{order_id}", "'paramters'", "did you mean 'parameters'"),
        fix=Fix({"cat.yaml": OPENAPI}),
    ),
    Case(
        "cat-openapi-parameter-key-typo",
        "data_gen",
        {"cat.yaml": OPENAPI.replace("required: true", "requried: true")},
        _analyze("cat.yaml"),
        ("cat.yaml", "'parameters[0].requried'", "did you mean 'required'"),
        fix=Fix({"cat.yaml": OPENAPI}),
    ),
    Case(
        "cat-yaml-duplicate-key",
        "data_gen",
        {"cat.yaml": OPENAPI.replace("      summary:", "      operationId: get_order2\n      summary:")},
        _analyze("cat.yaml"),
        ("cat.yaml", "'paths./orders/{order_id}.get.operationId'", "duplicate key"),
        fix=Fix({"cat.yaml": OPENAPI}),
    ),
    Case(
        "cat-json-duplicate-key",
        "data_gen",
        {"cat.json": _one_tool()[:-2] + ', "name": "again"}]'},
        _analyze("cat.json"),
        ("cat.json", "'name'", "duplicate key"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-jsonl-duplicate-key",
        "data_gen",
        {"cat.jsonl": '{"name": "a", "description": "d", "description": "e"}\n{"name": "b"}\n'},
        _analyze("cat.jsonl"),
        ("cat.jsonl", "line 1", "'description'", "duplicate key"),
        fix=Fix({"cat.jsonl": '{"name": "a", "description": "e"}\n{"name": "b"}\n'}),
    ),
    Case(
        "cat-is-dev-zero",
        "data_gen",
        {},
        ["analyze", "--catalogue", "/dev/zero"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=["analyze", "--catalogue", str(TRAIN)]),
    ),
    Case(
        "cat-is-a-folder",
        "data_gen",
        {"cat": FOLDER},
        _analyze("cat"),
        ("cat", "directory"),
        fix=Fix({"cat.json": CAT_OK}, argv=_analyze("cat.json")),
    ),
    Case(
        "cat-invalid-record-advice",
        "data_gen",
        {"cat.jsonl": '{"name": "a", "description": "d"}\n{"description": "no name"}\n'},
        _analyze("cat.jsonl"),
        ("cat.jsonl", "line 2", "'name'", "fix or remove this record"),
        fix=Fix({"cat.jsonl": '{"name": "a", "description": "d"}\n'}),
    ),
    Case(
        "analyze-threshold-2",
        "data_gen",
        {},
        ["analyze", "--catalogue", str(TRAIN), "--threshold", "2"],
        ("--threshold", "[0, 1]"),
        fix=Fix(argv=["analyze", "--catalogue", str(TRAIN), "--threshold", "0.7"]),
    ),
    # --- python -m diaforge.data_gen analyze-corpus
    Case(
        "corpus-is-dev-zero",
        "data_gen",
        {},
        ["analyze-corpus", "/dev/zero"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=["analyze-corpus", str(SMALL)]),
    ),
    Case(
        "corpus-is-a-folder",
        "data_gen",
        {"d": FOLDER},
        ["analyze-corpus", "{dir}/d"],
        ("d", "directory"),
        fix=Fix(argv=["analyze-corpus", str(SMALL)]),
    ),
    Case(
        "corpus-counter-bogus",
        "data_gen",
        {},
        ["analyze-corpus", str(SMALL), "--counter", "bogus"],
        ("--counter", "'bogus'"),
        fix=Fix(argv=["analyze-corpus", str(SMALL), "--counter", "value"]),
    ),
    Case(
        "corpus-concurrency-100000",
        "data_gen",
        {},
        ["analyze-corpus", str(SMALL), "--concurrency", "100000"],
        ("--concurrency", "at most"),
        fix=Fix(argv=["analyze-corpus", str(SMALL), "--concurrency", "4"]),
    ),
    # --- python -m diaforge.data_gen export
    Case(
        "export-system-prompt-not-utf8",
        "data_gen",
        {"s.txt": b"caf\xe9"},
        _export("--out", "{dir}/ex", "--system-prompt-file", "{dir}/s.txt"),
        ("s.txt", "line 1", "not UTF-8"),
        fix=Fix({"s.txt": "You pick tools.\n{tools}\n"}),
    ),
    Case(
        "export-system-prompt-missing",
        "data_gen",
        {},
        _export("--out", "{dir}/ex", "--system-prompt-file", "{dir}/s.txt"),
        ("s.txt", "not found"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "export-system-prompt-empty",
        "data_gen",
        {"s.txt": "  \n"},
        _export("--out", "{dir}/ex", "--system-prompt-file", "{dir}/s.txt"),
        ("s.txt", "empty"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "export-system-prompt-dev-zero",
        "data_gen",
        {},
        _export("--out", "{dir}/ex", "--system-prompt-file", "/dev/zero"),
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-is-a-file",
        "data_gen",
        {"f": "x"},
        _export("--out", "{dir}/f"),
        ("f", "'--out'", "not a folder"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-below-a-file",
        "data_gen",
        {"f": "x"},
        _export("--out", "{dir}/f/ex"),
        ("f/ex", "'--out'", "is a file"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-under-dev-full",
        "data_gen",
        {},
        _export("--out", "/dev/full/ex"),
        ("/dev/full/ex", "'--out'"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-under-proc",
        "data_gen",
        {},
        _export("--out", "/proc/diaforge/ex"),
        ("/proc/diaforge/ex", "'--out'"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-tokenizer-missing",
        "data_gen",
        {},
        _export("--out", "{dir}/ex", "--tokenizer", "{dir}/nope"),
        ("nope", "no such folder", "--tokenizer"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-tokenizer-is-a-file",
        "data_gen",
        {"tok": "x"},
        _export("--out", "{dir}/ex", "--tokenizer", "{dir}/tok"),
        ("tok", "is a file", "--tokenizer"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-dialogues-bad-json",
        "data_gen",
        {"d.jsonl": "not json\n"},
        ["export", "{dir}/d.jsonl", "--format", "hf-prompt", "--out", "{dir}/ex"],
        ("d.jsonl", "line 1", "invalid JSON"),
        fix=DIALOGUES_FIX,
    ),
    Case(
        "export-dialogues-missing",
        "data_gen",
        {},
        ["export", "{dir}/d.jsonl", "--format", "hf-prompt", "--out", "{dir}/ex"],
        ("d.jsonl", "not found"),
        fix=DIALOGUES_FIX,
    ),
    # --- python -m diaforge.data_gen build-benchmark (its rerun builds a benchmark from the small catalogue)
    Case(
        "build-benchmark-out-is-a-folder",
        "data_gen",
        {"b": FOLDER},
        ["build-benchmark", "--catalogue", str(TRAIN), "--split", "", "--out", "{dir}/b", "--quiet"],
        ("b", "'--out'", "is a folder"),
        fix=Fix(
            argv=[
                "build-benchmark",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    Case(
        "build-benchmark-out-below-a-file",
        "data_gen",
        {"f": "x"},
        ["build-benchmark", "--catalogue", str(TRAIN), "--split", "", "--out", "{dir}/f/b.jsonl", "--quiet"],
        ("f/b.jsonl", "'--out'", "is a file"),
        fix=Fix(
            argv=[
                "build-benchmark",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    # --- python -m diaforge.data_gen build-no-tool-split
    Case(
        "build-no-tool-split-out-is-a-folder",
        "data_gen",
        {"b": FOLDER},
        ["build-no-tool-split", "--catalogue", str(TRAIN), "--split", "", "--seeds", "1", "--out", "{dir}/b"],
        ("b", "'--out'", "is a folder"),
        fix=Fix(
            argv=[
                "build-no-tool-split",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--seeds",
                "1",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    # --- python -m diaforge.data_gen: an empty or blank output flag or key names no file or folder
    Case(
        "gen-out-empty",
        "data_gen",
        {},
        _gen("--out", ""),
        ("argument --out", NO_OUTPUT, "''"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-out-blank",
        "data_gen",
        {},
        _gen("--out", "   "),
        ("argument --out", NO_OUTPUT, "white space"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-config-out-empty",
        "data_gen",
        {"c.yaml": _cfg('out: ""\n')},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'out'", NO_OUTPUT, "''"),
        fix=Fix({"c.yaml": _cfg("out: {dir}/run\n")}),
    ),
    Case(
        "gen-config-out-blank",
        "data_gen",
        {"c.yaml": _cfg('out: "  "\n')},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'out'", NO_OUTPUT, "white space"),
        fix=Fix({"c.yaml": _cfg("out: {dir}/run\n")}),
    ),
    Case(
        "export-out-empty",
        "data_gen",
        {},
        _export("--out", ""),
        ("argument --out", NO_OUTPUT),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "pairs-out-blank",
        "data_gen",
        {},
        ["pairs", str(SMALL), "--out", " "],
        ("argument --out", NO_OUTPUT),
        fix=Fix(argv=["pairs", str(SMALL), "--out", "{dir}/pairs"]),
    ),
    Case(
        "build-benchmark-out-empty",
        "data_gen",
        {},
        ["build-benchmark", "--catalogue", str(TRAIN), "--split", "", "--out", "", "--quiet"],
        ("argument --out", NO_OUTPUT),
        fix=Fix(
            argv=[
                "build-benchmark",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    Case(
        "build-benchmark-work-dir-blank",
        "data_gen",
        {},
        [
            "build-benchmark",
            "--catalogue",
            str(TRAIN),
            "--split",
            "",
            "--out",
            "{dir}/b.jsonl",
            "--work-dir",
            "  ",
            "--quiet",
        ],
        ("argument --work-dir", NO_OUTPUT),
        fix=Fix(
            argv=[
                "build-benchmark",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--out",
                "{dir}/b.jsonl",
                "--work-dir",
                "{dir}/work",
                "--quiet",
            ]
        ),
    ),
    Case(
        "build-no-tool-split-out-empty",
        "data_gen",
        {},
        ["build-no-tool-split", "--catalogue", str(TRAIN), "--split", "", "--seeds", "1", "--out", ""],
        ("argument --out", NO_OUTPUT),
        fix=Fix(
            argv=[
                "build-no-tool-split",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--seeds",
                "1",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
]

FIXES: dict[str, Fix] = {
    "config-not-utf8": CFG_OK,
    "config-concurrency-lots": Fix({"c.yaml": _cfg("concurrency: 2\n")}),
    "config-k-2.7-before-encoder": Fix({"c.yaml": _cfg("k: 2\nencoder: tfidf\n")}),
    "config-inf": Fix({"c.yaml": _cfg("roles: {user: {temperature: 1.0}}\n")}),
    "config-alias-bomb": CFG_OK,
    "config-too-deep": CFG_OK,
    "config-unknown-encoder": Fix({"c.yaml": _cfg("encoder: tfidf\n")}),
    "config-unknown-key": CFG_OK,
    "config-yaml-syntax": CFG_OK,
    "config-not-a-mapping": CFG_OK,
    "config-num-dialogues-negative": CFG_OK,
    "config-t-max-0": Fix({"c.yaml": _cfg("t_max: 4\n")}),
    "config-temperature-not-a-number": Fix({"c.yaml": _cfg("roles: {user: {temperature: 0.7}}\n")}),
    "config-k-five": Fix({"c.yaml": _cfg("k: 5\n")}),
    "config-validators-string-no": Fix({"c.yaml": _cfg("validators: false\n")}),
    "config-unknown-key-suggested": Fix({"c.yaml": _cfg("t_max: 4\n")}),
    "config-renamed-key-named": Fix({"c.yaml": _cfg("wording: heldout\n")}),
    "config-role-setting-wrong-type": Fix({"c.yaml": _cfg("roles: {critique: {max_retries: 1}}\n")}),
    "config-missing": Fix({"missing.yaml": _cfg("")}),
    "out-is-a-file": Fix(argv=["generate", "--catalogue", str(TRAIN), "--out", "{dir}/run"]),
    "num-dialogues-0": Fix(argv=["generate", "--catalogue", str(TRAIN), "--num-dialogues", "1"]),
    "k-not-a-number": Fix(argv=["generate", "--catalogue", str(TRAIN), "--k", "2"]),
    "concurrency-0": Fix(
        argv=["generate", "--catalogue", str(TRAIN), "--concurrency", "1", "--out", "{dir}/run"]
    ),
    "shard-index-out-of-range": Fix(
        argv=[
            "generate",
            "--catalogue",
            str(TRAIN),
            "--num-shards",
            "2",
            "--shard-index",
            "0",
            "--out",
            "{dir}/run",
        ]
    ),
    "catalogue-missing": Fix({"missing.json": CAT_OK}),
    "catalogue-empty": CAT_FIX,
    "catalogue-bad-json": CAT_FIX,
    "catalogue-tool-without-name": CAT_FIX,
    "personas-missing": Fix({"nope.jsonl": PERSONAS_OK}),
    "personas-bad-json": Fix({"p.jsonl": PERSONAS_OK}),
    "dialogues-bad-json": DIALOGUES_FIX,
    "dialogues-missing-field": DIALOGUES_FIX,
    "catalogue-nested-100000": CAT_FIX,
    "catalogue-not-utf8": CAT_FIX,
    "catalogue-inf": CAT_FIX,
    "catalogue-yaml-alias-bomb": Fix({"cat.yaml": CAT_OK}),  # JSON is YAML
    "personas-not-utf8": Fix({"p.jsonl": PERSONAS_OK}),
    "dialogues-not-utf8": DIALOGUES_FIX,
    "dialogues-nested-100000": DIALOGUES_FIX,
    "dialogues-surrogate": DIALOGUES_FIX,
}
attach_fixes(CASES, FIXES)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_bad_input(case, tmp_path, capsys, monkeypatch)


def test_a_60_mb_catalogue_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 60 MB catalogue once took 139 s and 14 GB of RSS. It is refused before it is read,
    naming the limit and the way around it; so is a small file of more tools than the limit."""
    from diaforge.data_gen.catalogue import MAX_TOOLS
    from diaforge.data_gen.cli import main

    tools = json.loads(CAT_OK)
    big = tmp_path / "big.json"
    with big.open("w", encoding="utf-8") as fh:
        fh.write("[")
        i, size = 0, 0
        while size < 60 * 1024 * 1024:
            text = json.dumps({**tools[i % len(tools)], "name": f"tool_{i}"})
            fh.write(("," if i else "") + text)
            size += len(text) + 1
            i += 1
        fh.write("]")
    started = time.perf_counter()
    assert main(["analyze", "--catalogue", str(big), "--encoder", "tfidf"]) == 2
    assert time.perf_counter() - started < 5
    line = capsys.readouterr().err.strip()
    assert "big.json" in line and "over the limit" in line and "split it" in line, line
    many = tmp_path / "many.jsonl"
    many.write_text(
        "".join(json.dumps({"name": f"t{i}"}) + "\n" for i in range(MAX_TOOLS + 1)), encoding="utf-8"
    )
    assert main(["analyze", "--catalogue", str(many), "--encoder", "tfidf"]) == 2
    line = capsys.readouterr().err.strip()
    assert "many.jsonl" in line and f"{MAX_TOOLS + 1:,} tools" in line and "split it" in line, line
