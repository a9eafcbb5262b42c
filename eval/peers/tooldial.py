"""ToolDial (Shim et al., ICLR 2025) importer: its dialogue JSON (``train.json``, ``val.json``,
``test.json``; a JSON array of dialogues) into our schema, keeping dialogue states and retriever
status as metadata.

A ToolDial dialogue, as the official generator writes it (``dialogue_generation/*/dial_post.py``;
system fields after ``dialogue_generation/scenario_prompt.py``)::

    {"subgraph_type": "yesyes", "source": "<api>", "target": "<api>", "mockdata": {...},
     "dialogue": [{"User": {"message": "...", "action": "inform_intent_clear"}},
                  {"System": {"thought": "...", "action": "retriever_call", "message": "",
                              "retriever_status": {"retriever_call": "true",
                                                   "retrieved_api": {"<api>": 0.83}},
                              "api_request": {}, "api_response": {},
                              "dialogue_state": {"api_confirmed": "false", "api_status": "none"}}},
                  {"System": {..., "action": "call",
                              "retriever_status": {"retriever_call": "false", "retrieved_api": "none"},
                              "api_request": {"api_name": "...", "required_parameters": {...},
                                              "optional_parameters": {...}},
                              "api_response": {"api_name": "...", "result": {...}},
                              "dialogue_state": {"api_confirmed": "true",
                                                 "api_status": {"api_name": "...",
                                                                "required_parameters": {...},
                                                                "optional_parameters": {...},
                                                                "system_action": "call"}}}}, ...]}

Read as it is: an unconfirmed state's ``api_status`` is the string ``"none"``; a state written
whole as a string (``"none"`` or a serialised object) is parsed; ``retrieved_api`` is an object
``{api: score}``, ``"none"``, or a list of API names (the retrieval for a chained API, to which
post-processing appends the note "Output to procure input parameter <p> of <target>: <output>",
counted as ``chain_notes`` and kept in the metadata, never taken for an API). Actions in any of
ToolDial's spellings (``retriever_call``, ``retrievercall``, ``Retriever call``) are normalised by
ToolDial's own rule (lower case, letters only, "action"/"api" dropped).

Mapping. A ``User`` turn becomes a user turn (its action in ``metadata["action"]``). A ``System``
turn becomes an assistant turn labelled with its action (one of our eight ToolDial actions,
else the record is rejected) and the CONFETTI act that action implies; its thought, and its
``dialogue_state``, ``retriever_status``, ``api_request`` and ``api_response`` in the metadata. A
``call`` turn carries one call to ``dialogue_state.api_status.api_name`` (else
``api_request.api_name``) whose arguments are the non-empty parameters of that state, with those of
``api_request`` for the same API filling gaps; a ``retriever_call`` turn one call to the pseudo
tool ``retriever`` (no arguments; it is not a candidate tool); other turns carry their message
(or the ``message`` of their ``api_response``). `seed_tool` is the ``target`` API and `gold_args`
the arguments of the last call to it (none when it is never called, as in the failure sequence).
Consecutive system turns stay consecutive, as in ToolDial.

Candidate tools: ``source``, ``target``, every called API and every retrieved API, documented from
ToolDial's API file (``after_coor_before_emb.json``: ``full_name``, ``description``,
``required_parameters`` / ``optional_parameters`` as ``[{name, type?, object_long|description}]``)
when one is given, else built from what the dialogues show (parameter names, untyped; counted as
``undocumented_apis``). API names are kept as they are (``Finance|quotient|/crypto/intraday``).

Counts reported: dialogues, user turns, system turns, actions per label, call turns, dialogue
states (system turns with one), Response turns, user actions per label and those outside
ToolDial's eight (kept, not rejected: user actions are metadata here).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import ImportReport, ImportResult, make_dialogue, read_json
from diaforge.json_schema import normalise_type
from diaforge.schema import ACT_OF_ACTION, Dialogue, Tool, ToolCall, Turn

__all__ = ["SYSTEM_ACTIONS", "USER_ACTIONS", "load_tooldial", "tool_from_tooldial_doc", "tooldial_action"]

SYSTEM_ACTIONS = tuple(ACT_OF_ACTION)
USER_ACTIONS = (
    "inform_intent_clear",
    "inform_intent_clear_add",
    "inform_intent_vague",
    "inform",
    "fail_inform",
    "affirm",
    "negate",
    "user_bye",
)
RETRIEVER = "retriever"
CHAIN_NOTE = "Output to procure input parameter"
_BOOL_STRINGS = ("true", "false")
_NONE_STRINGS = ("none", "", "null")
_PARAM_KEYS = ("required_parameters", "optional_parameters", "input_parameter")


def _snake(action: str) -> str:
    return "_".join(action.strip().lower().replace("-", " ").split())


def _param_schema(p: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"description": str(p.get("object_long") or p.get("description") or "")}
    raw = p.get("type")
    if isinstance(raw, str):
        try:
            kind, fmt = normalise_type(raw.split()[0] if raw.strip() else raw)
        except ValueError:
            kind, fmt = None, None
        if kind:
            spec["type"] = kind
        if fmt:
            spec["format"] = fmt
    return spec


def tool_from_tooldial_doc(doc: dict[str, Any]) -> Tool:
    """A `Tool` from one entry of ToolDial's API file (unknown parameter types are left untyped)."""
    name = doc.get("full_name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("API entry needs a 'full_name'")
    props: dict[str, Any] = {}
    required = []
    for key in ("required_parameters", "optional_parameters"):
        params = doc.get(key) or []
        if not isinstance(params, list):
            raise ValueError(f"{name}: '{key}' must be a list")
        for p in params:
            if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                raise ValueError(f"{name}: every entry of '{key}' needs a name")
            props[p["name"]] = _param_schema(p)
            if key == "required_parameters":
                required.append(p["name"])
    return Tool(
        name=name.strip(),
        description=str(doc.get("description") or ""),
        parameters={"type": "object", "properties": props, "required": list(dict.fromkeys(required))},
        metadata={"source": "tooldial"},
    )


def _load_docs(path: str | Path) -> dict[str, Tool]:
    docs = read_json(path)
    if not isinstance(docs, list):
        raise InputError("expected a JSON array of API entries", path=path)
    out = {}
    for i, doc in enumerate(docs):
        try:
            if not isinstance(doc, dict):
                raise ValueError("API entry must be an object")
            tool = tool_from_tooldial_doc(doc)
        except ValueError as exc:
            raise InputError(str(exc), path=path, record=f"entry {i}") from None
        out[tool.name] = tool
    return out


class _Bad(Exception):
    pass


def _squash(text: str) -> str:
    """ToolDial's action normaliser: lower case, letters only, the words "action" and "api" dropped
    (``experiments/action_train_dist_normal.py``: ``normalize_action``)."""
    return re.sub(r"[^a-z]", "", text.lower()).replace("action", "").replace("api", "")


_SQUASHED = {_squash(a): a for a in (*SYSTEM_ACTIONS, *USER_ACTIONS)}


def tooldial_action(label: str) -> str:
    """Our snake-case action for any ToolDial spelling (``retriever_call``, ``retrievercall``,
    ``Retriever call``, ``System bye``); an unknown label comes back snake-cased."""
    return _SQUASHED.get(_squash(label)) or _snake(label)


def _bool_string(value: Any, what: str) -> None:
    if value is not None and value not in _BOOL_STRINGS and not isinstance(value, bool):
        raise _Bad(f"{what} must be 'true' or 'false', got {value!r}")


def _literal(text: str) -> Any:
    """A JSON or Python-literal document written as a string (ToolDial's generator serialises
    states with ``str(dict)``); the string itself when it is neither."""
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text


def _read_state(state: Any, k: int) -> dict[str, Any] | None:
    """The dialogue state of turn `k` as an object. ToolDial writes the state of an unconfirmed
    turn as ``{"api_confirmed": "false", "api_status": "none"}`` (a string status); a state written
    whole as a string (``"none"``, or a serialised object) is read too."""
    if state is None:
        return None
    if isinstance(state, str):
        state = _literal(state.strip())
        if isinstance(state, str):
            if state.strip().lower() in _NONE_STRINGS:
                return {"api_confirmed": "false", "api_status": "none"}
            raise _Bad(f"turn {k}: dialogue_state must be an object or 'none', got {state[:40]!r}")
    if not isinstance(state, dict):
        raise _Bad(f"turn {k}: dialogue_state must be an object")
    _bool_string(state.get("api_confirmed"), f"turn {k}: dialogue_state.api_confirmed")
    status = state.get("api_status")
    if isinstance(status, str) and status.strip().lower() not in _NONE_STRINGS:
        parsed = _literal(status.strip())
        if not isinstance(parsed, dict):
            raise _Bad(
                f"turn {k}: dialogue_state.api_status must be an object or 'none', got {status[:40]!r}"
            )
        state = {**state, "api_status": parsed}
        status = parsed
    elif status is not None and not isinstance(status, (dict, str)):
        raise _Bad(f"turn {k}: dialogue_state.api_status must be an object or 'none'")
    if isinstance(status, dict):
        for key in _PARAM_KEYS:
            if status.get(key) is not None and not isinstance(status[key], dict):
                raise _Bad(f"turn {k}: dialogue_state.api_status.{key} must be an object")
    return state


def _status(state: dict[str, Any] | None) -> dict[str, Any]:
    status = (state or {}).get("api_status")
    return status if isinstance(status, dict) else {}


def _params(block: dict[str, Any]) -> dict[str, Any]:
    """Non-empty parameters of an ``api_status`` or ``api_request`` (required, optional, and the
    generator's raw ``input_parameter``)."""
    args = {}
    for key in _PARAM_KEYS:
        for k, v in (block.get(key) or {}).items():
            if v not in (None, "", [], {}):
                args[k] = v
    return args


def _param_names(block: dict[str, Any]) -> list[str]:
    return [k for key in _PARAM_KEYS for k in (block.get(key) or {})]


def _retrieved(retr: dict[str, Any], k: int) -> tuple[list[str], list[str]]:
    """(API names, chain notes) of a ``retrieved_api``: an object ``{api: score}``, a list of API
    names in which ToolDial's post-processing appends the chain note ("Output to procure input
    parameter <p> of <target>: <component>") when one API is listed, or ``"none"``."""
    value = retr.get("retrieved_api")
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE_STRINGS):
        return [], []
    if isinstance(value, dict):
        return [str(a) for a in value], []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise _Bad(f"turn {k}: retriever_status.retrieved_api must be an object, a list or 'none'")
    names, notes = [], []
    for item in value:
        if isinstance(item, (list, tuple)) and item:
            item = item[0]
        if not isinstance(item, str):
            raise _Bad(f"turn {k}: retriever_status.retrieved_api lists {item!r}, not an API name")
        (notes if item.startswith(CHAIN_NOTE) else names).append(item)
    return names, notes


