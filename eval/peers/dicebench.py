"""DICE-Bench (Jang et al., ACL 2025) importer: round files and the tool graph.

A round file (``round_<n>.json``) is a JSON array of instances::

    {"metadata": {"diag_id": 0, "user_personas": {"agent_a": "..."}, "functions": ["delete_todo_list"],
                  "params_ret_val": [{"function": "delete_todo_list", "parameters": {"title": "..."},
                                      "domain": "...", "return_value": {...}, "returned_nl": "..."}],
                  "category": "Persuassion_Deliberation_and_Negotiation", "task": "multi_round",
                  "round_num": 2, "agent_num": 2},
     "messages": [{"Round 1": [{"speaker": "agent_a", "message": "..."}, ...,
                               {"speaker": "AI Assistant", "message": "..."}]}, {"Round 2": [...]}]}

(``category`` is misspelled upstream and kept as is.) Tools: ``tool_docs.json`` (``{key: [{function,
desc, parameters: [{name, type, desc}], return}]}``) or the graph ``tool_graph.json`` (``{nodes:
[same entries], links: [{source, target}]}``; links name functions or index nodes; duplicates are
dropped and counted, not asserted away).

Mapping of an instance of N rounds. Round r's party messages become user turns, each tagged with
its speaker (``"agent_b: ..."``, speaker in ``metadata["speaker"]``); the round's ``AI Assistant``
message becomes an assistant turn holding the round's gold call (``params_ret_val[r-1]``: function
and parameters as given, mixed value types and garbled keys included), labelled
function_calling/call, with the message as ``metadata["tool_result"]`` (our schema has no tool
role) and the return value; a round with no ``AI Assistant`` message gets that turn at its end.
`seed_tool` / `gold_args` are the last round's call (the one a round-N query asks for).

Candidate tools (`tool_set`). DICE-Bench puts every one of its 124 documented tools in the prompt
of every query (``build_system_prompt_with_functions`` in ``src/inference/utils.py``), so the
default, ``"all"``, gives each instance the whole tool file, in the file's order. Without a tool
file, ``"all"`` is every function the imported instances call, inferred from the calls
(parameters typed from their values, all required), in first-seen order: the same set for every
instance, but only as wide as the files imported. ``"own"`` gives an instance only the 1-4
functions it calls (easier than the benchmark: not comparable with its numbers). An instance
calling a function the tool file lacks is skipped, with the reason counted. A documented tool
requires all its parameters (DICE-Bench fills every one) and keeps its document as
``metadata["doc"]`` (what DICE-Bench's item counter is shown). Party personas go to the
provenance.

Validation: every instance has N = ``round_num`` rounds in order (``Round 1`` .. ``Round N``) and
N gold calls; anything else is rejected with one line naming the file and the instance.

Scoring (exact match per round) and running a model on DICE-Bench's queries: `diaforge.eval.peers.dicebench_em`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import ImportReport, ImportResult, make_dialogue, read_json
from diaforge.json_schema import normalise_type
from diaforge.schema import Dialogue, Tool, ToolCall, Turn

__all__ = [
    "ASSISTANT_SPEAKER",
    "TOOL_SETS",
    "load_dice_graph",
    "load_dice_tools",
    "load_dicebench",
    "tool_from_dice_doc",
]

ASSISTANT_SPEAKER = "AI Assistant"


def tool_from_dice_doc(doc: dict[str, Any]) -> Tool:
    """A `Tool` from one DICE-Bench tool document (all parameters required; unknown types untyped)."""
    name = doc.get("function")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("tool entry needs a 'function' name")
    params = doc.get("parameters") or []
    if not isinstance(params, list):
        raise ValueError(f"{name}: 'parameters' must be a list")
    props: dict[str, Any] = {}
    for p in params:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise ValueError(f"{name}: every parameter needs a name")
        spec: dict[str, Any] = {"description": str(p.get("desc") or p.get("description") or "")}
        try:
            kind, fmt = normalise_type(p.get("type"))
        except ValueError:
            kind, fmt = None, None
        if kind:
            spec["type"] = kind
        if fmt:
            spec["format"] = fmt
        props[p["name"]] = spec
    return Tool(
        name=name.strip(),
        description=str(doc.get("desc") or doc.get("description") or ""),
        parameters={"type": "object", "properties": props, "required": list(props)},
        metadata={"source": "dicebench", "return": doc.get("return"), "doc": doc},
    )


def _entries(data: Any, path: Path) -> list[Any]:
    if isinstance(data, dict) and isinstance(data.get("nodes"), list):
        return data["nodes"]
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        return [e for v in data.values() for e in v]
    if isinstance(data, list):
        return data
    raise InputError(
        "expected {key: [tool entries]}, {nodes: [...], links: [...]} or a list of tool entries", path=path
    )


def load_dice_tools(path: str | Path) -> dict[str, Tool]:
    """Tools by name from ``tool_docs.json`` or ``tool_graph.json`` (first entry of a name wins)."""
    p = Path(path)
    out: dict[str, Tool] = {}
    for i, doc in enumerate(_entries(read_json(p), p)):
        try:
            if not isinstance(doc, dict):
                raise ValueError("tool entry must be an object")
            tool = tool_from_dice_doc(doc)
        except ValueError as exc:
            raise InputError(str(exc), path=p, record=f"tool {i}") from None
        out.setdefault(tool.name, tool)
    return out


def load_dice_graph(path: str | Path) -> dict[str, Any]:
    """The tool graph: ``{"nodes": [names], "edges": [[source, target], ...], "duplicate_links": n,
    "self_loops": n}``, edges deduplicated in first-seen order."""
    p = Path(path)
    data = read_json(p)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("nodes"), list)
        or not isinstance(data.get("links"), list)
    ):
        raise InputError("expected a node-link graph: {nodes: [...], links: [...]}", path=p)
    names: list[str] = []
    ids: dict[Any, str] = {}
    for i, node in enumerate(data["nodes"]):
        name = node.get("function", node.get("id")) if isinstance(node, dict) else None
        if not isinstance(name, str):
            raise InputError("node needs a 'function' (or string 'id')", path=p, record=f"node {i}")
        names.append(name)
        ids[i] = name
        if isinstance(node, dict) and "id" in node:
            ids[node["id"]] = name
    known = set(names)
    edges: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    dupes = loops = 0
    for i, link in enumerate(data["links"]):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise InputError("link needs a source and a target", path=p, record=f"link {i}")
        ends = []
        for end in (link["source"], link["target"]):
            name = end if isinstance(end, str) and end in known else ids.get(end)
            if name is None:
                raise InputError(f"link names an unknown node {end!r}", path=p, record=f"link {i}")
            ends.append(name)
        edge = (ends[0], ends[1])
        loops += edge[0] == edge[1]
        if edge in seen:
            dupes += 1
            continue
        seen.add(edge)
        edges.append(edge)
    return {"nodes": names, "edges": [list(e) for e in edges], "duplicate_links": dupes, "self_loops": loops}


def _infer_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _inferred_tool(name: str, calls: list[dict[str, Any]]) -> Tool:
    props: dict[str, Any] = {}
    for c in calls:
        for k, v in c["parameters"].items():
            kind = _infer_type(v)
            props.setdefault(k, {"description": "", **({"type": kind} if kind else {})})
    return Tool(
        name=name,
        parameters={"type": "object", "properties": props, "required": list(props)},
        metadata={"source": "dicebench", "documented": False},
    )


class _Bad(Exception):
    pass


def _validate(inst: Any) -> tuple[dict[str, Any], list[list[dict[str, str]]]]:
    if not isinstance(inst, dict) or not isinstance(inst.get("metadata"), dict):
        raise _Bad("an instance needs a 'metadata' object")
    meta = inst["metadata"]
    n = meta.get("round_num")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise _Bad("metadata.round_num must be a positive integer")
    calls = meta.get("params_ret_val")
    if not isinstance(calls, list) or len(calls) != n:
        got = len(calls) if isinstance(calls, list) else type(calls).__name__
        raise _Bad(f"metadata.params_ret_val must hold one gold call per round ({n}), got {got}")
    for k, c in enumerate(calls):
        if (
            not isinstance(c, dict)
            or not isinstance(c.get("function"), str)
            or not isinstance(c.get("parameters"), dict)
        ):
            raise _Bad(f"metadata.params_ret_val[{k}] needs a 'function' name and a 'parameters' object")
    messages = inst.get("messages")
    if not isinstance(messages, list) or len(messages) != n:
        got = len(messages) if isinstance(messages, list) else type(messages).__name__
        raise _Bad(f"'messages' must hold {n} rounds, got {got}")
    rounds = []
    for r, block in enumerate(messages, start=1):
        key = f"Round {r}"
        if not isinstance(block, dict) or list(block) != [key] or not isinstance(block[key], list):
            raise _Bad(f"messages[{r - 1}] must be {{{key!r}: [messages]}}")
        for j, m in enumerate(block[key]):
            if (
                not isinstance(m, dict)
                or not isinstance(m.get("speaker"), str)
                or not isinstance(m.get("message"), str)
            ):
                raise _Bad(f"{key} message {j} needs a string 'speaker' and 'message'")
        rounds.append(block[key])
    return meta, rounds


def _files(src: Path) -> list[Path]:
    if src.is_dir():
        files = sorted(src.glob("round_*.json"))
        if not files:
            raise InputError("no round_*.json file in this folder", path=src)
        return files
    return [src]


TOOL_SETS = ("all", "own")
"""`load_dicebench(tool_set=...)`: every documented tool in every prompt (DICE-Bench's setting,
the default), or only the functions an instance calls."""


def load_dicebench(
    src: str | Path,
    *,
    tools: str | Path | None = None,
    graph: str | Path | None = None,
    tool_set: str = "all",
) -> ImportResult:
    """Import DICE-Bench instances from a round file or a folder of ``round_*.json``. `tools` is
    ``tool_docs.json`` or ``tool_graph.json`` (documents the candidate tools); `graph` a
    ``tool_graph.json`` whose node and edge counts go into the report; `tool_set` "all" (every
    tool in every instance, as DICE-Bench prompts) or "own" (module docstring)."""
    if tool_set not in TOOL_SETS:
        raise InputError(f"unknown DICE-Bench tool set {tool_set!r}; use one of {', '.join(TOOL_SETS)}")
    p = Path(src)
    docs = load_dice_tools(tools) if tools is not None else None
    report = ImportReport(source="dicebench", path=str(p))
    counts: Counter = Counter()
    dialogues: list[Dialogue] = []
    inferred_calls: dict[str, list[dict[str, Any]]] = {}
    for path in _files(p):
        data = read_json(path)
        if not isinstance(data, list):
            raise InputError("expected a JSON array of instances", path=path)
        for i, inst in enumerate(data):
            try:
                meta, rounds = _validate(inst)
            except _Bad as exc:
                raise InputError(str(exc), path=path, record=f"instance {i}") from None
            candidates = _candidates(meta["params_ret_val"], docs, tool_set, inferred_calls)
            if isinstance(candidates, str):
                report.skip(candidates)
                continue
            dialogues.append(_instance_dialogue(path, i, meta, rounds, candidates, counts))
    if docs is None and tool_set == "all":
        every = [_inferred_tool(n, cs) for n, cs in inferred_calls.items()]
        dialogues = [d.model_copy(update={"candidate_tools": every}) for d in dialogues]
    ids = Counter(d.id for d in dialogues)
    dupes = [k for k, v in ids.items() if v > 1]
    if dupes:
        raise InputError(
            f"instance id {dupes[0]!r} occurs {ids[dupes[0]]} times (same file stem and diag_id)", path=p
        )
    report.loaded = len(dialogues)
    report.counts = _report_counts(dialogues, counts, docs, tool_set, graph)
    return ImportResult(dialogues, report)


def _candidates(
    calls: list[dict[str, Any]],
    docs: Mapping[str, Tool] | None,
    tool_set: str,
    inferred_calls: dict[str, list[dict[str, Any]]],
) -> list[Tool] | str:
    """An instance's candidate tools, or the reason to skip it (a function the tool file lacks).
    Without a tool file the calls are also gathered into `inferred_calls` for ``tool_set="all"``."""
    names = list(dict.fromkeys(c["function"] for c in calls))
    if docs is not None:
        missing = [n for n in names if n not in docs]
        if missing:
            return f"function not in the tool file: {missing[0]}"
        return list(docs.values()) if tool_set == "all" else [docs[n] for n in names]
    for c in calls:
        inferred_calls.setdefault(c["function"], []).append(c)
    return [_inferred_tool(n, [c for c in calls if c["function"] == n]) for n in names]


def _round_turns(
    rounds: list[list[dict[str, str]]], calls: list[dict[str, Any]], counts: Counter
) -> list[Turn]:
    """The turns of an instance (module docstring): each round's party messages as user turns,
    its AI Assistant message as the assistant turn holding the round's gold call."""
    turns: list[Turn] = []
    for r, (messages, call) in enumerate(zip(rounds, calls, strict=True), start=1):
        gold = Turn(
            role="assistant",
            tool_calls=[ToolCall(name=call["function"], args=dict(call["parameters"]))],
            act="function_calling",
            action="call",
            metadata={
                "round": r,
                "return_value": call.get("return_value"),
                "returned_nl": call.get("returned_nl"),
            },
        )
        placed = False
        for m in messages:
            if m["speaker"] == ASSISTANT_SPEAKER:
                gold.metadata["tool_result"] = m["message"]
                turns.append(gold)
                placed = True
            else:
                turns.append(
                    Turn(
                        role="user",
                        content=f"{m['speaker']}: {m['message']}",
                        metadata={"speaker": m["speaker"], "round": r},
                    )
                )
                counts["user_utterances"] += 1
        if not placed:
            turns.append(gold)
            counts["rounds_without_assistant_message"] += 1
    return turns


