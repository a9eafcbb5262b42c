"""Ask a running OpenAI-compatible server for the reference turns of held-out dialogues with the
OpenAI Python client, and count what comes back: parsed `tool_calls` where the reference calls,
a question where it asks. What a user of `diaforge serve` (or of a stock engine reading the
saved `response_template`) sees, turn by turn.

    diaforge serve outputs/demo/sft --port 8000 --constrain-calls on --ground-values on --copy-thoughts on &
    python -m scripts.serve_client_check --base-url http://127.0.0.1:8000/v1 --model sft --dialogues 10

Each request holds the dialogue's reference history up to the turn (user words and the
assistant's questions, no thoughts) and its candidate tools as OpenAI ``tools=``; temperature 0.
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


def requests_of(dialogue: Dialogue) -> list[tuple[str, list[dict[str, Any]]]]:
    """(the reference turn's kind, ``call`` or ``ask``; the messages before it) per assistant turn."""
    out, messages = [], []
    for turn in dialogue.turns:
        if turn.role == "assistant":
            out.append(("call" if turn.tool_calls else "ask", list(messages)))
            if turn.tool_calls:
                break
            messages.append({"role": "assistant", "content": turn.content})
        else:
            messages.append({"role": "user", "content": turn.content})
    return out


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
    parser.add_argument("--max-tokens", type=int, default=384)
    args = parser.parse_args(argv)

    from openai import OpenAI

    client = OpenAI(base_url=args.base_url, api_key=args.api_key, timeout=600)
    table: Counter[tuple[str, str]] = Counter()
    for dialogue in sample_benchmark(load_dialogues(args.bench), args.dialogues, 0):
        tools = openai_tools(list(dialogue.candidate_tools))
        for want, messages in requests_of(dialogue):
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
    print()
    for want in ("call", "ask"):
        row = {got: table[(want, got)] for got in ("call", "ask", "other")}
        print(
            f"reference {want} turns: {sum(row.values())}; answered "
            + ", ".join(f"{k} {v}" for k, v in row.items())
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
