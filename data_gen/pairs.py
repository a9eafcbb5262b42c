"""Preference pairs from a generated corpus: for each assistant turn that decides something, rejected
alternatives of named kinds, for preference training (DPO) after SFT.

    python -m diaforge.data_gen pairs DIALOGUES.jsonl --out DIR [--kinds K,...] [--mix K=W,...] [--seed N]
        [--format hf-prompt|hf] [--tool-style ...] [--history-reasoning ...] [--target-reasoning ...]

The generator knows, at every turn, the right move and the state it depends on (the gold tool, the
values the user has said, whether the dialogue is a retrieval miss), so the wrong moves are built
from that state, not sampled from a model. Each rejected turn is an assistant `Turn` like the
chosen one (thought, then a reply or only a call list), so it renders in the same prompt format and
parses with `diaforge.format.parse_assistant`; its thought states the rejected decision, so thought
and reply agree. In a corpus of `lookup` thoughts (`diaforge.data_gen.agents.lookup`), the rejected
completion thoughts use the same template as the chosen ones, so a pair differs in the decision and
what it rests on, not in the style of the thought: a premature call lists its invented values under
"Known" with no words of the user quoted for them (the error a tuned model makes), and a needless
question leaves the key it asks for out of "Known" and names it as missing. The kinds (`KINDS`), and
the turns where each applies:

* ``premature_call``: at a request for values (``action: request``), the call of the gold tool with
  the values said so far and a plausible invented value for each required one still missing (drawn
  by `diaforge.data_gen.values.ValueGenerator` for the parameter's schema; never the gold value).
* ``near_duplicate``: the candidate closest to the gold tool by the composite similarity
  (`diaforge.similarity`: .40 name + .35 description + .25 parameters; descriptions encoded with
  `--encoder`). Variant ``call``: at a call, the same call (same values) to that tool. Variant
  ``option``: at the first request after the user picked an option, the teacher's request for the
  closest tool's values instead (the option the user did not pick).
* ``unsupported_value``: at a call with arguments, one value replaced by another of the same type and
  shape that no user turn holds.
* ``needless_question``: variant ``value``: at a call, a request for a value the user already gave;
  variant ``tool``: at the first turn after the tool is settled (the user's words point to one
  tool), a question asking which of the gold tool and its closest candidate they mean.
* ``missed_refusal``: in a retrieval miss (no candidate fits, `diaforge.data_gen.no_tool`), at the refusal:
  variant ``call``, the selection of the candidate closest to what the user needs; variant
  ``request``, a request for that candidate's required values.
* ``wrong_refusal``: variant ``positive``: at the call of a dialogue whose gold tool is among the
  candidates, a refusal ("none of my tools does that"); variant ``early``: in a retrieval miss, a
  refusal in place of a question asked before the user has ruled every candidate out.

Every refusal is read by `diaforge.data_gen.agents.refusal.is_refusal`, the rule the no-tool metrics use.

The mix. `--kinds` keeps only the named kinds. `--mix kind=weight,...` makes the kinds' counts
proportional to the weights: with n_k pairs of kind k available and shares w_k (weights over
their sum), the total is T = min_k n_k / w_k and kind k keeps floor(T * w_k) of its pairs, drawn
with the run seed; kinds the mix leaves out are dropped, and a kind the corpus has no pair of
(``missed_refusal`` without retrieval misses) is left out of the shares. Without `--mix` every pair
is kept. `--max-pairs N` then keeps N of them, drawn with the seed across the whole corpus (so
the kinds keep their shares in expectation).

The run folder gets ``pairs.jsonl`` (one record per pair, turns not text:
`diaforge.format.pair_record`), ``preference.jsonl`` (TRL's conversational preference rows:
``prompt`` as messages, ``chosen`` and ``rejected`` as one assistant message each, plus ``id``,
``dialogue_id``, ``turn_index``, ``kind``, ``variant``), ``prompt_format.json`` (the format of
``preference.jsonl``) and ``stats.json`` (pairs per kind and per variant, the turns and dialogues they
come from, the options).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.data_gen.agents import COMPLETION, SELECTION, DialogueState, ScriptedTeacher
from diaforge.data_gen.agents.lookup import completion_thought
from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.data_gen.phrasing import first_sentence
from diaforge.data_gen.values import ValueGenerator, extract_value
from diaforge.format import PAIR_KINDS, PromptFormat, pair_record, preference_rows
from diaforge.jsonl import write_jsonl
from diaforge.rng import seeded_rng
from diaforge.schema import Dialogue, Tool, ToolCall, Turn
from diaforge.similarity import composite_matrix, get_encoder
from diaforge.text import humanise_param

KINDS = PAIR_KINDS
"""The kinds of rejected alternative, in the order `stats.json` lists them."""

PAIRS_FILE = "pairs.jsonl"
PREFERENCE_FILE = "preference.jsonl"
STATS_FILE = "stats.json"


@dataclass(frozen=True)
class PairOptions:
    """What `make_pairs` builds."""

    kinds: tuple[str, ...] = KINDS
    """The kinds to build (default: all of `KINDS`)."""
    mix: dict[str, float] | None = None
    """Relative weight of each kind in the output (module docstring); None keeps every pair."""
    seed: int = 0
    """Seeds the invented values, the wording and the mix's draw (each per dialogue and turn)."""
    wording: str = "train"
    """The wording bank of the rejected questions and refusals (`diaforge.data_gen.wording`)."""
    encoder: str = "tfidf"
    """The description encoder of the composite similarity (`diaforge.similarity.get_encoder`)."""
    max_pairs: int | None = None
    """Keep at most this many pairs, drawn with the seed from the whole corpus after the mix (a DPO
    budget that still covers every part of the corpus); None keeps them all."""

    def __post_init__(self) -> None:
        if self.max_pairs is not None and (isinstance(self.max_pairs, bool) or self.max_pairs < 1):
            raise ValueError(f"max_pairs must be a positive integer, got {self.max_pairs!r}")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown or not self.kinds:
            raise ValueError(
                f"unknown kind {unknown[0]!r}; kinds: {', '.join(KINDS)}" if unknown else "no kinds"
            )
        if self.mix is not None:
            for kind, weight in self.mix.items():
                if kind not in self.kinds:
                    raise ValueError(f"mix names {kind!r}, which is not among the kinds built")
                if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
                    raise ValueError(f"mix weight of {kind!r} must be a number >= 0, got {weight!r}")
            if not any(self.mix.values()):
                raise ValueError("mix weights are all 0")