def _instance_dialogue(
    path: Path,
    i: int,
    meta: dict[str, Any],
    rounds: list[list[dict[str, str]]],
    candidates: list[Tool],
    counts: Counter,
) -> Dialogue:
    """Instance `i` of round file `path` as a dialogue; its seed is the last round's call."""
    calls = meta["params_ret_val"]
    turns = _round_turns(rounds, calls, counts)
    last = calls[-1]
    extra = {
        "file": path.name,
        "diag_id": meta.get("diag_id"),
        "round_num": meta["round_num"],
        "agent_num": meta.get("agent_num"),
        "category": meta.get("category"),
        "task": meta.get("task"),
        "user_personas": meta.get("user_personas"),
        "functions": meta.get("functions"),
    }
    d = make_dialogue(
        "dicebench",
        extra,
        path=path,
        record=f"instance {i}",
        entry_id=f"dice-{path.stem}-{meta.get('diag_id', i)}",
        seed_tool=last["function"],
        candidate_tools=candidates,
        gold_args=dict(last["parameters"]),
        turns=turns,
    )
    counts[f"round:{meta['round_num']}"] += 1
    counts[f"agents:{meta.get('agent_num')}"] += 1
    counts[f"category:{meta.get('category')}"] += 1
    counts["gold_calls"] += len(calls)
    return d


