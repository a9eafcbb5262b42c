"""CONFETTI (Alkhouli et al., Amazon; CC-BY-4.0) importer: conversational function calling and
dialog acts, in BFCL-v2-style JSON Lines.

Files (in a CONFETTI ``data/`` folder, or given one at a time):

* ``BFCL_v2_conversationsclean.json``: one function-calling example per line, the conversation up
  to a calling turn; answers in ``possible_answer/BFCL_v2_conversationsclean.json``:
  ``{"id", "dialog_id", "ground_truth": [{fn: {param: [acceptable values]}}]}`` (one gold call per
  line: the next call of the chain; 506 lines over 109 dialogs in the release);
* ``BFCL_v2_dialogacts.json``: one dialog-act example per line, the conversation up to an agent
  turn; answers in ``possible_answer/BFCL_v2_dialogacts.json``: ``{"id", "dialog_id",
  "ground_truth": ["agent_function_calling", "agent_inform_user", ...], "ground_truth_content":
  [...]}`` (463 lines in the release).

The question records follow BFCL: ``{"id", "dialog_id"?, "question", "function": [docs]}``. The
release does not document ``question`` further, so the importer accepts both BFCL shapes (a list of
messages, or a list of turns each a list of messages) and these messages: ``system`` (kept in the
provenance), ``user``, ``assistant`` (its content a reply, or a Python-style call list
``[f(a=1), g(b='x')]`` as in CONFETTI's prompts, or OpenAI-style ``tool_calls``), and ``tool`` /
``function`` / ``observation`` (a call's result, attached to the assistant turn before it as
``metadata["results"]``: our schema has no tool role).

Calls are read as CONFETTI writes them: bracketed lists (``[f(a=1)]``) or one bare call per
string (``Telecom.SendVerificationToken(to=['x'],channel=['EMAIL'])``), dotted names (written
``Telecom_SendVerificationToken`` in its function documents and calling answers: the underscored
name is used when only it is documented), arguments named by Python keywords (``class=['Economy']``,
7 of the 506 released calls), and values given as lists of acceptable values (the first becomes
the call's value, the lists are kept in ``metadata["acceptable"]``).

Chains. The calling answers hold one line per call; a chain (an agent turn with several calls) is
several consecutive lines. The dialog-act answers (``possible_answer/BFCL_v2_dialogacts.json``,
read when it lies beside the calling answers) list each function-calling agent turn's calls, so
a dialog's calling lines (ordered by the number after the last ``_`` of their ``dialog_id``) are
split by those chain lengths, checked name by name, and each chain becomes one dialogue whose
gold turn holds its calls in order (`group_chains`). On the release this gives 313 calling turns,
chain lengths 1/2/3/4+ = 220/46/25/22 (the paper's figures), and every one of the 109 dialogs
agrees. A dialog that disagrees keeps one example per line (``ungrouped_dialogs``).

Mapping. A function-calling line becomes the conversation then a gold assistant turn with the call
(first acceptable value of each argument), labelled function_calling/call, the acceptable lists in
``metadata["acceptable"]``; `seed_tool` is the gold function. A dialog-act line becomes the
conversation then the gold agent turn: its ``ground_truth_content`` strings as the reply (call
strings among them as its calls), ``metadata["acts"]`` the mapped labels (`ACT_LABELS`:
agent_seek_information -> seek_info, agent_inform_user -> inform, agent_reject_request -> reject,
agent_function_calling -> function_calling, agent_other -> other), `act` the first label and
`action` the ToolDial action when the act determines it (function_calling -> call, inform ->
response, reject -> response_fail; seek_info and other leave it unset: clarify, request and suggest
are not told apart by CONFETTI). `seed_tool` is None for dialog-act lines without a call.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import (
    ImportReport,
    ImportResult,
    make_dialogue,
    need,
    parse_call_strings,
    read_answers,
    read_json_lines,
)
from diaforge.eval.peers.bfcl.entries import gold_calls
from diaforge.schema import Dialogue, Tool, ToolCall, Turn
from diaforge.tool_records import tool_from_record

__all__ = [
    "ACT_LABELS",
    "ACTS_FILE",
    "CALLS_FILE",
    "chain_lengths",
    "group_chains",
    "load_confetti",
    "looks_like_calls",
]

CALLS_FILE = "BFCL_v2_conversationsclean.json"
ACTS_FILE = "BFCL_v2_dialogacts.json"
ACT_LABELS = {
    "agent_seek_information": "seek_info",
    "agent_inform_user": "inform",
    "agent_reject_request": "reject",
    "agent_function_calling": "function_calling",
    "agent_other": "other",
}
_ACTION_OF_ACT = {"function_calling": "call", "inform": "response", "reject": "response_fail"}
_RESULT_ROLES = ("tool", "function", "observation")


def _flatten(question: Any, path: Path, lineno: int, where: str) -> list[dict[str, Any]]:
    need(
        isinstance(question, list) and bool(question),
        f"{where}: 'question' must be a non-empty list",
        path,
        lineno,
    )
    if all(isinstance(q, list) for q in question):
        msgs = [m for turn in question for m in turn]
    else:
        msgs = list(question)
    for k, m in enumerate(msgs):
        ok = isinstance(m, dict) and isinstance(m.get("role"), str)
        need(ok, f"{where}: question message {k} must be an object with a role", path, lineno)
        content = m.get("content")
        ok = content is None or isinstance(content, str)
        need(ok, f"{where}: question message {k} content must be a string", path, lineno)
    return msgs


def _openai_calls(entries: Any) -> list[ToolCall]:
    calls = []
    for e in entries:
        fn = e.get("function", e) if isinstance(e, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError("a tool_calls entry needs a function name")
        args = fn.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        if not isinstance(args, dict):
            raise ValueError("tool call arguments must be an object")
        calls.append(ToolCall(name=fn["name"], args=args))
    return calls


_BARE_CALL = re.compile(r"^[A-Za-z_][\w.]*\(.*\)$", re.S)


def looks_like_calls(text: str) -> bool:
    """A bracketed call list (``[f(a=1)]``) or one bare call (``Telecom.ViewAccount(to=['x'])``,
    as CONFETTI's dialog-act answers write them)."""
    s = text.strip()
    return (s.startswith("[") and s.endswith("]") and "(" in s) or bool(_BARE_CALL.match(s))


def _tool_name(name: str, names: set[str]) -> str:
    """CONFETTI's dialog-act answers write ``Insurance.get_policy`` where its function documents
    and calling answers write ``Insurance_get_policy``: the underscored name when only it is known."""
    if name in names or "." not in name:
        return name
    flat = name.replace(".", "_")
    return flat if flat in names or not names else name


def _answer_calls(calls: list[ToolCall], names: set[str]) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """Calls of a dialog-act answer, whose every value is a list of acceptable values (BFCL's
    answer convention): (calls with the first acceptable value, the acceptable lists)."""
    out, acceptable = [], []
    for c in calls:
        name = _tool_name(c.name, names)
        if c.args and all(isinstance(v, list) for v in c.args.values()):
            acceptable.append({name: dict(c.args)})
            args = {k: v[0] for k, v in c.args.items() if v}
        else:
            acceptable.append({name: {k: [v] for k, v in c.args.items()}})
            args = dict(c.args)
        out.append(ToolCall(name=name, args=args))
    return out, acceptable


def _turns(
    msgs: list[dict[str, Any]], tools: dict[str, Tool], path: Path, lineno: int, where: str
) -> tuple[list[Turn], list[str]]:
    turns: list[Turn] = []
    system: list[str] = []
    for k, m in enumerate(msgs):
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            system.append(content)
        elif role == "user":
            turns.append(Turn(role="user", content=content))
        elif role == "assistant":
            try:
                if m.get("tool_calls"):
                    calls = _openai_calls(m["tool_calls"])
                elif looks_like_calls(content):
                    calls = parse_call_strings(content, tools)
                else:
                    calls = []
            except (ValueError, json.JSONDecodeError) as exc:
                raise InputError(f"{where}: question message {k}: {exc}", path=path, record=lineno) from None
            if calls:
                turns.append(Turn(role="assistant", tool_calls=calls, act="function_calling", action="call"))
            else:
                turns.append(Turn(role="assistant", content=content))
        elif role in _RESULT_ROLES:
            need(
                bool(turns) and turns[-1].role == "assistant",
                f"{where}: question message {k} is a {role} result with no assistant turn before it",
                path,
                lineno,
            )
            turns[-1].metadata.setdefault("results", []).append(content)
        else:
            raise InputError(
                f"{where}: question message {k} has an unknown role {role!r}", path=path, record=lineno
            )
    need(any(t.role == "user" for t in turns), f"{where}: the conversation has no user message", path, lineno)
    return turns, system


def _dialogue(
    entry_id: str,
    tools: list[Tool],
    turns: list[Turn],
    seed: str | None,
    args: dict,
    extra: dict,
    path: Path,
    lineno: int,
) -> Dialogue:
    return make_dialogue(
        "confetti", extra, path=path, record=lineno, entry_id=entry_id,
        seed_tool=seed, candidate_tools=tools, gold_args=args, turns=turns,
    )  # fmt: skip


def _load_file(
    path: Path, kind: str, report: ImportReport, counts: Counter, seen: dict[str, Any]
) -> list[Dialogue]:
    answer_path = path.parent / "possible_answer" / path.name
    answers = read_answers(answer_path)
    out = []
    for lineno, obj in read_json_lines(path):
        need(
            isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj["id"],
            "record needs a string 'id'",
            path,
            lineno,
        )
        entry_id = obj["id"]
        functions = obj.get("function", [])
        ok = isinstance(functions, list) and all(isinstance(f, dict) for f in functions)
        need(ok, f"{entry_id}: 'function' must be a list of function documents", path, lineno)
        tools = [tool_from_record(f, path=path, record=lineno) for f in functions]
        by_name = {t.name: t for t in tools}
        turns, system = _turns(
            _flatten(obj.get("question"), path, lineno, entry_id), by_name, path, lineno, entry_id
        )
        if entry_id not in answers:
            raise InputError(f"{entry_id}: no answer for this id in {answer_path}", path=path, record=lineno)
        a_line, answer = answers[entry_id]
        dialog_id = answer.get("dialog_id", obj.get("dialog_id"))
        extra = {"id": entry_id, "dialog_id": dialog_id, "kind": kind, "system": system}
        if kind == "function_calling":
            d = _calling(entry_id, answer, tools, turns, extra, answer_path, a_line, path, lineno)
            counts["calling_examples"] += 1
            seen.setdefault("functions", set()).add(d.seed_tool)
        else:
            d = _acts(
                entry_id, answer, tools, by_name, turns, extra, answer_path, a_line, path, lineno, counts
            )
            counts["act_examples"] += 1
        split = _split_dialog_id(dialog_id)
        seen.setdefault(f"{kind}_dialogs", set()).add(split[0] if split else dialog_id)
        out.append(d)
    return out


def _calling(
    entry_id: str,
    answer: dict,
    tools: list[Tool],
    turns: list[Turn],
    extra: dict,
    answer_path: Path,
    a_line: int,
    path: Path,
    lineno: int,
) -> Dialogue:
    gt = answer["ground_truth"]
    ok = (
        isinstance(gt, list)
        and bool(gt)
        and all(isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict) for c in gt)
        and all(isinstance(v, list) for c in gt for v in next(iter(c.values())).values())
    )
    need(
        ok,
        f"{entry_id}: 'ground_truth' must be [{{function: {{param: [acceptable values]}}}}]",
        answer_path,
        a_line,
    )
    calls, unknown = gold_calls(gt, tools)
    need(
        not unknown,
        f"{entry_id}: gold function {unknown[0] if unknown else ''!r} is not among its functions",
        path,
        lineno,
    )
    gold = Turn(
        role="assistant",
        tool_calls=calls,
        act="function_calling",
        action="call",
        metadata={"acceptable": gt, "acts": ["function_calling"]},
    )
    return _dialogue(entry_id, tools, [*turns, gold], calls[0].name, dict(calls[0].args), extra, path, lineno)


