"""One seed of UTC-Gen: build its metadata (persona, gold values, goal, candidate pool), run the
two-phase dialogue between the user-proxy and the teacher, and judge it with the validator
cascade. `Engine.run_seed` retries a seed whose selection went wrong; `diaforge.data_gen.engine.generate`
runs many seeds concurrently and writes the run folder.

With `dialogues_per_listing` N > 1, seeds come in groups of N over one candidate listing (an
anchor tool and its k distractors, shuffled once from the run seed and the group's number alone):
seed g*N+m takes the m-th of its tools (the anchor, then the distractors nearest first) as its
gold, so siblings render the same system prompt and listing, and `provenance.listing_group`
records g.

Every request of every role goes through a `LimitedBackend`: one shared limit on requests in
flight, and a meter that counts what each attempt cost (failed requests included).
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.data_gen.agents import (
    COMPLETION,
    SELECTION,
    CritiqueJudge,
    DialogueState,
    LLMJudge,
    LLMTeacher,
    LLMUser,
    RelevancyJudge,
    ScriptedCritique,
    ScriptedRelevancy,
    ScriptedTeacher,
    ScriptedUser,
    Teacher,
    User,
    llm_goal,
    llm_values,
    scripted_goal,
)
from diaforge.data_gen.fluency import FluencyJudge, FluencyJudgeConfig
from diaforge.data_gen.gen_config import GenerationConfig
from diaforge.data_gen.no_tool import converse_miss, miss_candidates, miss_seeds
from diaforge.data_gen.personas import PersonaSampler, load_personas
from diaforge.data_gen.phrasing.judging import PhraseLog, judging_with, phrase_log
from diaforge.data_gen.phrasing.render import action_renderings
from diaforge.data_gen.validators import run_rule_validators
from diaforge.data_gen.values import ValueGenerator
from diaforge.errors import InputError
from diaforge.llm.base import ROLES, BackendConfigError, BackendError, ChatBackend, ChatResult, Usage
from diaforge.rng import seeded_rng
from diaforge.schema import WITHHELD_TOOL, Dialogue, Persona, Provenance, Tool, Turn, Verdict
from diaforge.similarity import DistractorRetriever, Encoder, get_encoder

RETRYABLE = ("selection", "candidates", "no_tool")
#: The `provenance` key of a dialogue written over a shared candidate listing
#: (`GenerationConfig.dialogues_per_listing`): its group's number, the same for all its siblings.
LISTING_GROUP = "listing_group"


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

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatResult:
        """The inner backend's `chat`, with the same arguments."""
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
    from diaforge.llm.factory import BackendSpec, build_backend

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
    stage: str  # accepted | candidates | selection | t_max | format | toolcall | toolargs | no_tool | naturalness | relevancy | critique | backend
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
        self.misses = miss_seeds(cfg.num_dialogues, cfg.no_tool_share, cfg.seed)
        if self.misses and len(self.pool) < cfg.k + 2:
            raise InputError(
                f"the catalogue has {len(self.pool)} tools; a retrieval miss (no_tool_share > 0) shows k+1 "
                f"other tools, so at least k+2 = {cfg.k + 2} are needed",
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
        self._build_agents(encoder)
        scripted = not (backends.get("user") and backends.get("assistant"))
        self.judge: FluencyJudge | None = (
            FluencyJudge(FluencyJudgeConfig(cache_dir=cfg.fluency_model))
            if cfg.fluency_judge and scripted
            else None
        )
        """The fluency judge the scripted agents render with (None: off, or every phrasing role is a
        model); its model loads here, and reads every tool's action renderings in full batches."""
        if self.judge is not None:
            self.judge.prepare("action", action_renderings(self.pool))
        self.value_draws = {"seeds": 0, "generic": 0}
        """Value draws of this session by the scripted values: attempts, and strings that fell
        back to a word token (`stats.json` -> `values`)."""
        order = list(range(len(self.tools)))
        random.Random(cfg.seed).shuffle(order)
        self._order = order
        self._listings: dict[int, tuple[list[Tool], list[Tool]]] = {}

    def _build_agents(self, encoder: Encoder) -> None:
        """The four agents: a model where the config gives the role a backend, else the scripted one."""
        cfg, backends = self.cfg, self.backends

        def knobs(role: str, *, temperature: bool = True) -> dict[str, Any]:
            """The role's max_tokens / temperature from the config, when set."""
            spec, out = cfg.role(role), {}
            if spec.max_tokens:
                out["max_tokens"] = spec.max_tokens
            if temperature and spec.temperature is not None:
                out["temperature"] = spec.temperature
            return out

        self.user: User = (
            LLMUser(backends["user"], **knobs("user"))
            if backends.get("user")
            else ScriptedUser(wording=cfg.wording, encoder=encoder)
        )
        self.teacher: Teacher = (
            LLMTeacher(backends["assistant"], **knobs("assistant"))
            if backends.get("assistant")
            else ScriptedTeacher(wording=cfg.wording, reasoning=cfg.reasoning)
        )
        self.relevancy: RelevancyJudge = (
            LLMJudge(backends["relevancy"], "relevancy", **knobs("relevancy", temperature=False))
            if backends.get("relevancy")
            else ScriptedRelevancy()
        )
        self.critique: CritiqueJudge = (
            LLMJudge(backends["critique"], "critique", **knobs("critique", temperature=False))
            if backends.get("critique")
            else ScriptedCritique()
        )

    def seed_tool(self, index: int) -> Tool:
        """The gold tool of seed `index`: the catalogue's shuffled order, cycled; with
        `dialogues_per_listing` N > 1, the (index mod N)-th tool of its group's listing."""
        n = self.cfg.dialogues_per_listing
        if n == 1:
            return self.tools[self._order[index % len(self.tools)]]
        return self._listing(index // n)[0][index % n]

    def listing_group(self, index: int) -> int | None:
        """The group whose candidate listing seed `index` shares (None: the seed draws its own)."""
        n = self.cfg.dialogues_per_listing
        return index // n if n > 1 and index not in self.misses else None

    def _listing(self, group: int) -> tuple[list[Tool], list[Tool]]:
        """(golds, listing) of a shared-listing group: its anchor (the catalogue's shuffled order,
        cycled over groups) and the anchor's k distractors; the golds are the anchor then the
        distractors in the retriever's order (nearest first), the listing the same tools shuffled
        once for the group, so every member shows them in the same order."""
        got = self._listings.get(group)
        if got is None:
            anchor = self.tools[self._order[group % len(self.tools)]]
            rng = seeded_rng(self.cfg.seed, "listing", group)
            if self.cfg.distractors == "random":
                picks = self.retriever.random(anchor.name, self.cfg.k, rng)
            else:
                picks = self.retriever.topk(anchor.name, self.cfg.k)
            golds = [anchor, *picks]
            listing = list(golds)
            rng.shuffle(listing)
            got = self._listings[group] = (golds, listing)
        return got

    def seed_indices(self) -> list[int]:
        return [i for i in range(self.cfg.num_dialogues) if i % self.cfg.num_shards == self.cfg.shard_index]

    def models(self) -> dict[str, str]:
        return {r: (f"{b.name}:{b.model}" if b is not None else "scripted") for r, b in self.backends.items()}

    def _persona(self, tool: Tool, rng: random.Random) -> Persona:
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
        """One attempt at seed `index`: its metadata, the dialogue, then the validator cascade,
        every phrase rendered with the fluency judge (when on) and what it flagged logged."""
        with judging_with(self.judge), phrase_log() as log:
            return await self._attempt_logged(index, attempt, gold, log)

    async def _attempt_logged(self, index: int, attempt: int, gold: Tool, log: PhraseLog) -> Attempt:
        rng = seeded_rng(self.cfg.seed, index, attempt)
        usage = Usage()
        miss = index in self.misses
        group = self.listing_group(index)
        listing = self._listing(group)[1] if group is not None else None
        state = await self._metadata(gold, rng, usage, miss=miss, listing=listing)
        if not miss and gold.name not in {c.name for c in state.candidates}:
            return Attempt(None, "candidates", "gold tool not among the candidates", usage)
        finished, wrong = await self._converse(state, rng, usage)
        dialogue = self._snapshot(index, attempt, state, usage, listing_group=group)
        if self.judge is not None:  # what the judge flagged, for the validator (provenance.fluency)
            dialogue.provenance.fluency = log.as_dict()
        if wrong is not None:
            reason = (
                f"called {wrong}, but no candidate fits ({gold.name} was withheld)"
                if miss
                else f"selected {wrong}, gold tool is {gold.name}"
            )
            return Attempt(dialogue, "selection", reason, usage)
        if not finished:
            ending = "refusal" if miss else "tool call"
            return Attempt(dialogue, "t_max", f"no {ending} within {self.cfg.t_max} turns", usage)
        if not self.cfg.validators:
            dialogue.provenance.verdicts = [
                Verdict(validator="cascade", passed=True, reason="validators off")
            ]
            return Attempt(dialogue, "accepted", "validators off", usage)
        return await self._judge(dialogue, state, usage)

    async def _metadata(
        self,
        gold: Tool,
        rng: random.Random,
        usage: Usage,
        *,
        miss: bool = False,
        listing: Sequence[Tool] | None = None,
    ) -> DialogueState:
        """The seed's persona, gold arguments, goal and candidate pool (in this order of draws); a
        retrieval miss (`diaforge.data_gen.no_tool`) gets candidates without the gold tool; a seed of a
        shared-listing group shows its group's `listing` (drawn from no per-seed generator)."""
        persona = self._persona(gold, rng)
        gold_args: dict[str, Any] | None = None
        if self.backends.get("values") is not None:
            gold_args, u = await llm_values(self.backends["values"], gold, persona, rng)
            usage.add(u)
        if gold_args is None:
            values = ValueGenerator(rng)
            gold_args = values.gold_args(gold, persona)
            self.value_draws["seeds"] += 1
            self.value_draws["generic"] += values.generic_draws
        if self.backends.get("goal") is not None:
            goal, u = await llm_goal(self.backends["goal"], gold, persona, gold_args, rng)
            usage.add(u)
        else:
            goal = scripted_goal(gold, persona, gold_args)
        if listing is not None:
            candidates = list(listing)
        elif miss:
            candidates = miss_candidates(self.retriever, gold, self.cfg.k, self.cfg.distractors, rng)
        else:
            candidates = self.candidates(gold, rng)
        return DialogueState(
            gold=gold, candidates=candidates, persona=persona, goal=goal, gold_args=gold_args, no_tool=miss
        )

    async def _converse(
        self, state: DialogueState, rng: random.Random, usage: Usage
    ) -> tuple[bool, str | None]:
        """The two-phase dialogue, at most `t_max` user turns, until the teacher calls the tool in
        the completion phase. Returns whether it did, and the wrongly selected tool (or None). A
        retrieval miss runs until the teacher refuses instead (`diaforge.data_gen.no_tool.converse_miss`)."""
        if state.no_tool:
            return await converse_miss(self.user, self.teacher, state, rng, usage, self.cfg.t_max)
        for _ in range(self.cfg.t_max):
            text, u = await self.user.reply(state, rng)
            usage.add(u)
            state.turns.append(Turn(role="user", content=text))
            move = await self.teacher.act(state, rng)
            usage.add(move.usage)
            if state.phase == SELECTION and move.turn.tool_calls:
                chosen = move.turn.tool_calls[0].name
                if chosen != state.gold.name:
                    return False, chosen
                # Right tool: drop the selecting message; phase 2 answers the same user turn.
                state.phase = COMPLETION
                move = await self.teacher.act(state, rng)
                usage.add(move.usage)
            state.turns.append(move.turn)
            if move.turn.tool_calls and state.phase == COMPLETION:
                return True, None
        return False, None

    async def _judge(self, dialogue: Dialogue, state: DialogueState, usage: Usage) -> Attempt:
        """The validator cascade: the rule validators, then (if they all pass) both judges."""
        verdicts = run_rule_validators(dialogue)
        if verdicts[-1].passed:
            critique_args = {"no_tool": True} if state.no_tool else {}
            (rel, u1), (crit, u2) = await asyncio.gather(
                self.relevancy.judge(dialogue.turns, state.gold, state.goal),
                self.critique.judge(dialogue.turns, state.candidates, **critique_args),
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

    def _snapshot(
        self,
        index: int,
        attempt: int,
        state: DialogueState,
        usage: Usage,
        *,
        listing_group: int | None = None,
    ) -> Dialogue:
        """The dialogue so far, as a record (a retrieval miss: no seed tool, the tool the user
        needs in `provenance.withheld_tool`; a seed of a shared-listing group: the group in
        `provenance.listing_group`, the same for every dialogue over the same listing)."""
        extra: dict[str, Any] = {WITHHELD_TOOL: state.gold.model_dump(mode="json")} if state.no_tool else {}
        if listing_group is not None:
            extra[LISTING_GROUP] = listing_group
        return Dialogue(
            id=f"{index:06d}-{'miss-' if state.no_tool else ''}{state.gold.name}",
            seed_tool=None if state.no_tool else state.gold.name,
            candidate_tools=state.candidates,
            persona=state.persona,
            goal=state.goal,
            gold_args=state.gold_args,
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
                **extra,
            ),
        )

    def backend_label(self) -> str:
        kinds = {b.name for b in self.backends.values() if b is not None}
        return (
            "scripted"
            if not kinds
            else "+".join(sorted(kinds | ({"scripted"} if None in self.backends.values() else set())))
        )
