"""`diaforge data rollouts --model RUN --catalogue CAT --num-dialogues N --out DIR` (also
`python -m diaforge.pipeline rollouts`): the tuned model plays the dynamic loop against the
user-proxy on training seeds, the scripted teacher answers every state it reaches, and the run
folder gets the training data of both ways to learn from it.

Rollouts need the model under test (``eval``) and the generator's seeds, validators and corpus
files (``data_gen``), and only this floor may import both: the console's ``data rollouts`` runs
this module (`diaforge.cli`). The parts: the seeds and the training data,
`diaforge.data_gen.rollouts`; the loop and the comparison, `diaforge.eval.rollouts` and
`diaforge.eval.disagreements`.

The run folder:

- ``rollouts.jsonl``: one path per seed (the dialogue as played; each assistant turn holds the
  model's move, the teacher's, the disagreement kind and which one the path followed);
- ``dialogues.jsonl``: the visited states the validators accept, each ending with the teacher's
  move (its history marked history only): the DAgger corpus (recipe keys ``dagger_dataset_path``
  and ``dagger_share``); ``rejects.jsonl``: the states refused, with the validator and its reason;
- ``pairs.jsonl`` and ``preference.jsonl`` (+ ``prompt_format.json``, the model's): the on-policy
  preference pairs for ``train/dpo.py`` (``pairs_path``);
- ``stats.json`` (`diaforge.data_gen.rollouts.rollout_stats`: the disagreements by kind, ...) and
  ``run.json`` (the configuration; a rerun with the same one resumes).

Resume and shards work as in `generate`: seed i belongs to shard i mod ``num_shards``; a seed is
done once its path is in ``rollouts.jsonl`` (written after its states and pairs; a seed cut short
leaves states that a rerun drops and plays again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

from diaforge.cliargs import DefaultsHelpFormatter, add_field_flags
from diaforge.data_gen.wording import REASONING_STYLES
from diaforge.errors import InputError
from diaforge.jsonl import JsonlAppender, iter_jsonl, write_jsonl
from diaforge.schema import Dialogue

DATA_FILES = {
    "paths": "rollouts.jsonl",
    "states": "dialogues.jsonl",
    "rejects": "rejects.jsonl",
    "pairs": "pairs.jsonl",
}
"""The run folder's record files; ``preference.jsonl``, ``stats.json`` and ``run.json`` beside them."""
RUN_FILE, STATS_FILE, PREFERENCE_FILE = "run.json", "stats.json", "preference.jsonl"
#: Settings a rerun may change without starting over (they do not change what a seed gives).
NOT_FINGERPRINTED = ("out", "batch_size", "device", "progress")


def _bench_default() -> str:
    from diaforge.packaged import packaged_path

    return str(packaged_path("diaforge.eval", "benchmarks", "diabench_heldout_v1.jsonl"))


def _catalogue_default() -> str:
    from diaforge.packaged import packaged_path

    return str(packaged_path("diaforge.data_gen", "assets", "catalogue_train.json"))