def _acts(
    entry_id: str,
    answer: dict,
    tools: list[Tool],
    by_name: dict[str, Tool],
    turns: list[Turn],
    extra: dict,
    answer_path: Path,
    a_line: int,
    path: Path,
    lineno: int,
    counts: Counter,
) -> Dialogue:
    labels = answer["ground_truth"]
    ok = isinstance(labels, list) and bool(labels) and all(isinstance(x, str) for x in labels)
    need(ok, f"{entry_id}: 'ground_truth' must be a non-empty list of dialog-act labels", answer_path, a_line)
    unknown = [x for x in labels if x not in ACT_LABELS]
    need(
        not unknown,
        f"{entry_id}: unknown dialog act {unknown[0] if unknown else ''!r} (expected one of {', '.join(ACT_LABELS)})",
        answer_path,
        a_line,
    )
    acts = [ACT_LABELS[x] for x in labels]
    counts.update(f"act:{a}" for a in acts)
    content = answer.get("ground_truth_content") or []
    if isinstance(content, str):
        content = [content]
    ok = isinstance(content, list) and all(isinstance(x, (str, dict)) for x in content)
    need(ok, f"{entry_id}: 'ground_truth_content' must be a list of strings", answer_path, a_line)
    texts, calls, acceptable = [], [], []
    for item in content:
        try:
            if isinstance(item, dict):
                calls.extend(_openai_calls([item]))
                acceptable.append({calls[-1].name: {k: [v] for k, v in calls[-1].args.items()}})
            elif looks_like_calls(item):
                parsed, ok = _answer_calls(parse_call_strings(item), set(by_name))
                calls.extend(parsed)
                acceptable.extend(ok)
            else:
                texts.append(item)
        except (ValueError, json.JSONDecodeError) as exc:
            raise InputError(
                f"{entry_id}: ground_truth_content: {exc}", path=answer_path, record=a_line
            ) from None
    act = "function_calling" if calls else next((a for a in acts if a != "function_calling"), acts[0])
    gold = Turn(
        role="assistant",
        content="\n".join(t.strip() for t in texts if t.strip()),
        tool_calls=calls or None,
        act=act,
        action=_ACTION_OF_ACT.get(act),
        metadata={"acts": acts, **({"acceptable": acceptable} if calls else {})},
    )
    counts["act_calls"] += len(calls)
    names = {t.name for t in tools}
    seed = calls[0].name if calls and calls[0].name in names else None
    return _dialogue(
        entry_id, tools, [*turns, gold], seed, dict(calls[0].args) if seed else {}, extra, path, lineno
    )