@dataclass(frozen=True)
class Pair:
    """A rejected alternative to one assistant turn of a dialogue."""

    dialogue: Dialogue
    turn_index: int
    """The chosen turn: ``dialogue.turns[turn_index]``."""
    kind: str
    variant: str
    rejected: Turn

    @property
    def chosen(self) -> Turn:
        return self.dialogue.turns[self.turn_index]

    def record(self) -> dict[str, Any]:
        return pair_record(
            self.dialogue, self.turn_index, self.rejected, kind=self.kind, variant=self.variant
        )


@dataclass
class _Context:
    """What the builders of one dialogue share."""

    dialogue: Dialogue
    need: Tool
    """The tool the user needs: the gold tool, or the withheld tool of a retrieval miss."""
    closest: Tool | None
    """The candidate closest to `need` (other than it) by the composite similarity."""
    teacher: ScriptedTeacher
    options: PairOptions
    first_completion: int | None = None
    """The first assistant turn after the tool is settled (completion phase), if any."""
    miss: bool = field(init=False)
    lookup: bool = field(init=False)
    """The corpus writes `lookup` thoughts: rejected completion thoughts are written that way too."""

    def __post_init__(self) -> None:
        self.miss = self.dialogue.withheld_tool is not None
        self.lookup = self.teacher.reasoning == "lookup"

    def rng(self, i: int, kind: str) -> random.Random:
        return seeded_rng(self.options.seed, "pairs", self.dialogue.id, i, kind)

    def said(self, i: int) -> str:
        return " ".join(self.user_texts(i))

    def user_texts(self, i: int) -> list[str]:
        return [t.content for t in self.dialogue.turns[:i] if t.role == "user"]

    def lookup_thought(self, i: int, known: dict[str, Any], missing: list[str]) -> str:
        """A `lookup` completion thought (`diaforge.data_gen.agents.lookup`) for turn `i` with these known
        and missing keys, opened as the chosen turn's thought opens (``The user chose ...``), so
        that it differs from the chosen thought only in what the decision rests on."""
        chosen = self.dialogue.turns[i].thought or ""
        head = chosen[: chosen.find("The tool is ")] if chosen.startswith("The user chose ") else ""
        return head + completion_thought(self.need, known, missing, missing, self.user_texts(i))

    def known(self, i: int) -> dict[str, Any]:
        """The required values of the gold tool the user has said before turn `i` (read as the
        scripted teacher reads them)."""
        said = self.said(i)
        out = {}
        for key in self.need.required:
            found, value = extract_value(said, key, self.need.properties.get(key))
            if found:
                out[key] = value
        return out

    def state(self, i: int, gold: Tool, phase: str) -> DialogueState:
        d = self.dialogue
        return DialogueState(
            gold=gold,
            candidates=list(d.candidate_tools),
            persona=d.persona,
            goal=d.goal,
            gold_args=dict(d.gold_args),
            turns=list(d.turns[:i]),
            phase=phase,
        )