@pydantic_dataclass(config=ConfigDict(extra="forbid", use_attribute_docstrings=True))
class RolloutsConfig:
    """What a rollout run plays and writes; each field is a flag of ``diaforge data rollouts``."""

    model: str = ""
    """The tuned model: a training run folder (adapter or merged model with its
    ``prompt_format.json``), played with the hf backend. Required."""
    out: str = ""
    """The run folder (rollouts.jsonl, dialogues.jsonl, pairs.jsonl, stats.json, ...). Required; a
    rerun into it with the same configuration resumes."""
    catalogue: str = Field(default_factory=_catalogue_default)
    """Tool catalogue the seeds are drawn from: its ``train`` split when tools carry a split
    (held-out tools are never used). Default: the bundled catalogue of the training lines of business."""
    bench: str | None = Field(default_factory=_bench_default)
    """Benchmark whose tools rollouts must never show (the leakage check): they leave the seeds and
    the distractor pool, and a record that shows one is refused. Default: the bundled held-out one."""
    num_dialogues: int = Field(20, ge=1)
    """Seeds to play (split across shards)."""
    seed: int = Field(1000, ge=0)
    """Seed of the seeds' draws, the user-proxy's wording and the teacher's. Default 1000: not the
    demo corpus's 0, so the model meets seeds its corpus did not hold."""
    t_max: int = Field(5, ge=1)
    """User turns a rollout takes at most (the demo's dynamic T_max)."""
    k: int = Field(5, ge=1)
    """Distractors per candidate pool, as `generate` draws them."""
    no_tool_share: float = Field(0.0, ge=0.0, le=1.0)
    """Share of seeds that are retrieval misses (no candidate fits: the teacher refuses)."""
    reasoning: str = "lookup"
    """The teacher's thought style: that of the corpus the model was trained on (`lookup` for the demo's)."""
    states: str = "all"
    """Which visited states ``dialogues.jsonl`` holds: `all` (DAgger's aggregate: every state
    with the teacher's move) or `disagreements` (only where the model's move differed)."""
    encoder: str = "auto"
    """Sentence encoder of the seeds' distractors and personas, of the user-proxy's reading and of
    near-duplicates: `auto` (MiniLM when installed, else TF-IDF), `minilm` or `tfidf`."""
    n_samples: int = Field(3, ge=1)
    """Candidate user turns of the voting user-proxy (eval's n)."""
    n_voters: int = Field(3, ge=1)
    """Voters of the voting user-proxy (eval's m)."""
    max_new_tokens: int = Field(384, ge=1)
    """Reply length cap of the model, in tokens."""
    batch_size: int = Field(8, ge=1)
    """Seeds played together (one batched model call per turn); a finished batch is saved."""
    device: str = "cpu"
    """Where the model runs: cpu, cuda, cuda:N or mps."""
    num_shards: int = Field(1, ge=1)
    """Processes the seeds are split across: seed i runs in shard i mod num_shards."""
    shard_index: int = Field(0, ge=0)
    """Which shard this process runs (0-based)."""
    progress: bool = True
    """Show a progress bar on stderr."""

    def __post_init__(self) -> None:
        if not self.model:
            raise InputError("--model is required (the tuned model's run folder)")
        if not self.out:
            raise InputError("--out is required (the rollout run folder)")
        if self.shard_index >= self.num_shards:
            raise InputError(f"--shard-index must lie in [0, {self.num_shards - 1}], got {self.shard_index}")
        if self.states not in CHOICES["states"]:
            raise InputError(f"--states must be one of {', '.join(CHOICES['states'])}, got {self.states!r}")

    def fingerprint(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in NOT_FINGERPRINTED}


CHOICES = {
    "states": ("all", "disagreements"),
    "encoder": ("auto", "minilm", "tfidf"),
    "reasoning": REASONING_STYLES,
}


def _claim(out: Path, fingerprint: dict[str, Any]) -> None:
    """Create the run folder, or check that the run it holds has this configuration."""
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder; --out names the run folder", path=out)
    out.mkdir(parents=True, exist_ok=True)
    run = out / RUN_FILE
    if run.is_file() and (out / DATA_FILES["paths"]).is_file():
        try:
            old = json.loads(run.read_text(encoding="utf-8")).get("fingerprint")
        except (ValueError, AttributeError):
            old = None
        if old != fingerprint:
            changed = sorted(
                k for k in fingerprint if not isinstance(old, dict) or old.get(k) != fingerprint[k]
            )
            raise InputError(
                f"holds a rollout run with another configuration (changed: {', '.join(changed) or 'unreadable'});"
                " use a new --out folder, or rerun with the recorded one to resume",
                path=out,
            )
    run.write_text(json.dumps({"fingerprint": fingerprint}, indent=2), encoding="utf-8")


def _seed_of(record: Dialogue | dict[str, Any]) -> int | None:
    if isinstance(record, dict):
        record = Dialogue.model_validate(record["dialogue"]) if "dialogue" in record else None
        if record is None:
            return None
    return (record.provenance.model_extra or {}).get("seed_index")


def _done(out: Path) -> set[int]:
    """The seeds whose path is saved; the states, rejects and pairs of any other seed are dropped."""
    paths = out / DATA_FILES["paths"]
    done = (
        {_seed_of(d) for d in iter_jsonl(paths, Dialogue, tolerate_truncated_tail=True)}
        if paths.is_file()
        else set()
    )
    for name in ("states", "rejects", "pairs"):
        path = out / DATA_FILES[name]
        if not path.is_file():
            continue
        if name == "states":
            kept: list[Any] = [
                d for d in iter_jsonl(path, Dialogue, tolerate_truncated_tail=True) if _seed_of(d) in done
            ]
        else:
            kept = [
                r
                for r in _read_dicts(path)
                if (r.get("seed_index") if name == "rejects" else _seed_of(r)) in done
            ]
        write_jsonl(path, kept)
    return {i for i in done if i is not None}