def _convert(
    raw: Any, counts: Counter, seen_params: dict[str, set[str]]
) -> tuple[list[Turn], str, str, list[str]]:
    """(turns, source API, target API, the APIs it names) of one ToolDial dialogue."""
    if not isinstance(raw, dict):
        raise _Bad("a dialogue must be an object")
    source, target = raw.get("source"), raw.get("target")
    if not isinstance(target, str) or not target:
        raise _Bad("'target' must name an API")
    if source is not None and not isinstance(source, str):
        raise _Bad("'source' must name an API")
    turns_raw = raw.get("dialogue")
    if not isinstance(turns_raw, list) or not turns_raw:
        raise _Bad("'dialogue' must be a non-empty list of turns")
    turns: list[Turn] = []
    apis: list[str] = []
    for k, item in enumerate(turns_raw):
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in ("User", "System"):
            raise _Bad(f"turn {k} must be {{'User': ...}} or {{'System': ...}}")
        who, body = next(iter(item.items()))
        if not isinstance(body, dict) or not isinstance(body.get("action"), str):
            raise _Bad(f"turn {k}: {who} turn needs an 'action'")
        action = tooldial_action(body["action"])
        if who == "User":
            turns.append(_user_turn(body, action, k, counts))
        else:
            turns.append(_system_turn(body, action, k, counts, seen_params, apis))
    apis = [a for a in [source, target, *apis] if a]
    return turns, source or "", target, list(dict.fromkeys(apis))


