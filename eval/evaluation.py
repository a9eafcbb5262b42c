"""One evaluation run, as a function: ``evaluate(EvalConfig(...)) -> EvalResult``.

``python -m diaforge.eval run`` is this function behind a command line (`diaforge.eval.cli` parses the flags and
the ``--config`` file into an `diaforge.eval.EvalConfig` and calls it); a notebook or a script calls it
directly. A run reads top to bottom as its steps:

1. the benchmark, its seeded sample, and the no-tool split when there is one (`diaforge.eval.no_tool`);
2. the model under test and the prompt format it was trained with (`diaforge.eval.model_spec`),
   the run folder (checked writable before anything is loaded) and the device;
3. the token budget (`diaforge.eval.budget.run_budget`: ``auto`` measures the benchmark in the model's tokenizer);
4. the user-proxy of dynamic mode (`user_proxy`);
5. each mode on the positive split (dynamic mode `repeats` times, `diaforge.eval.passk`), then on the
   no-tool split, played once (`diaforge.eval.runner`);
6. ConvRel grades when a judge is named;
7. the run folder (`diaforge.eval.report.write_run`: transcripts, metrics, report, plot, W&B, and the
   candidate tool specs, ``tools.json``, from which the decisions and clarification are scored).

Every problem a person can fix is an `InputError` raised before the model is loaded (a bad
server is a `BackendError` once the model and servers are asked whether they answer).
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.errors import InputError
from diaforge.eval.eval_config import EvalConfig
from diaforge.eval.policies import POLICIES

if TYPE_CHECKING:
    from diaforge.data_gen.agents import VotingUser
    from diaforge.eval.budget import Budget
    from diaforge.eval.models import FormatChoice, ModelSpec, ModelUnderTest
    from diaforge.eval.transcripts import Transcript
    from diaforge.llm.openai_backend import OpenAIBackend
    from diaforge.schema import Dialogue

__all__ = ["EvalConfig", "EvalResult", "aevaluate", "evaluate", "user_proxy"]


@dataclass
class EvalResult:
    """What one evaluation run gave: its metrics, its transcripts and where it wrote them."""

    run_dir: Path
    """The run folder: ``metrics.json``, ``transcripts.jsonl``, ``report.md``, ``tradeoff.png``."""
    modes: dict[str, dict[str, Any]]
    """The metrics of Appendix C.1 (Acc, FTR, TAR, ..., ``n``) per mode that ran, on the positive
    split (repeat 0 when there are repeats): ``result.modes["dynamic"]["Acc"]``."""
    anatomy: dict[str, dict[str, Any]]
    """Per mode, what the dialogues were made of (`diaforge.eval.anatomy`: asks first, right tool, ...)."""
    no_tool: dict[str, Any] | None
    """The no-tool split's metrics per mode (`diaforge.eval.no_tool`), or None when it did not run."""
    metrics: dict[str, Any]
    """All of ``metrics.json``: the above, breakdowns, endings and the run's settings."""
    transcripts: list[Transcript] = field(repr=False)
    """Every dialogue as played, per mode, split and repeat (``transcripts.jsonl``)."""
    budget: Budget | None = None
    """The token budget and where it came from; None for a reference policy."""
    pass_k: dict[str, Any] | None = None
    """With ``repeats`` > 1, pass^1 ... pass^k of the dynamic mode (`diaforge.eval.passk`):
    ``result.pass_k["dynamic"]["pass^3"]``; None otherwise."""

    def summary_lines(self) -> list[str]:
        """What ``eval run`` prints: per mode the headline metrics (of repeat 0), each with its 95 %
        interval (`diaforge.eval.intervals`), the anatomy counts and, with repeats, pass^1 ... pass^k
        (`diaforge.eval.passk`); the no-tool split's line per mode, and the run folder."""
        from diaforge.eval.no_tool import run_lines
        from diaforge.eval.passk import passk_lines
        from diaforge.eval.tables import fmt_ci, interval_of

        lines = []
        for mode, m in self.modes.items():

            def ci(key: str, m: dict[str, Any] = m, mode: str = mode) -> str:
                return fmt_ci(float(m[key]), interval_of(self.metrics, mode, key), digits=3)

            turns = (interval_of(self.metrics, mode, "malformed") or {}).get("n")
            lines.append(
                f"{mode:8s} Acc {ci('Acc')}  FTR {ci('FTR')}  TAR {ci('TAR')}  malformed {ci('malformed')}"
                f"{'' if turns is None else f' of {turns} turns'}  truncated {ci('truncated')}  n={m['n']}"
            )
            a = self.anatomy.get(mode)
            if a:
                lines.append(
                    f"{'':8s} asks first {a['asks_first_n']}/{a['n']}  right tool {a['right_tool_n']}/"
                    f"{a['calls_n']}  right keys {a['right_keys_n']}/{a['right_tool_n']}  values grounded "
                    f"{a['values_grounded_n']}/{a['values_n']}"
                )
            lines += passk_lines(self.metrics, mode)
        return [*lines, *run_lines(self.metrics), f"run folder: {self.run_dir}"]