def _read_dicts(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line a crash cut short: its seed is played again
    return out


class _Player:
    """The model, the user-proxy, the teacher and the seeds of one run."""

    def __init__(self, cfg: RolloutsConfig) -> None:
        from diaforge.data_gen.agents import ScriptedTeacher, ScriptedUser, ScriptedVoter, VotingUser
        from diaforge.data_gen.catalogue import check_catalogue_size, load_catalogue
        from diaforge.data_gen.gen_config import GenerationConfig
        from diaforge.data_gen.rollouts import RolloutSeeds, benchmark_tools, training_tools
        from diaforge.eval.policies import ReferencePolicy
        from diaforge.similarity import get_encoder

        catalogue = load_catalogue(cfg.catalogue)
        check_catalogue_size(catalogue)
        self.held_out = benchmark_tools(cfg.bench)
        tools, self.excluded = training_tools(catalogue.tools, self.held_out, path=cfg.catalogue)
        gen = GenerationConfig(
            catalogue=cfg.catalogue,
            out=cfg.out,
            num_dialogues=cfg.num_dialogues,
            seed=cfg.seed,
            k=cfg.k,
            t_max=cfg.t_max,
            no_tool_share=cfg.no_tool_share,
            reasoning=cfg.reasoning,
            encoder=cfg.encoder,
            num_shards=cfg.num_shards,
            shard_index=cfg.shard_index,
            plots=False,
            export=False,
            progress=False,
        )
        self.seeds = RolloutSeeds(gen, tools)
        self.encoder = get_encoder(cfg.encoder)
        self.user = VotingUser(
            ScriptedUser(wording="train", encoder=self.encoder),
            ScriptedVoter(),
            n=cfg.n_samples,
            m=cfg.n_voters,
        )
        self.teacher = ReferencePolicy(seed=cfg.seed)
        self.teacher.teacher = ScriptedTeacher(wording="train", reasoning=cfg.reasoning)
        self.model: Any = None


def model_under_test(cfg: RolloutsConfig, *, load: bool = True) -> tuple[Any, Any]:
    """The model (None when `load` is false) and its prompt format, as ``eval run`` would make them."""
    from diaforge.eval.eval_config import EvalConfig
    from diaforge.eval.model_spec import check_device, model_spec
    from diaforge.eval.models import ModelUnderTest, offline_env

    offline_env()
    config = EvalConfig(
        model=cfg.model,
        backend="hf",
        device=cfg.device,
        max_new_tokens=cfg.max_new_tokens,
        batch_size=cfg.batch_size,
    )
    spec, choice = model_spec(config)
    if not load:
        return None, choice.prompt_format
    check_device(config)
    return ModelUnderTest(spec), choice.prompt_format


async def _play_batch(player: _Player, cfg: RolloutsConfig, indices: Sequence[int], out: Path) -> None:
    """Play one batch of seeds and append its records (states, rejects, pairs, then the paths)."""
    from diaforge.data_gen.rollouts import check_no_heldout, dagger_states, on_policy_pairs, validate_state
    from diaforge.eval.rollouts import RolloutLoop, play_rollouts

    seeds = [await player.seeds.record(i) for i in indices]
    check_no_heldout(seeds, player.held_out, path=cfg.catalogue)
    loop = RolloutLoop(t_max=cfg.t_max, seed=cfg.seed, progress=cfg.progress)
    rollouts = await play_rollouts(
        player.model, seeds, player.user, player.teacher, loop, encoder=player.encoder
    )
    files = {name: JsonlAppender(out / path) for name, path in DATA_FILES.items()}
    try:
        for index, r in zip(indices, rollouts, strict=True):
            extra = r.dialogue.provenance.model_extra
            extra["rollout_model"] = cfg.model
            for state in dagger_states(r.dialogue, only_disagreements=cfg.states == "disagreements"):
                verdicts = validate_state(state)
                state.provenance.verdicts = verdicts
                if verdicts[-1].passed:
                    files["states"].write(state)
                else:
                    bad = verdicts[-1]
                    files["rejects"].write(
                        {
                            "seed_index": index,
                            "state": state.id,
                            "validator": bad.validator,
                            "reason": bad.reason,
                            "dialogue": state.model_dump(mode="json"),
                        }
                    )
            for pair in on_policy_pairs(r.dialogue):
                files["pairs"].write(pair)
            files["paths"].write(r.dialogue)
    finally:
        for f in files.values():
            f.close()


async def run_rollouts(cfg: RolloutsConfig) -> dict[str, Any]:
    """Play (or resume) every seed of this shard and write the run folder; returns ``stats.json``."""
    from tqdm.auto import tqdm

    started = time.monotonic()  # the whole command, loading included: what an equal-time arm is charged
    out = Path(cfg.out)
    _claim(out, cfg.fingerprint())
    player = _Player(cfg)
    done = _done(out)
    todo = [i for i in player.seeds.indices() if i not in done]
    player.model, fmt = model_under_test(cfg, load=bool(todo))
    bar = tqdm(total=len(todo), desc="rollouts", unit="dialogue", disable=not cfg.progress)
    try:
        for at in range(0, len(todo), cfg.batch_size):
            batch = todo[at : at + cfg.batch_size]
            await _play_batch(player, cfg, batch, out)
            bar.update(len(batch))
    finally:
        bar.close()
        if player.model is not None:
            await player.model.aclose()
    return _finish(out, cfg, player, fmt, seconds=time.monotonic() - started, played=len(todo))


def _finish(
    out: Path, cfg: RolloutsConfig, player: _Player, fmt: Any, *, seconds: float, played: int
) -> dict[str, Any]:
    """Every file sorted by seed, the preference rows in the model's prompt format, ``stats.json``."""
    from diaforge.data_gen.rollouts import check_no_heldout, rollout_stats
    from diaforge.eval.disagreements import DISAGREEMENT_KINDS
    from diaforge.format import preference_rows

    def order(record: Any) -> tuple[int, str]:
        return (
            _seed_of(record) or 0,
            record.id if isinstance(record, Dialogue) else str(record.get("id", "")),
        )

    paths = (
        sorted(iter_jsonl(out / DATA_FILES["paths"], Dialogue), key=order)
        if (out / DATA_FILES["paths"]).is_file()
        else []
    )
    states = (
        sorted(iter_jsonl(out / DATA_FILES["states"], Dialogue), key=order)
        if (out / DATA_FILES["states"]).is_file()
        else []
    )
    rejects = _read_dicts(out / DATA_FILES["rejects"]) if (out / DATA_FILES["rejects"]).is_file() else []
    pairs = (
        sorted(_read_dicts(out / DATA_FILES["pairs"]), key=order)
        if (out / DATA_FILES["pairs"]).is_file()
        else []
    )
    check_no_heldout([*paths, *states], player.held_out, path=out)
    write_jsonl(out / DATA_FILES["paths"], paths)
    write_jsonl(out / DATA_FILES["states"], states)
    write_jsonl(out / DATA_FILES["pairs"], pairs)
    write_jsonl(out / PREFERENCE_FILE, preference_rows(pairs, fmt))
    fmt.save(out)
    stats = rollout_stats(paths, rejects, pairs, kinds=DISAGREEMENT_KINDS, states_accepted=len(states))
    stats["held_out"] = {"tools_left_out_of_the_pool": player.excluded, "tools_in_records": 0}
    stats["run"] = {"seconds": round(seconds, 3), "dialogues_this_session": played, "model": cfg.model}
    (out / STATS_FILE).write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats


def summary_line(stats: dict[str, Any], out: str) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in stats["by_kind"].items() if n)
    return (
        f"{stats['dialogues']} rollouts, {stats['assistant_turns']} assistant turns, "
        f"{stats['disagreements']} disagreements ({kinds or 'none'}); {stats['states_accepted']} states accepted, "
        f"{stats['states_rejected']} refused; {stats['pairs']} on-policy pairs -> {out}"
    )


def add_rollouts(sub: argparse._SubParsersAction) -> None:
    """The ``rollouts`` subcommand: one flag per `RolloutsConfig` field."""
    text = (
        "the tuned model plays training seeds; the teacher answers every state (DAgger data, on-policy pairs)"
    )
    p = sub.add_parser("rollouts", help=text, description=text, formatter_class=DefaultsHelpFormatter)
    add_field_flags(
        p,
        RolloutsConfig.__pydantic_fields__,
        list(RolloutsConfig.__pydantic_fields__),
        choices=CHOICES,
        off={"progress": "--quiet"},
    )
    p.set_defaults(func=_cmd_rollouts)


def rollouts_config(args: argparse.Namespace) -> RolloutsConfig:
    given = {k: v for k, v in vars(args).items() if k in RolloutsConfig.__pydantic_fields__ and v is not None}
    try:
        return RolloutsConfig(**given)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None


def _cmd_rollouts(args: argparse.Namespace) -> None:
    from diaforge.console import emit

    cfg = rollouts_config(args)
    stats = asyncio.run(run_rollouts(cfg))
    emit(summary_line(stats, cfg.out))