def _split_dialog_id(dialog_id: Any) -> tuple[str, int] | None:
    """``"0b28…f35_4"`` -> (``"0b28…f35"``, 4): CONFETTI numbers a dialog's examples after an
    underscore."""
    if not isinstance(dialog_id, str) or "_" not in dialog_id:
        return None
    base, _, n = dialog_id.rpartition("_")
    return (base, int(n)) if n.isdigit() else None


def chain_lengths(acts_answers: str | Path) -> dict[str, list[tuple[int, list[str]]]]:
    """From CONFETTI's dialog-act answers: for every dialog, its function-calling agent turns in
    order, each as (number of calls, the called names with ``.`` written ``_``). These are the
    chains: the calling answers hold one line per call, in the same order (on the release, every
    dialog's call count agrees, and the chains are 220/46/25/22 of lengths 1/2/3/4+, the
    paper's figures)."""
    out: dict[str, list[tuple[int, int, list[str]]]] = {}
    for _, (lineno, answer) in read_answers(acts_answers).items():
        key = _split_dialog_id(answer.get("dialog_id"))
        labels = answer.get("ground_truth")
        if key is None or not isinstance(labels, list) or "agent_function_calling" not in labels:
            continue
        content = answer.get("ground_truth_content") or []
        names = []
        for item in content if isinstance(content, list) else [content]:
            if isinstance(item, str) and looks_like_calls(item):
                try:
                    names.extend(c.name.replace(".", "_") for c in parse_call_strings(item))
                except ValueError as exc:
                    raise InputError(
                        f"{answer['id']}: ground_truth_content: {exc}", path=acts_answers, record=lineno
                    ) from None
        if names:
            out.setdefault(key[0], []).append((key[1], len(names), names))
    return {k: [(n, names) for _, n, names in sorted(v)] for k, v in out.items()}


