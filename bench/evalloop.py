"""The evaluation parts of `make bench`. `dynamic_eval` (`bench_dynamic_eval`): the dynamic loop
of the base model three ways at a small budget. `eval_loop`: the demo's evaluation loop (static and dynamic, SmolLM2 in
the demo's prompt format, the demo's token budget) timed three ways in one run:

* `one_at_a_time`: batch 1, every prompt recomputed by `model.generate`, every reply run to its
  end of turn or the budget (the loop before the prefix cache and the loop stop);
* `cached`: batch 8 through the prefix cache (`diaforge.llm.prefix_cache`), no loop stop;
* `cached_loop_stop`: the same with the loop stop (`diaforge.llm.loops`), what `eval run` does.

The value is one_at_a_time over cached_loop_stop. Under greedy decoding the first two must give
the same replies; the loop stop shortens looping replies, so for it the check is that every turn
has the same kind (reply, call, malformed, truncated) and every metric and anatomy share is equal.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

DEMO_SYSTEM_PROMPT = Path("recipes") / "smollm2-135m" / "system_prompt.txt"


def _model(path: Path, root: Path, *, batch_size: int, prefix_cache: bool, loop_stop: bool, budget: int):
    from diaforge.eval.models import ModelSpec, ModelUnderTest
    from diaforge.format import PromptFormat, read_system_prompt_file
    from diaforge.llm.decoding import DecodingConfig

    fmt = PromptFormat(tool_style="compact", system_prompt=read_system_prompt_file(root / DEMO_SYSTEM_PROMPT))
    return ModelUnderTest(
        ModelSpec(
            model=str(path),
            max_new_tokens=budget,
            batch_size=batch_size,
            prompt_format=fmt,
            prefix_cache=prefix_cache,
            decoding=DecodingConfig(loop_stop=loop_stop),
        )
    )


def _evaluate(
    model: Any, bench: list, t_max: int, modes: tuple[str, ...] = ("static", "dynamic")
) -> list[dict[str, Any]]:
    from diaforge.data_gen.agents import ScriptedUser, ScriptedVoter, VotingUser
    from diaforge.eval.runner import DynamicConfig, run_dynamic, run_static

    near_dup = {d.id: False for d in bench}
    user = VotingUser(ScriptedUser(wording="heldout"), ScriptedVoter(), n=3, m=3)

    async def both() -> list[dict[str, Any]]:
        static = await run_static(model, bench, near_dup, progress=False) if "static" in modes else []
        dynamic = []
        if "dynamic" in modes:
            dynamic = await run_dynamic(
                model, bench, near_dup, user, DynamicConfig(t_max=t_max), progress=False
            )
        return [t.model_dump() for t in (*static, *dynamic)]

    return asyncio.run(both())


def _kinds(records: list[dict[str, Any]]) -> list[list[str]]:
    return [[t.get("kind", t["role"]) for t in r["turns"]] for r in records]


def _scores(records: list[dict[str, Any]]) -> dict[str, Any]:
    from diaforge.eval.anatomy import anatomy_by_mode
    from diaforge.eval.metrics import metrics_by_mode
    from diaforge.eval.transcripts import Transcript

    transcripts = [Transcript.model_validate(r) for r in records]
    return {"metrics": metrics_by_mode(transcripts), "anatomy": anatomy_by_mode(transcripts)}


def bench_eval_loop(
    root: Path, model_path: Path, bench_path: Path, num_dialogues: int = 4, t_max: int = 3, budget: int = 320
) -> dict[str, Any]:
    """The three timings and the checks (module docstring)."""
    from diaforge.schema import load_dialogues

    bench = load_dialogues(bench_path)[:num_dialogues]
    runs: dict[str, tuple[float, list]] = {}
    for name, batch, cache, loops in (
        ("cached_loop_stop", 8, True, True),
        ("cached", 8, True, False),
        ("one_at_a_time", 1, False, False),
    ):
        model = _model(model_path, root, batch_size=batch, prefix_cache=cache, loop_stop=loops, budget=budget)
        start = time.perf_counter()
        records = _evaluate(model, bench, t_max)
        runs[name] = (time.perf_counter() - start, records)
    raws = {n: [[t.get("raw") for t in r["turns"]] for r in recs] for n, (_, recs) in runs.items()}
    fast, plain, slow = (runs[n][0] for n in ("cached_loop_stop", "cached", "one_at_a_time"))
    generated = {
        n: sum(len(t.get("raw") or "") for r in recs for t in r["turns"] if t["role"] == "assistant")
        for n, (_, recs) in runs.items()
    }
    return {
        "value": round(slow / fast, 3),
        "seconds": {n: round(s, 2) for n, (s, _) in runs.items()},
        "cached_over_one_at_a_time": round(slow / plain, 3),
        "loop_stop_over_cached": round(plain / fast, 3),
        "generated_characters": generated,
        "cached_replies_identical_to_one_at_a_time": raws["cached"] == raws["one_at_a_time"],
        "loop_stop_turn_kinds_identical": _kinds(runs["cached_loop_stop"][1]) == _kinds(runs["cached"][1]),
        "loop_stop_scores_identical": _scores(runs["cached_loop_stop"][1]) == _scores(runs["cached"][1]),
        "setup": (
            f"diaforge.eval.runner.run_static then run_dynamic on the first {num_dialogues} dialogues of the held-out "
            f"benchmark, SmolLM2-135M-Instruct (base) in the demo's format (compact listing, "
            f"{DEMO_SYSTEM_PROMPT}), hf backend on CPU, greedy, max_new_tokens={budget}, t_max={t_max}, "
            "scripted voting user n=3 m=3 (heldout wording)"
        ),
    }


def bench_dynamic_eval(
    path: Path, num_dialogues: int = 8, t_max: int = 3, max_new_tokens: int = 48
) -> dict[str, Any]:
    """Dynamic evaluation of SmolLM2-135M-Instruct (base, which never calls a tool, so every
    dialogue runs its t_max turns) on the first held-out benchmark dialogues, three ways: one
    dialogue at a time recomputing every prompt (`model.generate`, the path before the prefix
    cache), batched the same way, and batched through the prefix cache (the default)."""
    from diaforge.bench.inputs import BENCH
    from diaforge.data_gen.agents import ScriptedUser, ScriptedVoter, VotingUser
    from diaforge.eval.models import ModelSpec, ModelUnderTest
    from diaforge.eval.runner import DynamicConfig, run_dynamic
    from diaforge.format import PromptFormat
    from diaforge.schema import load_dialogues

    bench = load_dialogues(BENCH)[:num_dialogues]
    user = VotingUser(ScriptedUser(wording="heldout"), ScriptedVoter(), n=3, m=3)
    cfg = DynamicConfig(t_max=t_max)
    near_dup = {d.id: False for d in bench}

    def timed(batch_size: int, prefix_cache: bool) -> tuple[float, list, ModelUnderTest]:
        # Compact tool listings, as `make demo` evaluates; a fresh model each time, so no run
        # starts with another's cache.
        model = ModelUnderTest(
            ModelSpec(
                model=str(path),
                max_new_tokens=max_new_tokens,
                batch_size=batch_size,
                prompt_format=PromptFormat(tool_style="compact"),
                prefix_cache=prefix_cache,
            )
        )
        start = time.perf_counter()
        records = [
            t.model_dump()
            for t in asyncio.run(run_dynamic(model, bench, near_dup, user, cfg, progress=False))
        ]
        return time.perf_counter() - start, records, model

    t_cached, cached, model = timed(8, True)
    stats = model._backend.prefix_cache.stats
    t_batched, batched, _ = timed(8, False)
    t_sequential, sequential, _ = timed(1, False)
    turns = sum(1 for r in cached for t in r["turns"] if t["role"] == "assistant")
    generated = sum(len(t.get("raw") or "") for r in cached for t in r["turns"] if t["role"] == "assistant")

    def raws(records: list) -> list:
        return [[t.get("raw") for t in r["turns"]] for r in records]

    return {
        "value": round(t_sequential / t_cached, 3),
        "cached_batched_seconds": round(t_cached, 3),
        "batched_seconds": round(t_batched, 3),
        "sequential_seconds": round(t_sequential, 3),
        "batched_over_sequential_without_cache": round(t_sequential / t_batched, 3),
        "prompt_tokens_reused": round(stats.reuse_share, 3),
        "dialogues": len(bench),
        "assistant_turns": turns,
        "generated_characters": generated,
        "transcripts_identical": raws(cached) == raws(batched) == raws(sequential),
        "setup": (
            f"diaforge.eval.runner.run_dynamic, SmolLM2-135M-Instruct (base), hf backend on CPU, greedy, tool_style "
            f"compact, max_new_tokens={max_new_tokens}, t_max={t_max}, scripted voting user n=3 m=3 (heldout "
            "wording); sequential = batch 1 with model.generate, batched = batch 8 with model.generate, "
            "cached = batch 8 through the prefix cache (eval.models.ModelSpec.prefix_cache)"
        ),
    }


class _Chunked:
    """The evaluation loop before continuous batching: each batched call takes `size`
    conversations at a time (the longest prompts first) and decodes them until its last row ends."""

    def __init__(self, backend: Any, size: int) -> None:
        self.backend, self.size, self.batched = backend, size, backend.generate_batch

    def __call__(self, requests: list, **kw: Any) -> list:
        lengths = [len(self.backend._encode(r.messages, r.tools)) for r in requests]
        order = sorted(range(len(requests)), key=lambda i: -lengths[i])
        results: list[Any] = [None] * len(requests)
        for start in range(0, len(order), self.size):
            chunk = order[start : start + self.size]
            replies = self.batched([requests[i] for i in chunk], batch_size=self.size)
            for i, reply in zip(chunk, replies, strict=True):
                results[i] = reply
        return results


def bench_eval_batching(
    model_path: Path, bench_path: Path, num_dialogues: int = 24, t_max: int = 5, budget: int = 634
) -> dict[str, Any]:
    """The dynamic loop as `make demo` runs it on a model (its own prompt format, calls
    constrained, the demo's budget) four ways in one run: chunks of 8 (each batch decodes until
    its longest reply ends, its cache concatenated at every step: the loop before), continuous
    batching of 8 and of 16 rows (a row that ends takes the next waiting dialogue in) with the
    keys and values written in place, and continuous 16 with the concatenating cache. The value
    is chunks of 8 over continuous 16; ``in_place_over_concat`` isolates the in-place cache."""
    from diaforge.data_gen.agents import ScriptedUser, ScriptedVoter, VotingUser
    from diaforge.eval.models import ModelSpec, ModelUnderTest
    from diaforge.eval.runner import DynamicConfig, run_dynamic, sample_benchmark
    from diaforge.format import PromptFormat
    from diaforge.llm.decoding import DecodingConfig
    from diaforge.schema import load_dialogues

    bench = sample_benchmark(load_dialogues(bench_path), num_dialogues, 0)
    user = VotingUser(ScriptedUser(wording="heldout"), ScriptedVoter(), n=3, m=3)
    near_dup = {d.id: False for d in bench}
    fmt = PromptFormat.load(model_path) or PromptFormat(tool_style="compact")
    runs: dict[str, tuple[float, list]] = {}
    for name, size, chunked, in_place in (
        ("chunks_8", 8, True, False),
        ("continuous_8", 8, False, True),
        ("continuous_16_concat", 16, False, False),
        ("continuous_16", 16, False, True),
    ):
        spec = ModelSpec(
            model=str(model_path),
            max_new_tokens=budget,
            batch_size=size,
            prompt_format=fmt,
            decoding=DecodingConfig(constrain_calls=True),
        )
        model = ModelUnderTest(spec)
        if chunked:
            model._backend.generate_batch = _Chunked(model._backend, size)
        if model._backend.prefix_cache is not None:
            model._backend.prefix_cache.grow_in_place = in_place
        start = time.perf_counter()
        found = asyncio.run(
            run_dynamic(model, bench, near_dup, user, DynamicConfig(t_max=t_max), progress=False)
        )
        runs[name] = (time.perf_counter() - start, [t.model_dump() for t in found])
    seconds = {n: round(s, 1) for n, (s, _) in runs.items()}
    raws = {n: [[t.get("raw") for t in r["turns"]] for r in recs] for n, (_, recs) in runs.items()}
    base = raws["chunks_8"]
    return {
        "value": round(seconds["chunks_8"] / seconds["continuous_16"], 3),
        "seconds": seconds,
        "continuous_8_over_chunks_8": round(seconds["chunks_8"] / seconds["continuous_8"], 3),
        "in_place_over_concat": round(seconds["continuous_16_concat"] / seconds["continuous_16"], 3),
        "assistant_turns": sum(
            1 for r in runs["chunks_8"][1] for t in r["turns"] if t["role"] == "assistant"
        ),
        "dialogues_with_identical_transcripts": {
            n: sum(a == b for a, b in zip(raws[n], base, strict=True)) for n in raws
        },
        "scores_identical": {n: _scores(runs[n][1]) == _scores(runs["chunks_8"][1]) for n in raws},
        "setup": (
            f"diaforge.eval.runner.run_dynamic on {len(bench)} held-out dialogues (seeded sample), {model_path.name} in "
            f"its own prompt format, hf backend on CPU, greedy, calls constrained, max_new_tokens={budget}, "
            f"t_max={t_max}, scripted voting user n=3 m=3 (heldout wording), one fresh model per way"
        ),
    }


def add_batching_args(parser: Any) -> None:
    """The options of the eval_batching part."""
    parser.add_argument(
        "--batching-model",
        help="model of the eval_batching part, e.g. a tuned demo model (default: none, SmolLM2-135M-Instruct, "
        "which rarely ends a reply, so batching gains little)",
    )
    parser.add_argument(
        "--batching-dialogues", type=int, default=8, help="held-out dialogues of the eval_batching part"
    )
    parser.add_argument(
        "--batching-budget",
        type=int,
        default=320,
        help="max_new_tokens of the eval_batching part (the demo evaluates with 634)",
    )
