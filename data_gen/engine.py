"""UTC-Gen, a whole run: `generate` runs (or resumes) every seed of a configuration concurrently and
writes the run folder; `build_benchmark` builds the held-out evaluation set the same way.

One seed (metadata, the two-phase dialogue, the validator cascade) is `diaforge.data_gen.seed_engine`; the
configuration is `diaforge.data_gen.gen_config`; the statistics, plots and exports are `diaforge.data_gen.run_stats`.

Outputs in the run folder:

- `dialogues.jsonl`: accepted dialogues (one per line, sorted by seed once the run completes);
- `rejects.jsonl`: one line per rejected attempt: seed, attempt, stage, reason, `final` (whether
  the seed ended there), and the partial dialogue when there is one;
- `stats.json`, `plots/*.png`, `hf_conversational.jsonl`, `hf_dataset/` (datasets.save_to_disk);
- `run.json`: the configuration fingerprint, so a rerun into the same folder resumes only when
  the configuration is the same.

Resume: rerunning the same command skips seeds that already ended (accepted, or rejected for
good). Each line is written whole and fsync'ed; a line cut short by a crash is dropped on resume;
attempt rejects of a seed that had not ended are discarded and the seed is rerun from scratch.
Every seed's random generator derives from (run seed, seed index, attempt) alone, so the scripted
backend gives the same dialogues whatever the concurrency, the interruptions or the shard split.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.data_gen.gen_config import GenerationConfig
from diaforge.data_gen.no_tool import no_tool_stats
from diaforge.data_gen.personas import load_personas
from diaforge.data_gen.run_stats import corpus_stats, export_corpus, plot_corpus, usage_split
from diaforge.data_gen.seed_engine import Attempt, Engine, SeedOutcome, build_role_backends
from diaforge.errors import InputError
from diaforge.hygiene import sha256_file
from diaforge.jsonl import JsonlAppender, UnsavableRecord, dump_record, iter_jsonl, write_jsonl
from diaforge.llm.base import Usage
from diaforge.schema import Dialogue, Tool

DIALOGUES_FILE, REJECTS_FILE, STATS_FILE, RUN_FILE = (
    "dialogues.jsonl",
    "rejects.jsonl",
    "stats.json",
    "run.json",
)


# --------------------------------------------------------------------------------------------
# A whole run
# --------------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    """What `generate` did: seeds in this shard, how they ended, what this session cost."""

    out: Path
    seeds: int
    accepted: int
    rejected: int
    skipped: int
    usage: Usage
    seconds: float
    stats: dict[str, Any]


async def generate(cfg: GenerationConfig, *, tools: Sequence[Tool] | None = None) -> RunSummary:
    """Runs (or resumes) a generation run and writes every output."""
    from diaforge.data_gen.catalogue import check_catalogue_size, load_catalogue

    out = Path(cfg.out)
    if tools is None:
        catalogue = load_catalogue(cfg.catalogue)
        check_catalogue_size(catalogue)
        tools = catalogue.tools
        digest = sha256_file(cfg.catalogue)
    else:
        digest = hashlib.sha256("".join(dump_record(t) for t in tools).encode()).hexdigest()
    if cfg.personas:
        load_personas(cfg.personas)  # a bad persona file fails here, before any model or encoder loads
    _claim_run_folder(out, cfg.fingerprint(digest))
    semaphore = asyncio.Semaphore(cfg.concurrency)
    backends = build_role_backends(cfg, semaphore)
    distinct = {id(b): b for b in backends.values() if b is not None}.values()
    try:
        for b in distinct:
            check = getattr(b.inner, "check", None)
            if check is not None:
                await check()
        engine = Engine(cfg, tools, backends=backends)
        return await _run(engine, cfg, out)
    finally:
        for b in distinct:
            await b.aclose()


def _claim_run_folder(out: Path, fingerprint: dict[str, Any]) -> None:
    """Creates the run folder, or checks that the run it holds has the same configuration."""
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder; --out names the run folder", path=out, field="out")
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    previous = _read_run_file(run_file)
    if previous is not None and previous.get("fingerprint") != fingerprint and _holds_records(out):
        old = previous.get("fingerprint")
        if not isinstance(old, dict) or not old:
            raise InputError(
                f"cannot be read, so the configuration of the records in {out} is unknown; "
                "to resume them under the current configuration, remove this file alone (the records "
                "stay), or use a new --out folder",
                path=run_file,
            )
        changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
        raise InputError(
            f"holds a run with a different configuration (changed: {', '.join(changed)}); "
            f"use a new --out folder, or rerun with the configuration recorded in {run_file} to resume it",
            path=out,
        )
    if previous is None or previous.get("fingerprint") != fingerprint:
        # A new run, or a run that failed before writing any record: nothing to protect, so a
        # corrected rerun simply starts over.
        _write_run_file(run_file, {"fingerprint": fingerprint})


async def _run(engine: Engine, cfg: GenerationConfig, out: Path) -> RunSummary:
    """The seeds not yet ended, run concurrently; then the run folder's final outputs."""
    todo = _seeds_to_run(engine, out)
    started = time.monotonic()
    usage = await _run_seeds(engine, cfg, out, todo)
    return _finish(engine, cfg, out, todo, usage, time.monotonic() - started)