def evaluate(config: EvalConfig) -> EvalResult:
    """Run the evaluation `config` describes and write its run folder (module docstring). Safe to
    call where an event loop already runs (a notebook): the run then gets a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(config))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, aevaluate(config)).result()


@dataclass
class _Benchmarks:
    full: list[Dialogue]
    """The whole benchmark file (the auto budget is measured on it, not on the sample)."""
    sample: list[Dialogue]
    split: list[Dialogue]
    """The no-tool split's sample (empty when it does not run)."""
    split_path: Path | None


def _benchmarks(config: EvalConfig) -> _Benchmarks:
    from diaforge.eval.no_tool import check_positive_bench, load_no_tool_split, no_tool_bench_for
    from diaforge.eval.runner import sample_benchmark
    from diaforge.schema import load_dialogues

    full = load_dialogues(config.bench)
    check_positive_bench(config.bench, full)
    sample = sample_benchmark(full, config.limit, config.seed)
    split_path = no_tool_bench_for(config.bench, config.no_tool_bench)
    split = (
        sample_benchmark(load_no_tool_split(split_path), config.no_tool_limit, config.seed)
        if split_path
        else []
    )
    return _Benchmarks(full, sample, split, split_path)


async def aevaluate(config: EvalConfig) -> EvalResult:
    """`evaluate` as a coroutine, for a caller that runs its own event loop."""
    from diaforge.console import quiet_library_bars
    from diaforge.eval.budget import run_budget
    from diaforge.eval.model_spec import check_device, format_line, model_spec, slug
    from diaforge.eval.models import ModelUnderTest, offline_env
    from diaforge.eval.report import write_run
    from diaforge.eval.tool_specs import specs_from_dialogues
    from diaforge.hygiene import check_output_dir

    if config.quiet:
        quiet_library_bars()
    offline_env()
    if config.out:  # a folder named is checked first, as the flags are; the default once it is known
        check_output_dir(config.out, field="out", what="run folder")
    check_device(config)
    benches = _benchmarks(config)
    spec, choice = model_spec(config)
    out = Path(config.out or Path("outputs/eval") / slug(spec.model, spec.prompt_format.prompt_mode))
    if not config.out:
        check_output_dir(out, field="out", what="run folder")
    budget = None
    if not spec.is_policy:  # a reference policy writes its turns whole: no budget applies
        budget = run_budget(config.max_new_tokens, spec, benches.full)
        spec.max_new_tokens = budget.max_new_tokens
    user, user_backend = user_proxy(config)
    started = time.monotonic()
    if spec.backend not in ("openai", *POLICIES) and not config.quiet:
        print(f"loading {spec.model} ({spec.backend}; {format_line(choice)}) ...", file=sys.stderr)
    model = ModelUnderTest(spec)
    try:
        await model.check()
        if user_backend is not None:
            await user_backend.check()
        if budget is not None:  # once everything is reachable: an error stays the only line
            print(budget.describe(), file=sys.stderr)
        transcripts, seconds = await _play_modes(config, model, benches.sample, user)
        split_seconds: dict[str, float] = {}
        if benches.split:  # after the positive split, so that it runs exactly as it did without it
            more, split_seconds = await _play_modes(config, model, benches.split, user, split="no_tool")
            transcripts += more
        if config.judge:
            await _grade(config, transcripts)
    finally:
        await model.aclose()
        if user_backend is not None:
            await user_backend.aclose()
    settings = _settings(config, spec, choice, budget, model, user.name, benches.split_path)
    settings.update(seconds=seconds, no_tool_seconds=split_seconds)
    settings["wall_seconds"] = round(time.monotonic() - started, 2)
    metrics = write_run(
        out,
        transcripts,
        model_label=config.label or spec.model,
        extra=settings,
        wandb_cfg=config.wandb,
        tools=specs_from_dialogues([*benches.sample, *benches.split], source=str(config.bench)),
    )
    return EvalResult(
        run_dir=out,
        modes={m: metrics[m] for m in config.modes if m in metrics},
        anatomy=dict(metrics.get("anatomy", {})),
        no_tool=metrics.get("no_tool"),
        metrics=metrics,
        transcripts=transcripts,
        budget=budget,
        pass_k=metrics.get("pass_k"),
    )