def _user_turn(body: dict[str, Any], action: str, k: int, counts: Counter) -> Turn:
    if not isinstance(body.get("message"), str):
        raise _Bad(f"turn {k}: user turn needs a 'message'")
    counts[f"user_action:{action}"] += 1
    if action not in USER_ACTIONS:
        counts["unknown_user_actions"] += 1
    return Turn(role="user", content=body["message"], metadata={"action": action})


def _retriever_status(
    body: dict[str, Any], k: int, counts: Counter, apis: list[str]
) -> dict[str, Any] | None:
    """A system turn's ``retriever_status`` as an object; the APIs it retrieved go to `apis`."""
    retr = body.get("retriever_status")
    if isinstance(retr, str):
        retr = _literal(retr.strip())
    if retr is not None and not isinstance(retr, dict):
        raise _Bad(f"turn {k}: retriever_status must be an object")
    if retr:
        _bool_string(retr.get("retriever_call"), f"turn {k}: retriever_status.retriever_call")
        names, notes = _retrieved(retr, k)
        apis.extend(names)
        counts["chain_notes"] += len(notes)
        counts["retrieved_lists"] += isinstance(retr.get("retrieved_api"), list)
    return retr


def _system_calls(
    action: str, status: dict[str, Any], request: dict[str, Any] | None, k: int, apis: list[str]
) -> list[ToolCall]:
    """The calls of a system turn: the API call of a ``call`` turn (its name joins `apis`), the
    retriever for ``retriever_call``, none otherwise."""
    if action == "call":
        name = status.get("api_name") or (request or {}).get("api_name")
        if not isinstance(name, str) or not name:
            raise _Bad(
                f"turn {k}: a call turn needs dialogue_state.api_status.api_name or api_request.api_name"
            )
        # the state is what ToolDial scores; api_request (when it names the same API) fills gaps
        args = {
            **(_params(request) if request and request.get("api_name") == name else {}),
            **_params(status),
        }
        apis.append(name)
        return [ToolCall(name=name, args=args)]
    if action == "retriever_call":
        return [ToolCall(name=RETRIEVER, args={})]
    return []