def _seeds_to_run(engine: Engine, out: Path) -> list[int]:
    """Seeds of this shard that have not ended. Rejects of a seed that had not ended (and a line
    cut short by a crash) are dropped, so that the seed reruns from scratch."""
    dialogues_path, rejects_path = out / DIALOGUES_FILE, out / REJECTS_FILE
    done_accepted = {
        seed_index_of(d)
        for d in (
            iter_jsonl(dialogues_path, Dialogue, tolerate_truncated_tail=True)
            if dialogues_path.exists()
            else []
        )
    }
    rejects = _read_rejects(rejects_path)
    done_rejected = {r["seed_index"] for r in rejects if r.get("final")}
    finished = (done_accepted | done_rejected) - {None}
    orphans = [r for r in rejects if r["seed_index"] not in finished]
    if orphans or (rejects_path.exists() and not rejects_path.read_bytes().endswith(b"\n")):
        write_jsonl(rejects_path, [r for r in rejects if r["seed_index"] in finished])
    return [i for i in engine.seed_indices() if i not in finished]


async def _run_seeds(engine: Engine, cfg: GenerationConfig, out: Path, todo: list[int]) -> Usage:
    """Runs the seeds in `todo` (twice `concurrency` at once), appending each outcome as it ends:
    the accepted dialogue, and one reject line per failed attempt. Returns what they cost."""
    from tqdm.auto import tqdm

    usage, counts = Usage(), Counter()
    bar = tqdm(total=len(todo), desc="generating", unit="seed", disable=not cfg.progress, dynamic_ncols=True)
    in_flight = asyncio.Semaphore(max(2, 2 * cfg.concurrency))
    with JsonlAppender(out / DIALOGUES_FILE) as acc_out, JsonlAppender(out / REJECTS_FILE) as rej_out:

        async def one(i: int) -> None:
            async with in_flight:
                outcome = await engine.run_seed(i)
            accepted = _write_outcome(outcome, acc_out, rej_out)
            for a in outcome.attempts:
                usage.add(a.usage)
            counts["accepted" if accepted else "rejected"] += 1
            bar.update(1)
            bar.set_postfix(
                accepted=counts["accepted"],
                rejected=counts["rejected"],
                tokens=usage.total_tokens,
                cost=f"${usage.cost_usd:.4f}",
            )

        # A fixed pool of workers drawing from one iterator: memory stays bounded by the seeds in
        # flight, not by the seeds of the run (a task per seed holds a kilobyte or more each).
        pending = iter(todo)

        async def worker() -> None:
            for i in pending:
                await one(i)

        tasks = [asyncio.create_task(worker()) for _ in range(min(len(todo), max(2, 2 * cfg.concurrency)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            bar.close()
    return usage


def _write_outcome(outcome: SeedOutcome, acc_out: JsonlAppender, rej_out: JsonlAppender) -> bool:
    """Appends one seed's outcome; returns whether it was accepted. An accepted dialogue that
    cannot be stored becomes a `write` reject; a reject's dialogue that cannot is left out."""
    accepted = outcome.accepted
    if accepted is not None:
        try:
            acc_out.write(accepted)
        except UnsavableRecord as exc:
            last = outcome.attempts[-1]
            outcome.attempts[-1] = Attempt(last.dialogue, "write", f"cannot be saved: {exc}", last.usage)
            accepted = None
    for n, a in enumerate(outcome.attempts, start=1):
        if a.accepted:
            continue
        record = _reject_record(outcome, n, a, final=n == len(outcome.attempts))
        try:
            rej_out.write(record)
        except UnsavableRecord as exc:
            # Keep the verdict, drop the part that cannot be stored.
            record["dialogue"] = None
            record["reason"] = f"{record['reason']}; dialogue not saved ({exc})"
            rej_out.write(record)
    return accepted is not None


def _finish(
    engine: Engine, cfg: GenerationConfig, out: Path, todo: list[int], usage: Usage, seconds: float
) -> RunSummary:
    """The run is complete: both files ordered by seed (so the result does not depend on timing),
    then `stats.json`, the usage in `run.json`, the plots and the exports."""
    dialogues_path, rejects_path = out / DIALOGUES_FILE, out / REJECTS_FILE
    accepted = sorted(
        iter_jsonl(dialogues_path, Dialogue, tolerate_truncated_tail=True),
        key=lambda d: seed_index_of(d) or 0,
    )
    write_jsonl(dialogues_path, accepted)
    rejects = sorted(_read_rejects(rejects_path), key=lambda r: (r["seed_index"], r["attempt"]))
    write_jsonl(rejects_path, rejects)
    seeds = len(engine.seed_indices())
    stats = corpus_stats(accepted, rejects, num_seeds=seeds)
    stats["no_tool"] = no_tool_stats(accepted, share=cfg.no_tool_share, seeds=len(engine.misses))
    stats["values"] = {
        "attempts_drawn": engine.value_draws["seeds"],
        "generic_draws": engine.value_draws["generic"],
    }  # this session's: a string no bank fitted fell back to a word token ("cedar-42")
    if engine.judge is not None:  # this session's judge: renderings it dropped, by kind, and its cost
        stats["fluency"] = engine.judge.stats()
    stats["run"] = {"seconds": round(seconds, 3), "seeds_this_session": len(todo), "usage": usage.as_dict()}
    split = usage_split(accepted, rejects)
    stats["usage"] = split
    (out / STATS_FILE).write_text(json.dumps(stats, indent=2), encoding="utf-8")
    run_record = _read_run_file(out / RUN_FILE) or {}
    run_record["usage"] = split
    _write_run_file(out / RUN_FILE, run_record)
    if cfg.plots:
        plot_corpus(accepted, out / "plots")
    if cfg.export:
        export_corpus(accepted, out)
    return RunSummary(
        out=out,
        seeds=seeds,
        accepted=len(accepted),
        rejected=seeds - len(accepted),
        skipped=seeds - len(todo),
        usage=usage,
        seconds=seconds,
        stats=stats,
    )


# --------------------------------------------------------------------------------------------
# The run folder's files
# --------------------------------------------------------------------------------------------


def _reject_record(outcome: SeedOutcome, number: int, attempt: Attempt, final: bool) -> dict[str, Any]:
    return {
        "seed_index": outcome.index,
        "seed_tool": outcome.tool,
        "attempt": number,
        "stage": attempt.stage,
        "reason": attempt.reason,
        "final": final,
        "usage": attempt.usage.as_dict(),
        "dialogue": attempt.dialogue.model_dump(mode="json") if attempt.dialogue is not None else None,
    }


def seed_index_of(d: Dialogue) -> int | None:
    """The seed a generated dialogue came from (kept in its provenance)."""
    return (d.provenance.model_extra or {}).get("seed_index")


def _read_rejects(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8") as fh:
        lines = fh.readlines()
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) and not line.endswith("\n"):
                break
            raise InputError("invalid JSON", path=path, record=i) from None
    return out


def _read_run_file(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}  # unreadable: treated as a different configuration
    return data if isinstance(data, dict) else {}


def _write_run_file(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    os.replace(tmp, path)


def _holds_records(out: Path) -> bool:
    """Whether a run folder holds any generated record (accepted or rejected)."""
    return any(
        (out / name).is_file() and (out / name).stat().st_size > 0 for name in (DIALOGUES_FILE, REJECTS_FILE)
    )


# --------------------------------------------------------------------------------------------
# The held-out benchmark
# --------------------------------------------------------------------------------------------

BENCHMARK_VERSION = "diabench-heldout-v1"
NO_TOOL_VERSION = "diabench-heldout-v1-no-tool"
"""The no-tool split of the held-out benchmark: retrieval misses over held-out tools,
kept in a file of its own beside the benchmark (`<benchmark>_no_tool.jsonl`)."""


async def build_benchmark(
    catalogue_path: str | Path,
    out_path: str | Path,
    *,
    work_dir: str | Path,
    seeds_per_tool: int = 1,
    seed: int = 20260101,
    split: str | None = "heldout",
    progress: bool = True,
) -> dict[str, Any]:
    """Builds the evaluation set from held-out tools only: for every tool (times
    `seeds_per_tool`) a persona, goal, gold arguments, a candidate pool drawn from the held-out
    tools, and a validated reference dialogue for static evaluation. Returns counts."""
    return await _build_split(
        catalogue_path,
        out_path,
        work_dir,
        split,
        BENCHMARK_VERSION,
        progress,
        seed=seed,
        seeds_per_tool=seeds_per_tool,
        no_tool_share=0.0,
    )


async def build_no_tool_benchmark(
    catalogue_path: str | Path,
    out_path: str | Path,
    *,
    work_dir: str | Path,
    seeds: int = 20,
    seed: int = 20260128,
    split: str | None = "heldout",
    progress: bool = True,
) -> dict[str, Any]:
    """Builds the no-tool split the same way, from held-out tools only: `seeds` retrieval misses
    (`diaforge.data_gen.no_tool`; the first `seeds` tools of the run's shuffled order, each withheld from
    its k+1 nearest held-out neighbours), each with a validated reference dialogue that ends in the
    teacher's refusal. Returns counts."""
    return await _build_split(
        catalogue_path,
        out_path,
        work_dir,
        split,
        NO_TOOL_VERSION,
        progress,
        seed=seed,
        num_dialogues=seeds,
        no_tool_share=1.0,
    )


async def _build_split(
    catalogue_path: str | Path,
    out_path: str | Path,
    work_dir: str | Path,
    split: str | None,
    version: str,
    progress: bool,
    **settings: Any,
) -> dict[str, Any]:
    """A benchmark file from a scripted generation run over the catalogue's `split` tools with the
    held-out wording; `settings` are the run's seed, size and `no_tool_share`."""
    from diaforge.data_gen.catalogue import load_catalogue

    catalogue = load_catalogue(catalogue_path)
    tools = catalogue.split(split).tools if split else catalogue.tools
    per_tool = settings.pop("seeds_per_tool", 1)
    cfg = GenerationConfig(
        catalogue=str(catalogue_path),
        out=str(work_dir),
        num_dialogues=settings.pop("num_dialogues", len(tools) * per_tool),
        wording="heldout",
        plots=False,
        export=False,
        progress=progress,
        **settings,
    )
    summary = await generate(cfg, tools=tools)
    records = []
    for d in iter_jsonl(Path(work_dir) / DIALOGUES_FILE, Dialogue):
        d.provenance.source = version
        records.append(d)
    write_jsonl(out_path, records)
    return {
        "version": version,
        "tools": len(tools),
        "seeds": summary.seeds,
        "records": len(records),
        "lines_of_business": sorted({str(t.metadata.get("line_of_business")) for t in tools}),
    }
