"""DialogTool (Wang et al., "Rethinking Stateful Tool Use in Multi-Turn Dialogues") importer, for the
format its paper describes: DialogTool has published neither code nor data (no repository or data
set found by name on 2026-11-23), so this reads records laid out as the paper describes them.

Apps (``apps.json``, the paper's Appendix B.3 / Figure 5, field for field)::

    {App: {"desc", "base_required_arguments": {"name (type)": desc},
           "APIs": {api: {"desc", "is_transactional": "True" | "False" | bool,
                          "additional_required_arguments": {"name (type)": desc},
                          "optional_arguments": {...}, "result_arguments": {...}}}}}

An API can be called only when every base required argument of its App and every additional
required argument is filled (§3.2): both become the tool's ``required``. ``"name (type)"`` gives
the argument's name and type (str, int, float, bool, date, time; date and time are strings in the
formats their descriptions give, e.g. yyyy-mm-dd and hh:mm).

Dialogues (``dialogues.json``, a JSON array). The paper names the contents of a record but not
its keys; the keys below are ours, the contents are the paper's: the App(s) a dialogue uses
(36% of evaluation dialogues use several), the current date the prompts inject (Figure 9), the
role config of the role-play stage (§3.2: name, gender, MBTI type, language features, emotional
expressions, interaction patterns), and SGD-style turns whose System turns carry one of the nine
actions of Table 7 (the tool-awareness label), the API request in the paper's output format
``[api_name(#arg='value', ...)]`` when the turn calls one (tool selection and execution), the
call's results (the environment state e_t), the original system utterance (response generation)
and its role-consistent rewrite (role play)::

    {"dialogue_id", "apps": [App], "date": "yyyy-mm-dd", "role": {"name", "gender", "mbti",
     "language_features", "emotional_expressions", "interaction_patterns"},
     "turns": [{"speaker": "USER", "utterance"},
               {"speaker": "SYSTEM", "action": "Inform_Count", "api_call": "[getcarsavailable(...)]",
                "api_result": [...], "utterance", "role_utterance"}]}

Mapping. Each API of the dialogue's Apps becomes a candidate tool (named by the API; ``App.api``
when two Apps of one dialogue share an API name, as Media and Movies share FindMovies), its App,
transactional flag and result arguments in ``metadata``. A USER turn becomes a user turn; a
SYSTEM turn an assistant turn with the utterance as content, the call (``#`` dropped from the
argument names) as its tool call, ``metadata["dialogtool_action"]`` the action in snake case
(``inform_count``: what ``next-action --labels dialogtool`` scores), the results and the role
rewrite in ``metadata``, and our labels: a turn with a call is function_calling / call; otherwise
request and confirm -> seek_info (request: ``request``), inform, inform_count and notify_success ->
inform / response, notify_failure -> reject / response_fail, offer_intent -> seek_info, req_more and
goodbye -> other (goodbye: ``system_bye``). `seed_tool` is the first API called, its arguments the
gold arguments; a dialogue without a call has none.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import ImportReport, ImportResult, make_dialogue, need, parse_call_strings, read_json
from diaforge.eval.peers.next_action import DIALOGTOOL_ACTIONS
from diaforge.schema import Dialogue, Tool, ToolCall, Turn

__all__ = ["APPS_FILE", "DIALOGUES_FILE", "app_tools", "load_dialogtool", "parse_api_request"]

APPS_FILE = "apps.json"
DIALOGUES_FILE = "dialogues.json"
_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "date": "string"}
_TYPES.update({"time": "string", "list": "array", "dict": "object"})
_ARG = re.compile(r"^\s*([A-Za-z_][\w]*)\s*(?:\(\s*([A-Za-z]+)\s*\))?\s*$")
_LABELS = {
    "request": ("seek_info", "request"),
    "confirm": ("seek_info", None),
    "inform": ("inform", "response"),
    "inform_count": ("inform", "response"),
    "notify_success": ("inform", "response"),
    "notify_failure": ("reject", "response_fail"),
    "offer_intent": ("seek_info", None),
    "req_more": ("other", None),
    "goodbye": ("other", "system_bye"),
}


def _argument(key: str, desc: Any, where: str, path: Path) -> tuple[str, dict[str, Any]]:
    m = _ARG.match(key)
    if not m:
        raise InputError(f"{where}: argument {key!r} is not 'name (type)'", path=path)
    prop: dict[str, Any] = {"type": _TYPES.get((m.group(2) or "str").lower(), "string")}
    prop["description"] = str(desc)
    if (m.group(2) or "").lower() in ("date", "time"):
        prop["format"] = m.group(2).lower()
    return m.group(1), prop


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"


def app_tools(app: str, spec: Any, path: Path) -> list[Tool]:
    """The APIs of one App (Figure 5's schema) as tools."""
    need(
        isinstance(spec, dict) and isinstance(spec.get("APIs"), dict),
        f"{app}: needs an 'APIs' object",
        path,
        0,
    )
    base = spec.get("base_required_arguments") or {}
    tools = []
    for api, a in spec["APIs"].items():
        need(isinstance(a, dict), f"{app}.{api}: an API must be an object", path, 0)
        props: dict[str, Any] = {}
        required: list[str] = []
        for group in (base, a.get("additional_required_arguments") or {}):
            for key, desc in group.items():
                name, prop = _argument(key, desc, f"{app}.{api}", path)
                props[name] = prop
                required.append(name)
        for key, desc in (a.get("optional_arguments") or {}).items():
            name, prop = _argument(key, desc, f"{app}.{api}", path)
            props.setdefault(name, prop)
        meta = {
            "app": app,
            "is_transactional": _flag(a.get("is_transactional")),
            "result_arguments": a.get("result_arguments") or {},
        }
        tools.append(
            Tool(
                name=api,
                description=str(a.get("desc", "")),
                parameters={"type": "object", "properties": props, "required": required},
                metadata=meta,
            )
        )
    return tools


def parse_api_request(text: str) -> ToolCall:
    """A call in DialogTool's output format ``[api_name(#argument_1='value', ...)]`` (the ``#``
    is optional; a flat ``[app_name: api_name(...)]`` keeps the API name)."""
    body = re.sub(r"#\s*([A-Za-z_]\w*)\s*=", r"\1=", text.strip())
    body = re.sub(r"^\[\s*[A-Za-z_]\w*\s*:\s*", "[", body)
    calls = parse_call_strings(body)
    if len(calls) != 1:
        raise ValueError(f"expected one API request, found {len(calls)}")
    return calls[0]


def _system_turn(t: dict, names: dict[str, str], where: str, path: Path, i: int) -> Turn:
    raw = str(t.get("action", "")).strip()
    action = re.sub(r"[^a-z]+", "_", raw.lower()).strip("_")
    need(
        action in DIALOGTOOL_ACTIONS,
        f"{where}: action {raw!r} is not one of DialogTool's ({', '.join(DIALOGTOOL_ACTIONS)})",
        path,
        i,
    )
    calls = None
    if t.get("api_call"):
        try:
            call = parse_api_request(str(t["api_call"]))
        except (ValueError, SyntaxError) as exc:
            raise InputError(f"{where}: api_call: {exc}", path=path, record=i) from None
        need(call.name in names, f"{where}: api_call names unknown API {call.name!r}", path, i)
        calls = [call.model_copy(update={"name": names[call.name]})]
    act, ours = ("function_calling", "call") if calls else _LABELS[action]
    meta = {"dialogtool_action": action}
    for key in ("api_result", "role_utterance"):
        if key in t:
            meta[key] = t[key]
    return Turn(
        role="assistant",
        content=str(t.get("utterance", "")),
        tool_calls=calls,
        act=act,
        action=ours,
        metadata=meta,
    )


def _dialogue(rec: Any, apps: dict[str, Any], path: Path, i: int, counts: Counter) -> Dialogue:
    need(isinstance(rec, dict), f"record {i}: a dialogue must be an object", path, i)
    did = str(rec.get("dialogue_id", i))
    names_of = rec.get("apps") or []
    unknown = [a for a in names_of if a not in apps]
    need(bool(names_of) and not unknown, f"{did}: 'apps' must name Apps of {APPS_FILE} ({unknown})", path, i)
    tools = [t for a in names_of for t in apps[a]]
    clash = {n for n, c in Counter(t.name for t in tools).items() if c > 1}
    tools = [
        t.model_copy(update={"name": f"{t.metadata['app']}.{t.name}"}) if t.name in clash else t
        for t in tools
    ]
    names = {t.name: t.name for t in tools} | {t.name.split(".", 1)[-1]: t.name for t in tools}
    turns = []
    for j, t in enumerate(rec.get("turns") or []):
        speaker = str(t.get("speaker", "")).upper() if isinstance(t, dict) else ""
        need(speaker in ("USER", "SYSTEM"), f"{did}: turn {j}: speaker must be USER or SYSTEM", path, i)
        if speaker == "USER":
            turns.append(Turn(role="user", content=str(t.get("utterance", ""))))
        else:
            turns.append(_system_turn(t, names, f"{did}: turn {j}", path, i))
            counts[f"action:{turns[-1].metadata['dialogtool_action']}"] += 1
    need(bool(turns), f"{did}: 'turns' must be a non-empty list", path, i)
    first = next((c for t in turns for c in t.tool_calls or []), None)
    counts["calls"] += sum(len(t.tool_calls or []) for t in turns)
    extra = {k: rec[k] for k in ("date", "role", "apps") if k in rec}
    return make_dialogue(
        "dialogtool",
        extra,
        path=path,
        record=i,
        entry_id=did,
        seed_tool=first.name if first else None,
        candidate_tools=tools,
        gold_args=dict(first.args) if first else {},
        turns=turns,
    )


def load_dialogtool(src: str | Path, *, apps: str | Path | None = None) -> ImportResult:
    """Import a folder holding ``apps.json`` and ``dialogues.json`` (or a dialogues file, with
    `apps` or an ``apps.json`` beside it). A malformed record raises `InputError` naming the file
    and the record (its index in the array)."""
    p = Path(src)
    dialogues_path = p / DIALOGUES_FILE if p.is_dir() else p
    apps_path = Path(apps) if apps else dialogues_path.parent / APPS_FILE
    spec = read_json(apps_path)
    need(isinstance(spec, dict) and bool(spec), "apps must be an object of Apps (Figure 5)", apps_path, 0)
    app_map = {a: app_tools(a, s, apps_path) for a, s in spec.items()}
    data = read_json(dialogues_path)
    if not isinstance(data, list):
        raise InputError("expected a JSON array of dialogues", path=dialogues_path)
    report = ImportReport(source="dialogtool", path=str(p))
    counts: Counter = Counter()
    out = [_dialogue(rec, app_map, dialogues_path, i, counts) for i, rec in enumerate(data)]
    report.loaded = len(out)
    report.counts = {"apps": len(app_map), "apis": sum(len(v) for v in app_map.values()), **dict(counts)}
    return ImportResult(out, report)