def _system_turn(
    body: dict[str, Any],
    action: str,
    k: int,
    counts: Counter,
    seen_params: dict[str, set[str]],
    apis: list[str],
) -> Turn:
    if action not in SYSTEM_ACTIONS:
        raise _Bad(
            f"turn {k}: unknown system action {body['action']!r} (expected one of {', '.join(SYSTEM_ACTIONS)})"
        )
    state = _read_state(body.get("dialogue_state"), k)
    retr = _retriever_status(body, k, counts, apis)
    request = body.get("api_request")
    if request is not None and not isinstance(request, dict):
        raise _Bad(f"turn {k}: api_request must be an object")
    response = body.get("api_response")
    meta = {
        k2: v
        for k2, v in (
            ("dialogue_state", state),
            ("retriever_status", retr),
            ("api_request", request or None),
            ("api_response", response),
        )
        if v is not None
    }
    counts[f"action:{action}"] += 1
    counts["system_turns"] += 1
    counts["dialogue_states"] += state is not None
    thought = body.get("thought") if isinstance(body.get("thought"), str) else None
    status = _status(state)
    for block in (status, request or {}):
        name = block.get("api_name")
        if isinstance(name, str) and name:
            seen_params.setdefault(name, set()).update(_param_names(block))
    calls = _system_calls(action, status, request, k, apis)
    message = body.get("message")
    if not isinstance(message, str):
        message = (
            response.get("message")
            if isinstance(response, dict) and isinstance(response.get("message"), str)
            else ""
        )
    return Turn(
        role="assistant",
        content="" if calls else message,
        thought=thought,
        tool_calls=calls or None,
        act=ACT_OF_ACTION[action],
        action=action,
        metadata=meta,
    )