# -- helpers ----------------------------------------------------------------------------------


def closest_candidate(need: Tool, candidates: Sequence[Tool], encoder_name: str = "tfidf") -> Tool | None:
    """The candidate other than `need` with the highest composite similarity to it (ties: the
    first in candidate order); None when there is no other candidate."""
    others = [c for c in candidates if c.name != need.name]
    if not others:
        return None
    matrix = composite_matrix([need, *others], get_encoder(encoder_name))
    scores = matrix[0, 1:]
    best = max(range(len(others)), key=lambda j: (scores[j], -j))
    return others[best]


def rename_tool(text: str | None, old: str, new: str) -> str | None:
    """`text` with every whole mention of tool name `old` replaced by `new`."""
    if text is None:
        return None
    return re.sub(rf"(?<![\w.\-]){re.escape(old)}(?![\w.\-])", new, text)


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _values_line(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_shown(v)}" for k, v in values.items()) or "nothing yet"


def invent_value(tool: Tool, key: str, avoid: Sequence[Any], said: str, rng: random.Random) -> Any:
    """A value for `key` of `tool` that conforms to its schema, equals none of `avoid` and whose
    text the user never said; None when 20 draws find none."""
    gen = ValueGenerator(rng)
    for _ in range(20):
        try:
            value = gen.value_for(key, tool.properties.get(key), root=tool.parameters)
        except ValueError:
            return None
        text = value if isinstance(value, str) else _shown(value)
        if value not in avoid and (not text or text.lower() not in said.lower()):
            return value
    return None


def _refusal(ctx: _Context, i: int, rng: random.Random) -> Turn:
    d = ctx.dialogue
    users = [t.content for t in d.turns[:i] if t.role == "user"]
    need = users[-1] if users else ""
    names = ", ".join(c.name for c in d.candidate_tools)
    thought = f"The user's need: `{need}`. It is not what {names} do. No candidate does it, so I call nothing and say so."
    return Turn(
        role="assistant",
        thought=thought,
        content=rng.choice(ctx.teacher.bank.refuse),
        phase=SELECTION,
        act="reject",
        action="response_fail",
    )


def _is_call(turn: Turn) -> bool:
    return bool(turn.tool_calls)


# -- the kinds ------------------------------------------------------------------------------------

Builder = Callable[[_Context, int], list[tuple[str, Turn]]]