def user_proxy(config: EvalConfig) -> tuple[VotingUser, OpenAIBackend | None]:
    """The voting user-proxy of dynamic mode (n candidates, m voters): `scripted`, or
    `openai:MODEL` on any OpenAI-compatible server (`user_base_url`), with the backend to check
    and close (None for the scripted one)."""
    from diaforge.data_gen.agents import LLMUser, LLMVoter, ScriptedUser, ScriptedVoter, VotingUser

    n, m = config.n_samples, config.n_voters
    if config.user_proxy == "scripted":
        # The benchmark's own wording bank; `_play_modes` gives it the sentence encoder once the
        # model and servers have answered, so that a bad server stays a one-line error.
        return VotingUser(ScriptedUser(wording="heldout"), ScriptedVoter(), n=n, m=m), None
    kind, _, name = config.user_proxy.partition(":")
    if kind != "openai" or not name:
        raise InputError(f"unknown user proxy {config.user_proxy!r}; use 'scripted' or 'openai:MODEL'")
    from diaforge.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(name, base_url=config.user_base_url)
    return VotingUser(LLMUser(backend), LLMVoter(backend), n=n, m=m), backend


async def _play_modes(
    config: EvalConfig,
    model: ModelUnderTest,
    bench: list[Dialogue],
    user: VotingUser,
    split: str = "positive",
) -> tuple[list[Transcript], dict[str, float]]:
    """Each mode of `config` on `bench` (the positive split, or the no-tool split): (transcripts,
    seconds per mode)."""
    from diaforge import similarity
    from diaforge.eval.runner import DynamicConfig, near_duplicate_flags, run_dynamic, run_static

    encoder = similarity.get_encoder()
    near_dup = near_duplicate_flags(bench, encoder)
    if hasattr(user.user, "encoder"):  # the scripted proxy reads questions by meaning too
        user.user.encoder = encoder
    transcripts: list[Transcript] = []
    seconds: dict[str, float] = {}
    progress = not config.quiet
    for mode in config.modes:
        t0 = time.monotonic()
        if mode == "static":
            transcripts += await run_static(model, bench, near_dup, progress=progress, split=split)
        else:
            dyn = DynamicConfig(
                t_max=config.t_max,
                n_samples=config.n_samples,
                n_voters=config.n_voters,
                seed=config.seed,
                repeats=config.repeats if split == "positive" else 1,  # pass^k is of the positive split
            )
            transcripts += await run_dynamic(
                model, bench, near_dup, user, dyn, progress=progress, split=split, encoder=encoder
            )
        seconds[mode] = round(time.monotonic() - t0, 2)
    return transcripts, seconds


async def _grade(config: EvalConfig, transcripts: list[Transcript]) -> None:
    """ConvRel grades from the `judge` model, into each transcript's `convrel`."""
    from diaforge.eval.judge import ConvRelJudge
    from diaforge.llm.openai_backend import OpenAIBackend

    judge_backend = OpenAIBackend(config.judge, base_url=config.judge_base_url)
    try:
        await judge_backend.check()
        judge = ConvRelJudge(judge_backend)
        for t in transcripts:
            t.convrel = await judge.grade_transcript(t)
    finally:
        await judge_backend.aclose()


def _settings(
    config: EvalConfig,
    spec: ModelSpec,
    choice: FormatChoice,
    budget: Budget | None,
    model: ModelUnderTest,
    user_name: str,
    split_path: Path | None,
) -> dict[str, Any]:
    """What ``metrics.json`` records of how the run was made, beside its metrics (the process's
    peak resident memory among them: with the prefix cache's own peak, where an evaluation's memory
    went)."""
    from diaforge.lineage import training_lineage

    return {
        "benchmark": config.bench,
        "backend": config.backend,
        "max_new_tokens": budget.max_new_tokens if budget else None,
        "budget": budget.as_dict() if budget else None,
        "decoding": {
            "greedy": True,
            **spec.decoding.as_dict(),
            "executor": model.executor,
            "unapplied": spec.decoding.unapplied(model.executor),
            "constraint_stats": model.constraint_stats,
            "prefix_cache": model.cache_stats,
        },
        "prompt_format": choice.as_dict(),
        "modes": list(config.modes),
        "user_proxy": user_name,
        "t_max": config.t_max,
        "repeats": config.repeats,
        "n_samples": config.n_samples,
        "n_voters": config.n_voters,
        "limit": config.limit,
        "seed": config.seed,
        "no_tool_benchmark": str(split_path) if split_path else None,
        "no_tool_limit": config.no_tool_limit,
        "peak_rss_mb": peak_rss_mb(),
        "checkpoint": model.info,
        "training": training_lineage(model.info["path"]) if spec.backend in ("hf", "vllm") else None,
    }


def peak_rss_mb() -> float | None:
    """This process's peak resident memory so far in MiB (``ru_maxrss``), or None where the
    platform has no `resource` module."""
    try:
        import resource
    except ImportError:
        return None
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale, 1)
