"""The `eval_speculation` part of `make bench`: the demo's evaluation loop (dynamic by default,
every decoding aid on: constrained calls, grounded values, copied thoughts) with and without
prompt-lookup speculation (`DecodingConfig.speculate`), in one run, on the same dialogues.

What it reports: forward passes and wall time with speculation over without (the decoding steps
the model ran, `CacheStats.forward_passes`), the dialogues whose transcripts are identical (under
greedy decoding speculation must change nothing but the cost), the drafted and accepted tokens,
and the accepted ones by what the reply was writing (thought, call, text). A tuned model copies
its listing into its thoughts and the user's words into its calls, which is where drafts hit; the
base model (the default) copies far less.

`replay` answers what other draft widths would have cost without running the model again: under
greedy decoding every reply is known once the run without speculation has written it, and whether
a drafted token is accepted is whether it is the reply's next token. So the plain run's calls (each
prompt and reply, in the generator's order) are replayed through the generator's schedule
(`max_rows` rows, a waiting prompt taking the place of one that ended, its first token written at
its prefill) with `PromptLookup` and `DraftWidth` themselves, at several pass overheads. At the
run's own overhead the replay must give the speculated run's forward passes exactly
(`replay.matches_run`); at the others it says how passes and fed columns trade.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from diaforge.bench.evalloop import _evaluate, _scores

__all__ = ["add_speculation_args", "bench_eval_speculation"]


def bench_eval_speculation(
    model_path: Path,
    bench_path: Path,
    num_dialogues: int = 8,
    t_max: int = 5,
    budget: int = 320,
    speculate: int = 8,
    modes: tuple[str, ...] = ("dynamic",),
) -> dict[str, Any]:
    """The two runs and the checks (module docstring)."""
    from diaforge.errors import InputError

    if not modes or set(modes) - {"static", "dynamic"}:
        raise InputError(
            f"--speculation-modes: expected static and/or dynamic, got {','.join(modes) or 'nothing'}"
        )
    from diaforge.eval.models import ModelSpec, ModelUnderTest
    from diaforge.eval.runner import sample_benchmark
    from diaforge.format import PromptFormat
    from diaforge.llm.decoding import DecodingConfig
    from diaforge.schema import load_dialogues

    bench = sample_benchmark(load_dialogues(bench_path), num_dialogues, 0)
    fmt = PromptFormat.load(model_path) or PromptFormat(tool_style="compact")
    runs: dict[str, dict[str, Any]] = {}
    calls: list[tuple[int, list[tuple[list[int], list[int]]]]] = []
    overhead = 0.0
    for name, k in (("plain", 0), ("speculated", speculate)):
        decoding = DecodingConfig(constrain_calls=True, ground_values=True, copy_thoughts=True, speculate=k)
        spec = ModelSpec(
            model=str(model_path), max_new_tokens=budget, batch_size=16, prompt_format=fmt, decoding=decoding
        )
        model = ModelUnderTest(spec)
        if name == "plain":
            overhead = _record_calls(model._backend.prefix_cache, calls)
        start = time.perf_counter()
        records = _evaluate(model, bench, t_max, modes)
        seconds = time.perf_counter() - start
        runs[name] = {
            "seconds": seconds,
            "records": records,
            "stats": model.cache_stats or {},
            "spans": dict(model._backend.speculation),
        }
        asyncio.run(model.aclose())
    plain, fast = runs["plain"], runs["speculated"]
    raws = {n: [[t.get("raw") for t in r["turns"]] for r in run["records"]] for n, run in runs.items()}
    passes = {n: run["stats"].get("forward_passes", 0) for n, run in runs.items()}
    return {
        "value": round(passes["speculated"] / max(1, passes["plain"]), 3),
        "wall_ratio": round(fast["seconds"] / plain["seconds"], 3),
        "seconds": {n: round(run["seconds"], 1) for n, run in runs.items()},
        "forward_passes": passes,
        # The wall time inside decoding passes, which drafts can shorten, and inside prefills,
        # which they cannot; the rest of `seconds` is the loop's own (rules aside: they are inside
        # the passes), the user proxy's and the scoring's.
        "decode_seconds": {n: run["stats"].get("decode_seconds") for n, run in runs.items()},
        "prefill_seconds": {n: run["stats"].get("prefill_seconds") for n, run in runs.items()},
        "drafted_tokens": fast["stats"].get("drafted_tokens", 0),
        "accepted_tokens": fast["stats"].get("accepted_tokens", 0),
        "accepted_by_span": fast["spans"],
        "transcripts": len(raws["plain"]),
        "identical_transcripts": sum(a == b for a, b in zip(raws["plain"], raws["speculated"], strict=True)),
        "scores_identical": _scores(plain["records"]) == _scores(fast["records"]),
        "replay": _replays(calls, speculate, overhead, passes["speculated"]),
        "pass_cost": pass_cost(model_path),
        "setup": (
            f"diaforge.eval.runner ({', '.join(modes)}) on {len(bench)} held-out dialogues (seeded sample), "
            f"{model_path.name} in its own prompt format, hf backend on CPU, greedy, batch 16 through the prefix "
            f"cache, every aid on, max_new_tokens={budget}, t_max={t_max}, speculate={speculate} against 0; "
            "value = forward passes with speculation over without"
        ),
    }


def _record_calls(gen: Any, calls: list[tuple[int, list[tuple[list[int], list[int]]]]]) -> float:
    """Make `gen` (a `PrefixCachedGenerator`) note each call's row cap, prompts and replies in
    `calls`; the pass overhead its speculative passes would use."""
    from diaforge.llm.drafts import DEFAULT_OVERHEAD, PASS_OVERHEAD

    generate = gen.generate

    def noted(prompts: list[list[int]], **kwargs: Any) -> list[Any]:
        out = generate(prompts, **kwargs)
        cap = kwargs.get("max_rows") or len(prompts)
        calls.append((cap, [(list(p), list(g.ids)) for p, g in zip(prompts, out, strict=True)]))
        return out

    gen.generate = noted
    if gen.pass_overhead is not None:
        return float(gen.pass_overhead)
    return PASS_OVERHEAD.get(gen.model.device.type, DEFAULT_OVERHEAD)


def replay(
    calls: list[tuple[int, list[tuple[list[int], list[int]]]]], speculate: int, overhead: float
) -> dict[str, int]:
    """The forward passes, drafted and accepted tokens, and token columns fed, of decoding these
    calls (row cap, then each prompt and its greedy reply) with `speculate` drafted tokens at this
    pass overhead (module docstring)."""
    out = {"forward_passes": 0, "drafted_tokens": 0, "accepted_tokens": 0, "columns": 0}
    for cap, rows in calls:
        _ReplayedCall(rows, speculate, overhead).run(cap, out)
    return out


class _ReplayedCall:
    """One generator call replayed from its known replies (`replay`)."""

    def __init__(self, rows: list[tuple[list[int], list[int]]], speculate: int, overhead: float) -> None:
        from diaforge.llm.drafts import DraftWidth, PromptLookup

        self.replies, self.speculate = [reply for _, reply in rows], speculate
        self.width = DraftWidth(overhead)
        self.lookups = [PromptLookup(prompt) if speculate else None for prompt, _ in rows]
        self.written = [0] * len(rows)

    def take(self, i: int) -> bool:
        """Row `i` writes its next token; True when its reply is done."""
        lookup = self.lookups[i]
        if lookup is not None:
            lookup.add(self.replies[i][self.written[i]])
        self.written[i] += 1
        if self.written[i] < len(self.replies[i]):
            return False
        self.width.forget(i)
        return True

    def run(self, cap: int, out: dict[str, int]) -> None:
        from collections import deque

        waiting, active = deque(i for i, reply in enumerate(self.replies) if reply), []
        while waiting or active:
            while waiting and len(active) < cap:
                i = waiting.popleft()
                if not self.take(i):  # the token its prefill writes
                    active.append(i)
            if not active:
                continue
            drafts = [self.lookups[i].draft(self.speculate) if self.speculate else [] for i in active]
            width = self.width.width(active, drafts) if any(drafts) else 1
            out["forward_passes"] += 1
            out["columns"] += width * len(active)
            active = [
                i
                for i, draft in zip(active, drafts, strict=True)
                if not self.verify(i, draft[: width - 1], out)
            ]

    def verify(self, i: int, draft: list[int], out: dict[str, int]) -> bool:
        """Row `i` keeps the drafted tokens its reply goes on with, then writes its own; True when
        its reply is done."""
        kept, ended = 0, False
        for j in range(len(draft) + 1):
            hit = j < len(draft) and self.replies[i][self.written[i]] == draft[j]
            kept += hit
            ended = self.take(i)
            if ended or not hit:
                break
        out["drafted_tokens"] += len(draft)
        out["accepted_tokens"] += kept
        if draft and not ended:
            self.width.verified(i, len(draft), kept)
        return ended


def _replays(
    calls: list[tuple[int, list[tuple[list[int], list[int]]]]], speculate: int, overhead: float, passes: int
) -> dict[str, Any]:
    """`replay` at the run's overhead (checked against the run) and at a few others."""
    overheads = sorted({16.0, 24.0, 32.0, float(overhead), 64.0, 96.0, 1e9})
    plain = replay(calls, 0, overhead)
    by_overhead = {}
    for o in overheads:
        r = replay(calls, speculate, o)
        r["pass_ratio"] = round(r["forward_passes"] / max(1, plain["forward_passes"]), 3)
        r["column_ratio"] = round(r["columns"] / max(1, plain["columns"]), 3)
        by_overhead["unbounded" if o >= 1e9 else f"{o:g}"] = r
    return {
        "overhead": overhead,
        "plain": plain,
        "by_overhead": by_overhead,
        "matches_run": by_overhead[f"{overhead:g}"]["forward_passes"] == passes,
    }