def premature_call(ctx: _Context, i: int) -> list[tuple[str, Turn]]:
    turn = ctx.dialogue.turns[i]
    if ctx.miss or turn.action != "request":
        return []
    gold, said, known = ctx.need, ctx.said(i), ctx.known(i)
    missing = [k for k in gold.required if k not in known]
    if not missing:
        return []
    rng = ctx.rng(i, "premature_call")
    invented = {}
    for key in missing:
        value = invent_value(gold, key, [ctx.dialogue.gold_args.get(key)], said, rng)
        if value is None:
            return []
        invented[key] = value
    args = {k: known[k] if k in known else invented[k] for k in gold.required}
    if ctx.lookup:
        thought = ctx.lookup_thought(i, args, [])
    else:
        thought = (
            f"The tool is {gold.name}. Known: {_values_line(known)}. Not given yet: {', '.join(missing)}; "
            f"I take {_values_line(invented)} as likely values and call it."
        )
    return [("call", _call_turn(thought, gold.name, args))]


def _call_turn(thought: str, name: str, args: dict[str, Any]) -> Turn:
    return Turn(
        role="assistant",
        thought=thought,
        tool_calls=[ToolCall(name=name, args=args)],
        phase=COMPLETION,
        act="function_calling",
        action="call",
    )


def near_duplicate(ctx: _Context, i: int) -> list[tuple[str, Turn]]:
    turn, other = ctx.dialogue.turns[i], ctx.closest
    if ctx.miss or other is None:
        return []
    if _is_call(turn):
        calls = [
            ToolCall(name=other.name if c.name == ctx.need.name else c.name, args=dict(c.args))
            for c in turn.tool_calls or []
        ]
        thought = rename_tool(turn.thought, ctx.need.name, other.name)
        return [("call", turn.model_copy(update={"tool_calls": calls, "thought": thought}))]
    if i == ctx.first_completion and _after_clarify(ctx.dialogue, i) and turn.action == "request":
        move = ctx.teacher.complete(ctx.state(i, other, COMPLETION), ctx.rng(i, "near_duplicate"))
        if move.tool_calls and move.tool_calls[0].name == ctx.need.name:
            return []
        return [("option", move)]
    return []


def _after_clarify(d: Dialogue, i: int) -> bool:
    before = [t for t in d.turns[:i] if t.role == "assistant"]
    return bool(before) and before[-1].action == "clarify"


def unsupported_value(ctx: _Context, i: int) -> list[tuple[str, Turn]]:
    turn = ctx.dialogue.turns[i]
    if ctx.miss or not _is_call(turn) or not turn.tool_calls[0].args:
        return []
    call = turn.tool_calls[0]
    rng = ctx.rng(i, "unsupported_value")
    keys = list(call.args)
    rng.shuffle(keys)
    tool = next((c for c in ctx.dialogue.candidate_tools if c.name == call.name), ctx.need)
    for key in keys:
        old = call.args[key]
        new = invent_value(tool, key, [old], ctx.said(i), rng)
        if new is None:
            continue
        args = {k: (new if k == key else v) for k, v in call.args.items()}
        thought = (turn.thought or "").replace(_shown(old), _shown(new))
        if thought == (turn.thought or ""):
            thought = f"{thought} I take {key}={_shown(new)}.".strip()
        calls = [ToolCall(name=call.name, args=args), *(turn.tool_calls[1:])]
        return [("value", turn.model_copy(update={"tool_calls": calls, "thought": thought}))]
    return []


def needless_question(ctx: _Context, i: int) -> list[tuple[str, Turn]]:
    turn = ctx.dialogue.turns[i]
    if ctx.miss:
        return []
    out: list[tuple[str, Turn]] = []
    rng = ctx.rng(i, "needless_question")
    if _is_call(turn) and turn.tool_calls[0].args:
        args = turn.tool_calls[0].args
        key = rng.choice(list(args))
        items = f"the {humanise_param(key)}"
        text = rng.choice(ctx.teacher.bank.ask_more).format(items=items, them="it", is_are="is", act="")
        if ctx.lookup:
            thought = ctx.lookup_thought(i, {k: v for k, v in args.items() if k != key}, [key])
        else:
            thought = (
                f"The tool is {ctx.need.name}. Known: {_values_line(args)}. I ask for {key} once more "
                "before I call it."
            )
        out.append(
            (
                "value",
                Turn(
                    role="assistant",
                    thought=thought,
                    content=text,
                    phase=COMPLETION,
                    act="seek_info",
                    action="request",
                ),
            )
        )
    if i == ctx.first_completion and ctx.closest is not None:
        pool = [ctx.need, ctx.closest]
        rng.shuffle(pool)
        out.append(("tool", ctx.teacher.ask(ctx.state(i, ctx.need, SELECTION), pool, rng)))
    return out


