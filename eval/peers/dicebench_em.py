"""DICE-Bench exact match per round (its static task), and running a model on its queries.

DICE-Bench asks one question per round: an instance of N rounds is queried N times, query r
showing the party messages of rounds 1..r, the AI Assistant's messages of rounds 1..r-1 (its
round-r message removed) and every documented tool (`src/inference/inference_vllm.py`). The
model answers ``{"function": [name | "none", reason], "parameters": {p: [value, reason]},
"domain": [type, reason]}``; its runner keeps ``parsed_json`` per round, ``{"function": "ERROR",
...}`` when the output is not JSON, ``{}`` when no object can be read. The repository publishes
no exact-match scorer (`src/validation/EM.py` of its history filters generated dialogues), so
the rule here is ours, written from the paper's "exact function and parameters":

* the predicted function name equals the gold one exactly (case and spelling);
* the predicted parameter names are exactly the gold ones (nothing missing, nothing extra);
* every predicted value matches the gold one under `diaforge.eval.metrics.values_match` (Unicode NFKC,
  case folding and whitespace runs collapsed for strings; 2 == "2" == 2.0; "true" == True;
  equal dates in ISO spellings), after stripping one pair of surrounding quotes from string
  values: DICE-Bench's gold sometimes quotes a value inside the string ('"This article ..."')
  and its own prompt asks for bare values.

A reply with function "none", "ERROR", no function, or a missing prediction is wrong.

`run_dicebench` asks a model every query and returns prediction files in DICE-Bench's own form
(`write_dice_predictions`), which `read_dice_predictions` and `score_dice_predictions` score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.metrics import values_match
from diaforge.eval.peers import read_json
from diaforge.schema import Dialogue, Turn

__all__ = [
    "DiceQuery",
    "dice_exact_match",
    "dice_prediction",
    "dice_queries",
    "format_dice_em",
    "parsed_json_of",
    "read_dice_predictions",
    "run_dicebench",
    "score_dice_predictions",
    "write_dice_predictions",
]


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
    """A model reply (`diaforge.eval.models.Reply`) in DICE-Bench's ``parsed_json`` form: a call ->
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