def _minimal_tool(name: str, params: set[str]) -> Tool:
    return Tool(
        name=name,
        description="",
        parameters={
            "type": "object",
            "properties": {p: {"description": ""} for p in sorted(params)},
            "required": [],
        },
        metadata={"source": "tooldial", "documented": False},
    )


def load_tooldial(src: str | Path, *, api_docs: str | Path | None = None) -> ImportResult:
    """Import ToolDial dialogues from a file (``test.json``) or a folder of ``train/val/test.json``;
    `api_docs` is ToolDial's API file. A malformed record raises `InputError` naming the file and
    the record (its index in the array)."""
    p = Path(src)
    if p.is_dir():
        files = [p / f"{split}.json" for split in ("train", "val", "test") if (p / f"{split}.json").exists()]
        if not files:
            raise InputError("no train.json, val.json or test.json in this folder", path=p)
    else:
        files = [p]
    docs = _load_docs(api_docs) if api_docs is not None else {}
    report = ImportReport(source="tooldial", path=str(p))
    counts: Counter = Counter()
    dialogues: list[Dialogue] = []
    per_file: dict[str, int] = {}
    for path in files:
        data = read_json(path)
        if not isinstance(data, list):
            raise InputError("expected a JSON array of dialogues", path=path)
        n_before = len(dialogues)
        for i, raw in enumerate(data):
            seen_params: dict[str, set[str]] = {}
            try:
                turns, source, target, apis = _convert(raw, counts, seen_params)
            except _Bad as exc:
                raise InputError(str(exc), path=path, record=f"dialogue {i}") from None
            tools = []
            for api in apis:
                if api in docs:
                    tools.append(docs[api])
                else:
                    counts["undocumented_apis"] += 1
                    tools.append(_minimal_tool(api, seen_params.get(api, set())))
            target_calls = [c for t in turns for c in t.tool_calls or [] if c.name == target]
            d: Dialogue = make_dialogue(
                "tooldial",
                {"file": path.name, "index": i, "source": source, "target": target},
                path=path,
                record=f"dialogue {i}",
                entry_id=f"tooldial-{path.stem}-{i:05d}",
                seed_tool=target,
                candidate_tools=tools,
                gold_args=dict(target_calls[-1].args) if target_calls else {},
                turns=turns,
            )
            counts["user_turns"] += sum(1 for t in turns if t.role == "user")
            counts["call_turns"] += sum(1 for t in turns if t.action == "call")
            dialogues.append(d)
        per_file[path.name] = len(dialogues) - n_before
    report.loaded = len(dialogues)
    report.counts = {
        "dialogues": len(dialogues),
        "per_file": per_file,
        "user_turns": counts["user_turns"],
        "system_turns": counts["system_turns"],
        "actions": {a: counts[f"action:{a}"] for a in SYSTEM_ACTIONS if counts[f"action:{a}"]},
        "call_turns": counts["call_turns"],
        "dialogue_states": counts["dialogue_states"],
        "response_turns": counts["action:response"],
        "user_actions": {
            k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("user_action:")
        },
        "unknown_user_actions": counts["unknown_user_actions"],
        "retrieved_lists": counts["retrieved_lists"],
        "chain_notes": counts["chain_notes"],
        "undocumented_apis": counts["undocumented_apis"],
    }
    return ImportResult(dialogues, report)