def missed_refusal(ctx: _Context, i: int) -> list[tuple[str, Turn]]:
    turn, other = ctx.dialogue.turns[i], ctx.closest
    if not ctx.miss or turn.act != "reject" or other is None:
        return []
    thought = (
        f"The request points to {other.name}: {first_sentence(other.description)}. "
        "It is the nearest fit, so I select it."
    )
    out = [
        (
            "call",
            Turn(role="assistant", thought=thought, tool_calls=[ToolCall(name=other.name)], phase=SELECTION),
        )
    ]
    if other.required:
        rng = ctx.rng(i, "missed_refusal")
        state = ctx.state(i, other, COMPLETION)
        move = ctx.teacher.complete(state, rng)
        if not move.tool_calls:
            out.append(("request", move))
    return out


def wrong_refusal(ctx: _Context, i: int) -> list[tuple[str, Turn]]:
    turn = ctx.dialogue.turns[i]
    rng = ctx.rng(i, "wrong_refusal")
    if not ctx.miss and _is_call(turn):
        return [("positive", _refusal(ctx, i, rng))]
    if ctx.miss and turn.action == "clarify":
        return [("early", _refusal(ctx, i, rng))]
    return []


BUILDERS: dict[str, Builder] = {
    "premature_call": premature_call,
    "near_duplicate": near_duplicate,
    "unsupported_value": unsupported_value,
    "needless_question": needless_question,
    "missed_refusal": missed_refusal,
    "wrong_refusal": wrong_refusal,
}


def reasoning_of(dialogue: Dialogue) -> str:
    """The teacher's reasoning style in a dialogue: ``lookup`` when its completion thoughts list the
    tool's signature and ``Required:``, else ``summary``."""
    thoughts = [t.thought or "" for t in dialogue.turns if t.role == "assistant"]
    return "lookup" if any("Required: " in t or "What each does:" in t for t in thoughts) else "summary"


def dialogue_pairs(dialogue: Dialogue, options: PairOptions) -> list[Pair]:
    """Every pair of the kinds in `options` for one dialogue, turn by turn."""
    need = dialogue.gold_tool or dialogue.withheld_tool
    if need is None:
        return []
    candidates = list(dialogue.candidate_tools)
    closest = closest_candidate(need, candidates, options.encoder)
    teacher = ScriptedTeacher(wording=options.wording, reasoning=reasoning_of(dialogue))
    first = next((i for i in dialogue.assistant_turns() if dialogue.turns[i].phase == COMPLETION), None)
    ctx = _Context(dialogue, need, closest, teacher, options, first)
    pairs = []
    for i in dialogue.assistant_turns():
        for kind in options.kinds:
            for variant, rejected in BUILDERS[kind](ctx, i):
                pairs.append(Pair(dialogue, i, kind, variant, rejected))
    return pairs


def apply_mix(pairs: list[Pair], options: PairOptions) -> list[Pair]:
    """The pairs the mix keeps (module docstring), in their original order. Kinds the mix leaves
    out (or weighs 0) are dropped; a kind the corpus has no pair of is left out of the shares."""
    if options.mix is None:
        return pairs
    by_kind: dict[str, list[int]] = {k: [] for k in options.kinds}
    for n, p in enumerate(pairs):
        by_kind[p.kind].append(n)
    weights = {k: w for k, w in options.mix.items() if w > 0 and by_kind[k]}
    if not weights:
        return []
    total = sum(weights.values())
    shares = {k: w / total for k, w in weights.items()}
    size = min(len(by_kind[k]) / s for k, s in shares.items())
    keep: set[int] = set()
    for kind, share in shares.items():
        rng = seeded_rng(options.seed, "mix", kind)
        keep.update(rng.sample(by_kind[kind], math.floor(size * share + 1e-9)))
    return [p for n, p in enumerate(pairs) if n in keep]