def _by_prefix(counts: Counter, prefix: str) -> dict[str, int]:
    return {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith(prefix)}


def _report_counts(
    dialogues: list[Dialogue],
    counts: Counter,
    docs: Mapping[str, Tool] | None,
    tool_set: str,
    graph: str | Path | None,
) -> dict[str, Any]:
    """The import report's counts: instances by round, party count and type, calls, tools, graph."""
    out: dict[str, Any] = {
        "instances": len(dialogues),
        "by_round": _by_prefix(counts, "round:"),
        "by_agents": _by_prefix(counts, "agents:"),
        "by_category": _by_prefix(counts, "category:"),
        "gold_calls": counts["gold_calls"],
        "user_utterances": counts["user_utterances"],
        "rounds_without_assistant_message": counts["rounds_without_assistant_message"],
        "tools": len({t.name for d in dialogues for t in d.candidate_tools}),
        "tool_set": tool_set if docs is not None or tool_set == "own" else "all (inferred from the calls)",
        "tools_per_instance": max((len(d.candidate_tools) for d in dialogues), default=0),
    }
    if docs is not None:
        out["documented_tools"] = len(docs)
    if graph is not None:
        g = load_dice_graph(graph)
        out["graph"] = {
            "nodes": len(g["nodes"]),
            "edges": len(g["edges"]),
            "duplicate_links": g["duplicate_links"],
            "self_loops": g["self_loops"],
        }
    return out
