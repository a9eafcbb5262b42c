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
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data_gen.errors import InputError
from data_gen.schema import Dialogue, Tool, ToolCall, Turn, normalise_type
from eval.metrics import values_match
from eval.peers import ImportReport, ImportResult, make_dialogue, read_json

__all__ = [
    "ASSISTANT_SPEAKER",
    "TOOL_SETS",
    "DiceQuery",
    "dice_exact_match",
    "dice_prediction",
    "dice_queries",
    "format_dice_em",
    "load_dice_graph",
    "load_dice_tools",
    "load_dicebench",
    "parsed_json_of",
    "read_dice_predictions",
    "run_dicebench",
    "score_dice_predictions",
    "tool_from_dice_doc",
    "write_dice_predictions",
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
            calls = meta["params_ret_val"]
            names = list(dict.fromkeys(c["function"] for c in calls))
            if docs is not None:
                missing = [n for n in names if n not in docs]
                if missing:
                    report.skip(f"function not in the tool file: {missing[0]}")
                    continue
                candidates = list(docs.values()) if tool_set == "all" else [docs[n] for n in names]
            else:
                for c in calls:
                    inferred_calls.setdefault(c["function"], []).append(c)
                candidates = [_inferred_tool(n, [c for c in calls if c["function"] == n]) for n in names]
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
            dialogues.append(d)
            counts[f"round:{meta['round_num']}"] += 1
            counts[f"agents:{meta.get('agent_num')}"] += 1
            counts[f"category:{meta.get('category')}"] += 1
            counts["gold_calls"] += len(calls)
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
    report.counts = {
        "instances": len(dialogues),
        "by_round": {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("round:")},
        "by_agents": {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("agents:")},
        "by_category": {
            k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("category:")
        },
        "gold_calls": counts["gold_calls"],
        "user_utterances": counts["user_utterances"],
        "rounds_without_assistant_message": counts["rounds_without_assistant_message"],
        "tools": len({t.name for d in dialogues for t in d.candidate_tools}),
        "tool_set": tool_set if docs is not None or tool_set == "own" else "all (inferred from the calls)",
        "tools_per_instance": max((len(d.candidate_tools) for d in dialogues), default=0),
    }
    if docs is not None:
        report.counts["documented_tools"] = len(docs)
    if graph is not None:
        g = load_dice_graph(graph)
        report.counts["graph"] = {
            "nodes": len(g["nodes"]),
            "edges": len(g["edges"]),
            "duplicate_links": g["duplicate_links"],
            "self_loops": g["self_loops"],
        }
    return ImportResult(dialogues, report)


# --------------------------------------------------------------------------------------------
# Exact match per round (DICE-Bench's static task)
# --------------------------------------------------------------------------------------------
#
# DICE-Bench asks one question per round: an instance of N rounds is queried N times, query r
# showing the party messages of rounds 1..r, the AI Assistant's messages of rounds 1..r-1 (its
# round-r message removed) and every documented tool (`src/inference/inference_vllm.py`). The
# model answers ``{"function": [name | "none", reason], "parameters": {p: [value, reason]},
# "domain": [type, reason]}``; its runner keeps ``parsed_json`` per round, ``{"function": "ERROR",
# ...}`` when the output is not JSON, ``{}`` when no object can be read. The repository publishes
# no exact-match scorer (`src/validation/EM.py` of its history filters generated dialogues), so
# the rule here is ours, written from the paper's "exact function and parameters":
#
# * the predicted function name equals the gold one exactly (case and spelling);
# * the predicted parameter names are exactly the gold ones (nothing missing, nothing extra);
# * every predicted value matches the gold one under `eval.metrics.values_match` (Unicode NFKC,
#   case folding and whitespace runs collapsed for strings; 2 == "2" == 2.0; "true" == True;
#   equal dates in ISO spellings), after stripping one pair of surrounding quotes from string
#   values: DICE-Bench's gold sometimes quotes a value inside the string ('"This article ..."')
#   and its own prompt asks for bare values.
#
# A reply with function "none", "ERROR", no function, or a missing prediction is wrong.


def _unquote(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            return text[1:-1]
        return text
    return value


def dice_prediction(parsed: Any) -> tuple[str | None, dict[str, Any]]:
    """(function name, {parameter: value}) of one DICE-Bench ``parsed_json``: the first element
    of ``function`` and of each parameter's ``[value, reason]`` pair (a bare value is taken as
    is). The name is None for "none", "ERROR", an empty object or a missing function."""
    if not isinstance(parsed, dict):
        return None, {}
    fn = parsed.get("function")
    name = fn[0] if isinstance(fn, list) and fn else fn
    if not isinstance(name, str) or name.strip().lower() in ("", "none", "error"):
        name = None
    params = parsed.get("parameters")
    out: dict[str, Any] = {}
    if isinstance(params, dict):
        for k, v in params.items():
            out[str(k)] = v[0] if isinstance(v, list) and v else v
    return name, out


def dice_exact_match(name: str | None, params: dict[str, Any], gold: dict[str, Any]) -> bool:
    """One round's exact match (rules above). `gold` is a ``params_ret_val`` entry."""
    if name is None or name != gold["function"]:
        return False
    want = gold["parameters"]
    if set(params) != set(want):
        return False
    return all(values_match(_unquote(params[k]), _unquote(want[k])) for k in want)


def _instance_key(d: Dialogue) -> tuple[int, Any]:
    extra = d.provenance.model_extra["dicebench"]
    return extra["round_num"], extra["diag_id"]


def _gold_rounds(d: Dialogue) -> list[dict[str, Any]]:
    return [
        {"function": t.tool_calls[0].name, "parameters": dict(t.tool_calls[0].args)}
        for t in d.turns
        if t.role == "assistant" and t.tool_calls
    ]


def read_dice_predictions(src: str | Path) -> dict[tuple[int, Any], list[Any]]:
    """DICE-Bench prediction files (``<model>_round_<n>.json``: ``[{diag_id, round_results:
    [{round_name, parsed_json}]}]``, one file per round file) from a file or a folder, keyed by
    (n, diag_id) with one ``parsed_json`` per round, in round order (``Round r`` at index r-1; a
    round with no result is None)."""
    p = Path(src)
    files = sorted(p.glob("*round_*.json")) if p.is_dir() else [p]
    if not files:
        raise InputError("no *round_<n>.json prediction file in this folder", path=p)
    out: dict[tuple[int, Any], list[Any]] = {}
    for path in files:
        m = re.search(r"round_(\d+)\.json$", path.name)
        if m is None:
            raise InputError("a prediction file is named <model>_round_<n>.json", path=path)
        n = int(m.group(1))
        data = read_json(path)
        if not isinstance(data, list):
            raise InputError("expected a JSON array of {diag_id, round_results}", path=path)
        for i, rec in enumerate(data):
            if (
                not isinstance(rec, dict)
                or "diag_id" not in rec
                or not isinstance(rec.get("round_results"), list)
            ):
                raise InputError("needs 'diag_id' and a 'round_results' list", path=path, record=f"entry {i}")
            rounds: list[Any] = [None] * n
            for j, rr in enumerate(rec["round_results"]):
                rm = (
                    re.fullmatch(r"Round (\d+)", str(rr.get("round_name", "")))
                    if isinstance(rr, dict)
                    else None
                )
                if rm is None or not 1 <= int(rm.group(1)) <= n:
                    raise InputError(
                        f"round_results[{j}] needs a round_name 'Round 1'..'Round {n}'",
                        path=path,
                        record=f"entry {i}",
                    )
                rounds[int(rm.group(1)) - 1] = rr.get("parsed_json")
            out[(n, rec["diag_id"])] = rounds
    return out


def _mean(xs: Sequence[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0


def score_dice_predictions(
    dialogues: Sequence[Dialogue], predictions: Mapping[tuple[int, Any], Sequence[Any]]
) -> dict[str, Any]:
    """Exact match of DICE-Bench predictions against imported instances (`load_dicebench`).

    Per round file n (``R<n>``): ``instances``; ``EM_instance``, the mean over its instances of the
    share of their rounds answered exactly (the paper's cells, e.g. GPT-4o R1 = 315/425, read as
    this); ``EM_query``, over all its queries; ``EM_last_round``, over its round-n queries; and
    ``by_round`` (r -> EM of the round-r queries). Per party count (``P<k>``, metadata.agent_num)
    and per dialogue type: ``EM_instance``. ``Avg(R)`` / ``Avg(P)``: the unweighted means of the
    R and P cells present, as the paper's tables average them. ``invalid_json``: the share of
    queries answered ``{}`` or ``"ERROR"``; ``missing``: instances without a prediction (scored
    wrong)."""
    per_file: dict[int, dict[str, list]] = {}
    by_party: dict[str, list[float]] = {}
    by_type: dict[str, list[float]] = {}
    queries: list[float] = []
    invalid = missing = 0
    for d in dialogues:
        n, diag = _instance_key(d)
        extra = d.provenance.model_extra["dicebench"]
        gold = _gold_rounds(d)
        preds = predictions.get((n, diag))
        if preds is None:
            missing += 1
            preds = [None] * len(gold)
        hits = []
        cell = per_file.setdefault(n, {"instances": [], "queries": [], "last": [], "rounds": {}})
        for r, g in enumerate(gold, start=1):
            parsed = preds[r - 1] if r - 1 < len(preds) else None
            if parsed == {} or (isinstance(parsed, dict) and parsed.get("function") == "ERROR"):
                invalid += 1
            ok = float(dice_exact_match(*dice_prediction(parsed), g))
            hits.append(ok)
            cell["queries"].append(ok)
            cell["rounds"].setdefault(str(r), []).append(ok)
            queries.append(ok)
        cell["last"].append(hits[-1])
        score = sum(hits) / len(hits)
        cell["instances"].append(score)
        by_party.setdefault(str(extra.get("agent_num")), []).append(score)
        by_type.setdefault(str(extra.get("category")), []).append(score)
    rounds = {
        f"R{n}": {
            "instances": len(c["instances"]),
            "EM_instance": _mean(c["instances"]),
            "EM_query": _mean(c["queries"]),
            "EM_last_round": _mean(c["last"]),
            "by_round": {r: _mean(v) for r, v in sorted(c["rounds"].items())},
        }
        for n, c in sorted(per_file.items())
    }
    parties = {f"P{k}": {"instances": len(v), "EM_instance": _mean(v)} for k, v in sorted(by_party.items())}
    return {
        "instances": len(dialogues),
        "queries": len(queries),
        "EM_query": _mean(queries),
        "rounds": rounds,
        "parties": parties,
        "types": {k: {"instances": len(v), "EM_instance": _mean(v)} for k, v in sorted(by_type.items())},
        "Avg(R)": _mean([c["EM_instance"] for c in rounds.values()]),
        "Avg(P)": _mean([c["EM_instance"] for c in parties.values()]),
        "invalid_json": round(invalid / len(queries), 6) if queries else 0.0,
        "missing": missing,
    }


def format_dice_em(m: Mapping[str, Any]) -> str:
    """A readable summary of `score_dice_predictions`, in percent like the paper's tables."""
    lines = [
        f"DICE-Bench exact match: {m['instances']} instances, {m['queries']} queries; "
        f"EM per query {100 * m['EM_query']:.2f}; Avg(R) {100 * m['Avg(R)']:.2f}  Avg(P) {100 * m['Avg(P)']:.2f}",
        "  "
        + "  ".join(
            f"{k} {100 * v['EM_instance']:.2f} (n={v['instances']}, last round {100 * v['EM_last_round']:.2f})"
            for k, v in m["rounds"].items()
        ),
        "  "
        + "  ".join(
            f"{k} {100 * v['EM_instance']:.2f} (n={v['instances']})" for k, v in m["parties"].items()
        ),
        f"  invalid JSON {100 * m['invalid_json']:.2f}%  missing predictions {m['missing']}",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Running a model on DICE-Bench's queries
# --------------------------------------------------------------------------------------------


@dataclass
class DiceQuery:
    """Query r of an instance: the prompt dialogue and the round's gold call."""

    dialogue: Dialogue
    round: int
    prompt: Dialogue
    gold: dict[str, Any]


def dice_queries(dialogues: Iterable[Dialogue]) -> list[DiceQuery]:
    """One query per round of every imported instance, as DICE-Bench builds them: the user turns
    of rounds 1..r and, for each earlier round, the AI Assistant's message as a plain assistant
    reply (the model never sees a gold call), ending with the last party message of round r. The
    prompt's gold tool and arguments are the round's call, so the reference policies can play it."""
    out = []
    for d in dialogues:
        turns: list[Turn] = []
        r = 0
        for t in d.turns:
            if t.role == "user":
                turns.append(t)
                continue
            if not t.tool_calls:
                continue
            r += 1
            call = t.tool_calls[0]
            prompt = d.model_copy(
                update={"turns": list(turns), "seed_tool": call.name, "gold_args": dict(call.args)}
            )
            out.append(DiceQuery(d, r, prompt, {"function": call.name, "parameters": dict(call.args)}))
            said = t.metadata.get("tool_result") or t.metadata.get("returned_nl") or ""
            turns.append(Turn(role="assistant", content=str(said), act="inform", action="response"))
    return out


def parsed_json_of(reply: Any) -> dict[str, Any]:
    """A model reply (`eval.models.Reply`) in DICE-Bench's ``parsed_json`` form: a call ->
    ``{"function": [name, ""], "parameters": {p: [value, ""]}}`` (its first call); a reply ->
    ``{"function": ["none", text], "parameters": {}}``; unreadable or cut-off output ->
    ``{"function": "ERROR", "parameters": {}, "reasoning": ...}`` as DICE-Bench's runner writes it."""
    p = reply.parsed
    if reply.kind == "tool_calls" and p.tool_calls:
        call = p.tool_calls[0]
        return {"function": [call.name, ""], "parameters": {k: [v, ""] for k, v in call.args.items()}}
    if reply.kind == "reply":
        return {"function": ["none", p.content], "parameters": {}}
    return {"function": "ERROR", "parameters": {}, "reasoning": f"{reply.kind} output"}


async def run_dicebench(
    model: Any, dialogues: Sequence[Dialogue], *, chunk: int = 64, progress: bool = True
) -> dict[int, list[dict[str, Any]]]:
    """Ask `model` (anything with ``async respond(dialogues) -> [Reply]``) every query of
    `dialogues`; returns DICE-Bench prediction files by round file n (``[{diag_id,
    round_results: [{round_name, parsed_json}]}]``, instances in import order)."""
    from tqdm.auto import tqdm

    queries = dice_queries(dialogues)
    answers: dict[tuple[int, Any], list[dict[str, Any]]] = {}
    bar = tqdm(total=len(queries), desc="dicebench", unit="query", disable=not progress)
    for start in range(0, len(queries), chunk):
        batch = queries[start : start + chunk]
        replies = await model.respond([q.prompt for q in batch])
        for q, reply in zip(batch, replies, strict=True):
            answers.setdefault(_instance_key(q.dialogue), []).append(
                {"round_name": f"Round {q.round}", "parsed_json": parsed_json_of(reply)}
            )
        bar.update(len(batch))
    bar.close()
    files: dict[int, list[dict[str, Any]]] = {}
    for d in dialogues:
        n, diag = _instance_key(d)
        files.setdefault(n, []).append({"diag_id": diag, "round_results": answers.get((n, diag), [])})
    return files


def write_dice_predictions(out: str | Path, label: str, files: Mapping[int, Sequence[Any]]) -> list[Path]:
    """``<label>_round_<n>.json`` per round file, indented as DICE-Bench writes them."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-zA-Z0-9]", "_", label).lower()
    paths = []
    for n, records in sorted(files.items()):
        path = folder / f"{slug}_round_{n}.json"
        path.write_text(json.dumps(list(records), indent=4, ensure_ascii=False) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