def add_speculation_args(parser: Any) -> None:
    """The options of the eval_speculation part."""
    parser.add_argument(
        "--speculation-model",
        help="model of the eval_speculation part, e.g. outputs/demo/sft (default: none, SmolLM2-135M-Instruct)",
    )
    parser.add_argument(
        "--speculation-dialogues", type=int, default=8, help="held-out dialogues of the eval_speculation part"
    )
    parser.add_argument(
        "--speculation-budget", type=int, default=320, help="max_new_tokens of the eval_speculation part"
    )
    parser.add_argument(
        "--speculate", type=int, default=8, help="drafted tokens per step of the eval_speculation part"
    )
    parser.add_argument(
        "--speculation-modes",
        default="dynamic",
        help="evaluation modes of the eval_speculation part, comma-separated (static, dynamic)",
    )


def pass_cost(
    model_path: Path,
    rows: int = 16,
    context: int = 1200,
    widths: tuple[int, ...] = (1, 2, 3, 5, 9),
    reps: int = 3,
) -> dict[str, Any]:
    """What a decoding pass costs against the columns it feeds, as the generator runs it (`rows`
    rows of up to `context` cached tokens, left-padded, in `DecodeRows`' in-place buffers, grouped
    heads attended in place for a pass of several tokens): the median seconds at each
    width, and the least-squares line ``c0 + c1 * rows * width`` through them; ``overhead`` is
    ``c0 / c1``, the fixed cost of a pass in columns (`diaforge.llm.drafts.PASS_OVERHEAD`)."""
    import statistics

    import torch
    from transformers import AutoModelForCausalLM

    from diaforge.llm.decode_rows import DecodeRows
    from diaforge.llm.prefix_cache import grouped_query_attention

    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32).eval()
    seconds: dict[int, float] = {}
    with torch.inference_mode():
        ids = torch.arange(1000, 1000 + context).unsqueeze(0) % model.config.vocab_size
        kv = [
            (layer.keys, layer.values)
            for layer in model(input_ids=ids, use_cache=True).past_key_values.layers
        ]
        for width in widths:
            times = []
            for _ in range(reps):
                batch = DecodeRows(model.device)
                batch.join([(b, _head(kv, context - 23 * b), context - 23 * b, 7) for b in range(rows)])
                for _ in range(2):  # the first pass makes the buffers the rest grow into
                    start = time.perf_counter()
                    with grouped_query_attention() if width > 1 else contextlib.nullcontext():
                        model(
                            input_ids=torch.full((rows, width), 7),
                            position_ids=batch.positions.view(-1, 1) + torch.arange(width),
                            attention_mask=batch.grow_mask([width] * rows),
                            past_key_values=batch.cache,
                            use_cache=True,
                        )
                    batch.positions = batch.positions + width
                times.append(time.perf_counter() - start)
            seconds[width] = statistics.median(times)
    columns = [rows * w for w in widths]
    mean_x, mean_y = statistics.fmean(columns), statistics.fmean(seconds.values())
    c1 = sum((x - mean_x) * (seconds[w] - mean_y) for x, w in zip(columns, widths, strict=True)) / sum(
        (x - mean_x) ** 2 for x in columns
    )
    c0 = mean_y - c1 * mean_x
    return {
        "seconds_by_width": {str(w): round(s, 4) for w, s in seconds.items()},
        "per_column_s": round(c1, 5),
        "fixed_s": round(c0, 4),
        "overhead": round(c0 / c1, 1) if c1 > 0 else None,
        "setup": f"{rows} rows of {context} cached tokens, widths {list(widths)}, median of {reps}",
    }


def _head(kv: list, n: int) -> list:
    """The first `n` tokens' keys and values of every layer."""
    return [(k[:, :, :n], v[:, :, :n]) for k, v in kv]
