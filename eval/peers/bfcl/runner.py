"""The BFCL parity runner (`run_bfcl`, ``python -m diaforge.eval bfcl --model PATH``).

Prompt mode by default: our system prompt listing the entry's functions (plus the entry's own
system message), the question as user turns, one reply parsed by our parser. Per category the
accuracy is the share of entries that pass; ``overall.accuracy`` is the unweighted mean of the
category accuracies (BFCL's own overall is a weighted mix of more categories: compare runs of this
runner with each other, e.g. a tuned model with its base, not with the leaderboard).

The multi-turn categories are scored off-policy, turn by turn, with gold history: BFCL's own
checker executes the calls on stateful Python backends, which we do not run, so this is an
approximation: a ``[]`` turn passes when the model does not call (BFCL's rule for those turns,
exactly); a call turn passes when the model calls and its first call's name is among the turn's
gold call names (a function still held back fails as ``multi_turn:held_out_function``); an entry
passes when all its turns pass. Not comparable with leaderboard multi-turn numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.eval.peers.bfcl.categories import (
    ALL_CATEGORIES,
    IRRELEVANCE,
    MULTI_TURN,
    NO_ANSWER_FILE,
    RELEVANCE,
)
from diaforge.eval.peers.bfcl.checker import AstVerdict, check_calls
from diaforge.schema import Dialogue

__all__ = [
    "PromptExample",
    "bfcl_metrics",
    "compare_bfcl",
    "entry_messages",
    "format_bfcl",
    "prompt_examples",
    "run_bfcl",
    "score_reply",
    "write_bfcl_run",
]

_OK = AstVerdict(True)


def _fail(kind: str, msg: str) -> AstVerdict:
    return AstVerdict(False, kind, msg)


@dataclass
class PromptExample:
    """One model query: the dialogue prefix shown to the model and what it is scored against."""

    entry: Dialogue
    category: str
    prompt: Dialogue
    turn: int | None = None
    """Index of the gold assistant turn (multi-turn and single-turn call categories)."""


def _category(d: Dialogue) -> str:
    return (d.provenance.model_extra or {}).get("bfcl", {}).get("category", "")


def prompt_examples(d: Dialogue) -> list[PromptExample]:
    """The queries of one imported entry: one for single-turn categories (the turns before the
    gold assistant turn), one per BFCL turn for multi-turn ones (gold history before it)."""
    category = _category(d)
    if category in NO_ANSWER_FILE:
        return [PromptExample(d, category, d)]
    out = []
    for i, t in enumerate(d.turns):
        if t.role != "assistant" or not ("acceptable" in t.metadata or "bfcl_turn" in t.metadata):
            continue
        update: dict[str, Any] = {"turns": d.turns[:i]}
        withheld = set(t.metadata.get("withheld") or ())
        if withheld:  # miss_func: a held-out function is not offered before its turn
            update["candidate_tools"] = [x for x in d.candidate_tools if x.name not in withheld]
        out.append(PromptExample(d, category, d.model_copy(update=update), i))
    return out


def score_reply(example: PromptExample, parsed: Any) -> AstVerdict:
    """The verdict on one reply (`diaforge.format.ParsedMessage`) to one example."""
    kind = parsed.kind
    if example.category in IRRELEVANCE:
        if kind == "tool_calls":
            return _fail("irrelevance_error:called", "made a call on an irrelevant question")
        return _OK
    if example.category in RELEVANCE:  # any well-formed, non-empty call passes; its content is not checked
        if kind == "tool_calls" and parsed.tool_calls:
            return _OK
        return _fail("relevance_error:no_call", "no call on a question a function can serve")
    gold = example.entry.turns[example.turn]
    if gold.metadata.get("bfcl_expect") == "no_call":
        if kind == "tool_calls":
            return _fail("multi_turn:premature_call", "called on a turn whose required argument is missing")
        return _OK
    if kind != "tool_calls":
        return _fail(
            "malformed" if kind == "malformed" else "no_call",
            "no call" if kind == "reply" else "malformed output",
        )
    if example.category in MULTI_TURN:
        withheld = set(gold.metadata.get("withheld") or ())
        if parsed.tool_calls[0].name in withheld:
            return _fail(
                "multi_turn:held_out_function", f"called {parsed.tool_calls[0].name!r} before it was offered"
            )
        names = {c.name for c in gold.tool_calls or []}
        if parsed.tool_calls[0].name not in names:
            return _fail(
                "multi_turn:wrong_func_name",
                f"first call {parsed.tool_calls[0].name!r} is not among {sorted(names)}",
            )
        return _OK
    return check_calls(
        example.entry.candidate_tools, parsed.tool_calls, gold.metadata["acceptable"], example.category
    )


def _entry_system(d: Dialogue) -> str:
    return "\n\n".join((d.provenance.model_extra or {}).get("bfcl", {}).get("system", []))


def entry_messages(model: Any, d: Dialogue) -> list[dict[str, Any]]:
    """What the model is shown for one query: its own messages (`model.messages(d)`, our system
    prompt listing the functions) with the entry's own system message, if any, appended to the
    system prompt."""
    msgs = model.messages(d)
    extra = _entry_system(d)
    if extra and msgs and msgs[0].get("role") == "system":
        msgs = [{**msgs[0], "content": f"{msgs[0]['content']}\n\n{extra}"}, *msgs[1:]]
    return msgs


async def run_bfcl(
    model: Any,
    entries: Mapping[str, Sequence[Dialogue]],
    *,
    chunk: int = 64,
    progress: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Query `model` (anything with ``messages(dialogue)``, ``async respond(dialogues,
    messages=None) -> [Reply]`` and a ``label``) on every entry of every category and score it;
    the messages of each query are passed explicitly (`entry_messages`). Returns (metrics,
    per-query records)."""
    from tqdm.auto import tqdm

    examples = [ex for ds in entries.values() for d in ds for ex in prompt_examples(d)]
    records: list[dict[str, Any]] = []
    bar = tqdm(total=len(examples), desc="bfcl", unit="query", disable=not progress)
    for start in range(0, len(examples), chunk):
        batch = examples[start : start + chunk]
        prompts = [ex.prompt for ex in batch]
        replies = await model.respond(prompts, messages=[entry_messages(model, d) for d in prompts])
        for ex, reply in zip(batch, replies, strict=True):
            p = reply.parsed
            verdict = score_reply(ex, p)
            records.append(
                {
                    "id": ex.entry.id,
                    "category": ex.category,
                    "turn": ex.turn,
                    "kind": p.kind,
                    "raw": reply.raw,
                    "tool_calls": [{"name": c.name, "args": c.args} for c in p.tool_calls] or None,
                    "valid": verdict.valid,
                    "error_type": verdict.error_type or None,
                    "error": verdict.error or None,
                }
            )
        bar.update(len(batch))
    bar.close()
    return bfcl_metrics(records, label=getattr(model, "label", "")), records