def _bucket(n: int) -> str:
    return str(n) if n < 4 else "4+"


def group_chains(
    dialogues: list[Dialogue], chains: dict[str, list[tuple[int, list[str]]]], counts: Counter
) -> list[Dialogue]:
    """Merge the calling examples of one chain into one dialogue: the first example's history and
    one gold turn holding the chain's calls in order (``metadata["acceptable"]`` one entry per
    call, ``metadata["chain_ids"]`` the example ids), as `diaforge.eval.peers.turn_level` scores chains.
    A dialog whose calling lines and chain lengths disagree (in count or in called names) keeps
    one example per line and is counted in ``ungrouped_dialogs``."""
    by_dialog: dict[str, list[tuple[int, Dialogue]]] = {}
    rest = []
    for d in dialogues:
        key = _split_dialog_id(getattr(d.provenance, "confetti", {}).get("dialog_id"))
        if key is None:
            rest.append(d)
            continue
        by_dialog.setdefault(key[0], []).append((key[1], d))
    out = list(rest)
    for base, items in by_dialog.items():
        ds = [d for _, d in sorted(items, key=lambda x: x[0])]
        lengths = chains.get(base)
        names = [d.turns[-1].tool_calls[0].name for d in ds]
        if (
            not lengths
            or sum(n for n, _ in lengths) != len(ds)
            or [m for _, ns in lengths for m in ns] != names
        ):
            counts["ungrouped_dialogs"] += 1
            counts["chain:1"] += len(ds)
            out.extend(ds)
            continue
        start = 0
        for n, _ in lengths:
            group = ds[start : start + n]
            start += n
            counts[f"chain:{_bucket(n)}"] += 1
            if n == 1:
                out.append(group[0])
                continue
            first = group[0]
            gold = first.turns[-1].model_copy(
                update={
                    "tool_calls": [g.turns[-1].tool_calls[0] for g in group],
                    "metadata": {
                        **first.turns[-1].metadata,
                        "acceptable": [a for g in group for a in g.turns[-1].metadata["acceptable"]],
                        "chain_ids": [g.id for g in group],
                    },
                }
            )
            tools = {t.name: t for g in group for t in g.candidate_tools}
            out.append(
                first.model_copy(
                    update={"turns": [*first.turns[:-1], gold], "candidate_tools": list(tools.values())}
                )
            )
    return out