def make_pairs(dialogues: Sequence[Dialogue], options: PairOptions | None = None) -> list[Pair]:
    """The pairs of a corpus, after the mix and the `max_pairs` draw (in corpus order)."""
    options = options or PairOptions()
    pairs = apply_mix([p for d in dialogues for p in dialogue_pairs(d, options)], options)
    if options.max_pairs is None or len(pairs) <= options.max_pairs:
        return pairs
    keep = set(seeded_rng(options.seed, "max_pairs").sample(range(len(pairs)), options.max_pairs))
    return [p for n, p in enumerate(pairs) if n in keep]


def pair_stats(dialogues: Sequence[Dialogue], pairs: Sequence[Pair], options: PairOptions) -> dict[str, Any]:
    """``stats.json``: the pairs per kind (every kind of `KINDS`, 0 when none) and per
    ``kind/variant``, the assistant turns and dialogues they come from, and the options."""
    kinds = Counter(p.kind for p in pairs)
    return {
        "dialogues": len(dialogues),
        "retrieval_misses": sum(d.withheld_tool is not None for d in dialogues),
        "assistant_turns": sum(len(d.assistant_turns()) for d in dialogues),
        "pairs": len(pairs),
        "turns_with_pairs": len({(p.dialogue.id, p.turn_index) for p in pairs}),
        "dialogues_with_pairs": len({p.dialogue.id for p in pairs}),
        "by_kind": {k: kinds.get(k, 0) for k in KINDS},
        "by_variant": dict(sorted(Counter(f"{p.kind}/{p.variant}" for p in pairs).items())),
        "refusals_read_as_refusals": all(
            is_refusal(p.rejected.content) for p in pairs if p.kind == "wrong_refusal"
        ),
        "options": {
            "kinds": list(options.kinds),
            "mix": options.mix,
            "seed": options.seed,
            "wording": options.wording,
            "encoder": options.encoder,
            "max_pairs": options.max_pairs,
        },
    }


def write_pairs(
    dialogues: Sequence[Dialogue], out: str | Path, fmt: PromptFormat, options: PairOptions | None = None
) -> dict[str, Any]:
    """Build the pairs of `dialogues` and write the run folder (module docstring); returns the
    stats (with ``out`` and ``prompt_format`` added)."""
    options = options or PairOptions()
    pairs = make_pairs(dialogues, options)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    records = [p.record() for p in pairs]
    write_jsonl(folder / PAIRS_FILE, records)
    write_jsonl(folder / PREFERENCE_FILE, preference_rows(records, fmt))
    fmt.save(folder)
    stats = pair_stats(dialogues, pairs, options)
    (folder / STATS_FILE).write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return {**stats, "out": str(folder), "prompt_format": fmt.as_dict()}


def summary_line(summary: dict[str, Any]) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in summary["by_kind"].items() if k in summary["options"]["kinds"])
    return (
        f"{summary['pairs']} preference pairs from {summary['turns_with_pairs']} turns of "
        f"{summary['dialogues']} dialogues ({kinds}) -> {summary['out']} ({PAIRS_FILE}, {PREFERENCE_FILE})"
    )


def parse_mix(text: str) -> dict[str, float]:
    """``kind=weight,...`` as a mapping; ValueError naming the bad item."""
    mix: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        kind, sep, weight = item.partition("=")
        try:
            if not sep:
                raise ValueError
            mix[kind.strip()] = float(weight)
        except ValueError:
            raise ValueError(f"--mix item {item!r} is not kind=weight") from None
    return mix
