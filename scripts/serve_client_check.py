"""Ask a running OpenAI-compatible server for the reference turns of held-out dialogues with the
OpenAI Python client, and count what comes back: parsed `tool_calls` where the reference calls,
a question where it asks. What a user of `diaforge serve` (or of a stock engine reading the
saved `response_template`) sees, turn by turn.

    diaforge serve outputs/demo/sft --port 8000 --constrain-calls on --ground-values on --copy-thoughts on &
    python -m scripts.serve_client_check --base-url http://127.0.0.1:8000/v1 --model sft --dialogues 10

Each request holds the dialogue's reference history up to the turn (user words, the assistant's
questions and, as ``reasoning_content``, their thoughts, as a model trained with
``history_reasoning: keep`` saw them; ``--no-thoughts`` leaves them out) and its candidate tools as
OpenAI ``tools=``; temperature 0.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from diaforge.eval.runner import sample_benchmark
from diaforge.format.prompt import openai_tools
from diaforge.schema import Dialogue, load_dialogues

BENCH = Path("eval/benchmarks/diabench_heldout_v1.jsonl")


def requests_of(dialogue: Dialogue, keep_thoughts: bool = True) -> list[tuple[str, list[dict[str, Any]]]]:
    """(the reference turn's kind, ``call`` or ``ask``; the messages before it) per assistant turn;
    the assistant's earlier thoughts go as ``reasoning_content`` unless `keep_thoughts` is off."""
    out, messages = [], []
    for turn in dialogue.turns:
        if turn.role == "assistant":
            out.append(("call" if turn.tool_calls else "ask", list(messages)))
            if turn.tool_calls:
                break
            message = {"role": "assistant", "content": turn.content}
            if turn.thought and keep_thoughts:
                message["reasoning_content"] = turn.thought
            messages.append(message)
        else:
            messages.append({"role": "user", "content": turn.content})
    return out


def replayed(transcript: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(the evaluated turn's kind, ``call`` or ``ask``; its text as the model wrote it; the
    messages before it) per assistant turn of an `eval run` transcript: the model's own history,
    its thoughts as ``reasoning_content``."""
    out, messages = [], []
    for turn in transcript["turns"]:
        if turn["role"] == "assistant":
            written = turn.get("raw") or turn["content"]
            out.append(("call" if turn.get("tool_calls") else "ask", written, list(messages)))
            if turn.get("tool_calls"):
                break
            message = {"role": "assistant", "content": turn["content"]}
            if turn.get("thought"):
                message["reasoning_content"] = turn["thought"]
            messages.append(message)
        else:
            messages.append({"role": "user", "content": turn["content"]})
    return out


def replay(
    client: Any, model: str, path: Path, bench: Path, limit: int, max_tokens: int
) -> Counter[tuple[str, str]]:
    """Ask the server every assistant turn of the first `limit` transcripts of `path` with the
    history the evaluation gave the model and the candidates of its `bench` dialogue; count
    (evaluated kind, served kind) and whether the served text (the server's echo) equals the
    evaluated text."""
    candidates = {d.id: openai_tools(list(d.candidate_tools)) for d in load_dialogues(bench)}
    table: Counter[tuple[str, str]] = Counter()
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for transcript in [json.loads(line) for line in lines[:limit]]:
        tools = candidates[transcript["id"]]
        for want, written, messages in replayed(transcript):
            reply = client.chat.completions.create(
                model=model, messages=messages, tools=tools, temperature=0, max_tokens=max_tokens
            )
            got = answer_kind(reply.choices[0].message)
            echoed = (reply.model_extra or {}).get("diaforge", {}).get("text")
            same = "same" if echoed is not None and echoed.strip() == written.strip() else "differs"
            table[(want, got)] += 1
            table[("text", same)] += 1
            print(f"{transcript['id']}  evaluated {want:4}  served {got:5}  text {same}")
    return table


def summarise(table: Counter[tuple[str, str]], asked: str = "reference", answered: str = "answered") -> None:
    """One line per kind of turn asked: how many, and how each was answered."""
    print()
    for want in ("call", "ask"):
        row = {got: table[(want, got)] for got in ("call", "ask", "other")}
        print(
            f"{asked} {want} turns: {sum(row.values())}; {answered} "
            + ", ".join(f"{k} {v}" for k, v in row.items())
        )


def summarise_replay(table: Counter[tuple[str, str]]) -> None:
    summarise(table, "evaluated", "served")
    same, differs = table[("text", "same")], table[("text", "differs")]
    print(f"served text equal to the evaluated text: {same} of {same + differs}")


def answer_kind(message: Any) -> str:
    """``call`` (parsed tool calls), ``ask`` (text with a question mark) or ``other``."""
    if message.tool_calls:
        return "call"
    return "ask" if "?" in (message.content or "") else "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", required=True, help="the served model's name (its folder's name)")
    parser.add_argument("--api-key", default="none")
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--dialogues", type=int, default=10, help="held-out dialogues (seeded sample)")
    parser.add_argument("--max-tokens", type=int, default=634, help="the demo's evaluation budget")
    parser.add_argument(
        "--no-thoughts",
        action="store_true",
        help="send the history without the assistant's thoughts (a model trained with "
        "history_reasoning keep saw them)",
    )
    parser.add_argument(
        "--transcripts",
        type=Path,
        default=None,
        help="replay an `eval run`'s transcripts.jsonl instead: each assistant turn asked with the "
        "model's own history, the served reply compared with the evaluated one",
    )
    args = parser.parse_args(argv)

    from openai import OpenAI

    client = OpenAI(base_url=args.base_url, api_key=args.api_key, timeout=600)
    if args.transcripts is not None:
        summarise_replay(
            replay(client, args.model, args.transcripts, args.bench, args.dialogues, args.max_tokens)
        )
        return 0
    table: Counter[tuple[str, str]] = Counter()
    for dialogue in sample_benchmark(load_dialogues(args.bench), args.dialogues, 0):
        tools = openai_tools(list(dialogue.candidate_tools))
        for want, messages in requests_of(dialogue, keep_thoughts=not args.no_thoughts):
            reply = client.chat.completions.create(
                model=args.model, messages=messages, tools=tools, temperature=0, max_tokens=args.max_tokens
            )
            message = reply.choices[0].message
            got = answer_kind(message)
            table[(want, got)] += 1
            shown = (
                json.dumps([[c.function.name, json.loads(c.function.arguments)] for c in message.tool_calls])
                if message.tool_calls
                else (message.content or "")[:120]
            )
            print(
                f"{dialogue.id}  reference {want:4}  got {got:5}  {reply.choices[0].finish_reason:10}  {shown}"
            )
    summarise(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