def load_confetti(src: str | Path) -> ImportResult:
    """Import CONFETTI from its data folder (both files, those present) or from one of the two
    files. A malformed record raises `InputError` naming the file and the line."""
    p = Path(src)
    if p.is_dir():
        files = [
            (p / name, kind)
            for name, kind in ((CALLS_FILE, "function_calling"), (ACTS_FILE, "dialog_act"))
            if (p / name).exists()
        ]
        if not files:
            raise InputError(f"neither {CALLS_FILE} nor {ACTS_FILE} is in this folder", path=p)
    elif p.exists():
        kind = "dialog_act" if "dialogact" in p.name.lower() else "function_calling"
        files = [(p, kind)]
    else:
        raise InputError("file not found", path=p)
    report = ImportReport(source="confetti", path=str(p))
    counts: Counter = Counter()
    seen: dict[str, Any] = {}
    dialogues: list[Dialogue] = []
    for path, kind in files:
        loaded = _load_file(path, kind, report, counts, seen)
        acts_answers = path.parent / "possible_answer" / ACTS_FILE
        if kind == "function_calling" and acts_answers.is_file():
            loaded = group_chains(loaded, chain_lengths(acts_answers), counts)
        elif kind == "function_calling":
            counts.update({"chain:1": len(loaded)})
        dialogues.extend(loaded)
    ids = Counter(d.id for d in dialogues)
    dupes = [i for i, n in ids.items() if n > 1]
    if dupes:
        raise InputError(f"record id {dupes[0]!r} occurs {ids[dupes[0]]} times", path=p)
    report.loaded = len(dialogues)
    report.counts = {
        "calling_examples": counts["calling_examples"],
        "calling_dialogs": len(seen.get("function_calling_dialogs", ())),
        "gold_functions": len(seen.get("functions", ())),
        "calling_turns": sum(v for k, v in counts.items() if k.startswith("chain:")),
        "chain_lengths": {b: counts[f"chain:{b}"] for b in ("1", "2", "3", "4+") if counts[f"chain:{b}"]},
        "ungrouped_dialogs": counts["ungrouped_dialogs"],
        "act_calls": counts["act_calls"],
        "act_examples": counts["act_examples"],
        "act_dialogs": len(seen.get("dialog_act_dialogs", ())),
        "acts": {a: counts[f"act:{a}"] for a in ACT_LABELS.values() if counts[f"act:{a}"]},
    }
    return ImportResult(dialogues, report)