def bfcl_metrics(records: Sequence[Mapping[str, Any]], *, label: str = "") -> dict[str, Any]:
    """Per-category and overall accuracy from per-query records (see `run_bfcl`)."""
    cats: dict[str, dict[str, Any]] = {}
    by_cat: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_cat.setdefault(r["category"], []).append(r)
    for cat in [c for c in ALL_CATEGORIES if c in by_cat] + sorted(set(by_cat) - set(ALL_CATEGORIES)):
        rs = by_cat[cat]
        entries: dict[str, bool] = {}
        for r in rs:
            entries[r["id"]] = entries.get(r["id"], True) and bool(r["valid"])
        n = len(entries)
        m: dict[str, Any] = {
            "accuracy": round(sum(entries.values()) / n, 6) if n else 0.0,
            "correct": sum(entries.values()),
            "n": n,
            "queries": len(rs),
            "tool_calls": sum(1 for r in rs if r["kind"] == "tool_calls"),
            "no_call": sum(1 for r in rs if r["kind"] == "reply"),
            "malformed": sum(1 for r in rs if r["kind"] == "malformed"),
            "errors": dict(Counter(r["error_type"] for r in rs if not r["valid"]).most_common()),
        }
        if cat in MULTI_TURN:
            m["turn_accuracy"] = round(sum(1 for r in rs if r["valid"]) / len(rs), 6) if rs else 0.0
        cats[cat] = m
    total = sum(m["n"] for m in cats.values())
    return {
        "model": label,
        "categories": cats,
        "overall": {
            "accuracy": round(sum(m["accuracy"] for m in cats.values()) / len(cats), 6) if cats else 0.0,
            "micro_accuracy": round(sum(m["correct"] for m in cats.values()) / total, 6) if total else 0.0,
            "n": total,
        },
    }


def compare_bfcl(
    base: Mapping[str, Any], tuned: Mapping[str, Any], *, tolerance: float = 0.02
) -> dict[str, Any]:
    """Per-category deltas tuned - base and the categories that regressed by more than `tolerance`."""
    rows = {}
    for cat in tuned["categories"]:
        if cat in base["categories"]:
            b, t = base["categories"][cat]["accuracy"], tuned["categories"][cat]["accuracy"]
            rows[cat] = {"base": b, "tuned": t, "delta": round(t - b, 6)}
    regressions = [c for c, r in rows.items() if r["delta"] < -tolerance]
    return {"categories": rows, "regressions": regressions, "tolerance": tolerance}


def format_bfcl(metrics: Mapping[str, Any], comparison: Mapping[str, Any] | None = None) -> str:
    """A markdown table of per-category accuracy (with deltas against a baseline when given)."""
    cmp_rows = (comparison or {}).get("categories", {})
    head = "| category | n | accuracy | no call | malformed |" + (" base | delta |" if cmp_rows else "")
    sep = "|---|---:|---:|---:|---:|" + ("---:|---:|" if cmp_rows else "")
    lines = [f"BFCL parity check: {metrics.get('model', '')}", "", head, sep]
    for cat, m in metrics["categories"].items():
        row = f"| {cat} | {m['n']} | {m['accuracy']:.4f} | {m['no_call']} | {m['malformed']} |"
        if cmp_rows:
            c = cmp_rows.get(cat)
            row += f" {c['base']:.4f} | {c['delta']:+.4f} |" if c else " - | - |"
        lines.append(row)
    o = metrics["overall"]
    lines.append(
        f"| overall (mean of categories) | {o['n']} | {o['accuracy']:.4f} | | |"
        + (" | |" if cmp_rows else "")
    )
    if comparison is not None:
        regs = comparison["regressions"]
        lines.append("")
        lines.append(
            f"regressions beyond {comparison['tolerance']:.2f}: {', '.join(regs)}" if regs else
            f"no category regressed by more than {comparison['tolerance']:.2f}"
        )  # fmt: skip
    return "\n".join(lines)


def write_bfcl_run(
    out: str | Path,
    metrics: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    *,
    comparison: Mapping[str, Any] | None = None,
) -> Path:
    """``bfcl_metrics.json``, ``bfcl_transcripts.jsonl`` (one record per query) and
    ``bfcl_report.md`` in the run folder `out`."""
    from diaforge.eval.run_files import write_run_files

    payload = dict(metrics)
    if comparison is not None:
        payload["comparison"] = comparison
    return write_run_files(
        out,
        metrics=payload,
        records=records,
        records_name="transcripts",
        prefix="bfcl_",
        report=format_bfcl(metrics, comparison) + "\n",
    )
