"""The decisions of a dialogue judged one by one: the when-to-call matrix and the calls the
conversation does not support.

Acc judges a dialogue by its outcome; this module judges every *decision* on the way to it. At
each assistant turn (a *decision point*) it replays what the conversation so far supports, the
state the scripted teacher tracks while it generates (`diaforge.data_gen.agents`), and sets the move that
state calls for (the *reference move*) against the move the model made.

**Notation.** C is the candidate tools of dialogue d (their specs: `diaforge.eval.tool_specs`), τ* the gold
tool (positive split) and ν the tool the user needs (no-tool split, `diaforge.eval.no_tool`; not in C). The
decision points of d are its assistant turns a_1, a_2, ...; u_k is the user turn just before a_k,
and U_k = u_1 … u_k everything the user has said by then.

**The model's move** m_k at a_k, read as the user-proxy reads the reply (`diaforge.eval.moves`):

=============  ======================================================================================
move           when
=============  ======================================================================================
``call``       a_k is of kind ``tool_calls``
``malformed``  a_k is of kind ``malformed``; ``truncated``: of kind ``truncated``
``refuse``     a reply that is a refusal (`diaforge.data_gen.agents.is_refusal`, the rule of `diaforge.eval.no_tool`:
               no question mark and a negation)
``ask_value``  a reply with a question mark that names a required parameter of a candidate (or of
               ν) and asks for its value: with the names of the parameters it names blanked out,
               the rest offers fewer than two candidates, or that parameter's name is no part of
               the description of a candidate the rest offers ("could you send the city?" asks for
               a city; "look up a city in the home country or a foreign city?" offers two tools)
``ask_tool``   any other reply with a question mark: it asks which tool, offering the candidates
               Q_k = `offered_options` (read by meaning, as the user-proxy reads a question, with
               the sentence encoder it reads with): two or more, one (a yes/no question about one
               tool) or none (an open question about the need)
``other``      any other reply (a statement that is not a refusal)
=============  ======================================================================================

A parameter is *named* when its humanised name (`cost_center_id` -> "cost center ID") or its key
occurs in the reply, case folded. Read with the sentence encoder, the rule tells every question of
the held-out benchmark's reference dialogues (285 selection and completion questions, no-tool split
included) by its phase; by words alone, all but one. The dynamic loop moves the user-proxy to
giving values by the same reading, for a parameter of τ* (ν) not yet given (`asks_missing_value`).
``reader`` names the encoder the questions were read with (``words`` without one).

**The open set** O_k, the candidates the conversation has not ruled out at a_k. The user-proxy
answers a turn in one of two ways (`diaforge.data_gen.agents.ScriptedUser`): with values, once a reply has
asked for a value of τ* (ν) it has not given (`asks_missing_value`, the dynamic loop's switch to
values) or when the reply offers fewer than two candidates and names a required parameter of τ*
(ν); else by saying which tool it means, or restating its need. Only answers of the second kind
move O, each read against R_k, the candidates the turn offers as the user reads it
(`offered_options`; Q_k for an ``ask_tool`` turn):

* positive split: O_1 = `plausible`(C, u_1), the candidates the opening supports (the teacher's
  first pool). After a turn a_k answered the second way, O_{k+1} = `still_open`(C, O_k, R_k,
  u_{k+1}): the offered tools the answer points at (`narrow`), or, when it points at none ("none
  of those"), the candidates not offered that it supports (a turn that offers none, R_k = ∅,
  offers all of O_k while two or more are open; with one open, its answer restates the need and
  leaves O). Else O_{k+1} = O_k. For the scripted teacher's own questions this is its own replay
  (`ScriptedTeacher.remaining`).
* no-tool split: O_k is what `miss_progress` leaves at a_k: the candidates neither turned down by
  an answer of the second kind to a turn that offered them nor set apart from ν by the user's
  answers.

In static mode the user turns are the reference dialogue's, answers to the scripted teacher's
questions rather than to the model's, so they are read as answers to the teacher: on the positive
split, the answer u_{k+1} to the reference's k-th assistant turn leaves O_{k+1} = `still_open`(C,
O_k, P_k, u_{k+1}) when that turn asked which tool, P_k being the options it offered (``offers``
of the specs, `diaforge.eval.tool_specs`), and O_k otherwise, just as the teacher replays its own questions
(`ScriptedTeacher.remaining`). Specs without ``offers`` (an older ``tools.json``) fall back on the
rule of the benchmark's first version: while two tools or more are open, an answer that gives no
value of τ* the user had not given says which tool, and P_k = O_k[:4] (that teacher's question
offered the first four open tools, in the order `plausible` ranks them). On the no-tool split, an
answer turns down only what an ``ask_tool`` question of the model offered.

The tool is *settled* at a_k when O_k has one member. K_k, the required values of τ* that U_k
gives, is read as the teacher reads values (`ScriptedTeacher.known_values`); M_k the required
parameters of τ* not in K_k.

**The reference move** r_k:

=============  ======================================================================================
r_k            when
=============  ======================================================================================
``ask_tool``   positive: |O_k| ≥ 2; no-tool: O_k ≠ ∅ (some candidate is still to be ruled out)
``ask_value``  positive: |O_k| = 1 and M_k ≠ ∅
``call``       positive: |O_k| = 1 and M_k = ∅
``refuse``     no-tool: O_k = ∅ (the user has ruled out every candidate)
=============  ======================================================================================

`reference` on the held-out benchmark follows it at every point (the matrix is diagonal): it plays
the teacher, told τ* once its selection is settled. The replay can settle on a tool other than τ*
when the user's words point there (the teacher would then select it, and the generator drops such
a dialogue); those points are counted in ``settled_off_gold_n`` and their reference move is read
from O_k as above.

**The when-to-call matrix** counts the points by (r_k, m_k), rows `REFERENCE_MOVES`, columns
`MODEL_MOVES`, over both splits (``matrix``) and per split (``positive``, ``no_tool``), with
``agree_n`` its diagonal and ``agree = agree_n / points_n``.

**Calls not supported by the conversation**, over every call c of every turn of kind
``tool_calls`` at a point a_k (a share of calls, several to a dialogue)::

    tool_unsupported(c) = c names no candidate, or the split is no-tool (no candidate fits),
                          or O_k ≠ {name(c)} (the tool is not settled, or settled on another)
    value_ungrounded(c) = some argument (key, value) of c is not grounded in U_k
                          (`diaforge.eval.anatomy.value_grounded`, the user turns joined by newlines)
    unsupported_calls   = Σ 1[tool_unsupported(c) or value_ungrounded(c)] / Σ 1
                          (unsupported_calls_n / calls_n)

with ``unknown_tool_n`` (c names no candidate) as part of ``tool_unsupported_n``. A call made
before the tool is settled counts, even to the gold tool, and so does a call carrying a value the
user never gave. This is not When2Call's *tool hallucination rate*, which is a share of items (the
items where no tool fits that the model answers with a call): that one is
`diaforge.eval.no_tool`'s ``tool_hallucination_rate``. A ``metrics.json`` written before the
rename holds this share as ``tool_hallucination`` and its count as ``hallucinated_n``;
`read_legacy_keys` reads them under the new names. Shares are rounded to 6 decimals and None over
a zero denominator ("not computed": a model that never calls makes no unsupported call, which is
not a zero).

`replay` gives the decision points of one transcript, `compute_decisions` the dict of one mode and
`summarise_decisions` ``metrics.json`` -> ``decisions`` (one dict per mode, both splits together).
Without tool specs (`diaforge.eval.tool_specs`) the section is None and `decisions_section` says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from diaforge.data_gen.agents import (
    DialogueState,
    ScriptedTeacher,
    miss_progress,
    offered_options,
    plausible,
    still_open,
)
from diaforge.eval.anatomy import value_grounded
from diaforge.eval.metrics import split_by_mode
from diaforge.eval.moves import MODEL_MOVES, asks_missing_value, model_move, named_parameters
from diaforge.eval.tables import MODE_TITLE, counted_share, markdown_table
from diaforge.eval.tool_specs import DialogueTools, ToolSpecs, check_covers
from diaforge.eval.transcripts import SPLITS, Transcript
from diaforge.schema import Persona, Tool, ToolCall, Turn

if TYPE_CHECKING:  # numpy and the encoders load only when a run reads by meaning
    from diaforge.similarity import Encoder

__all__ = [
    "DECISION_KEYS",
    "DECISIONS_NOTE",
    "LEGACY_KEYS",
    "MODEL_MOVES",
    "NOT_COMPUTED",
    "REFERENCE_MOVES",
    "DecisionPoint",
    "asks_missing_value",
    "compute_decisions",
    "decisions_section",
    "matrix_table",
    "model_move",
    "named_parameters",
    "read_legacy_keys",
    "reader_name",
    "replay",
    "replay_all",
    "summarise_decisions",
]

REFERENCE_MOVES = ("ask_tool", "ask_value", "call", "refuse")
"""The rows of the matrix: what the replayed state calls for."""

DECISION_KEYS = (
    "reader",
    "points_n",
    "agree_n",
    "agree",
    "matrix",
    "positive",
    "no_tool",
    "calls_n",
    "unsupported_calls_n",
    "unsupported_calls",
    "tool_unsupported_n",
    "unknown_tool_n",
    "value_ungrounded_n",
    "settled_off_gold_n",
)
"""The keys of one mode of ``metrics.json`` -> ``decisions``."""

LEGACY_KEYS = {"hallucinated_n": "unsupported_calls_n", "tool_hallucination": "unsupported_calls"}
"""Keys of ``decisions`` (and of ``intervals`` -> ``decisions``) in a ``metrics.json`` written before
the per-call share was renamed -> their names now."""

_ROUND = 6
_MAX_OPTIONS = ScriptedTeacher.max_options
_FIRST_VERSION_OFFERS = 4
"""How many open tools a question of the teacher that built the benchmark's first version offered."""
_REPLAY_PERSONA = Persona(id="replay", description="the user of a replayed transcript")


# --------------------------------------------------------------------------------------------
# The replay
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionPoint:
    """One assistant turn a_k and the state the conversation supports there (module docstring)."""

    position: int
    """k: the 1-based position of the turn among the dialogue's assistant turns."""
    split: str
    reference: str
    """r_k, one of `REFERENCE_MOVES`."""
    move: str
    """m_k, one of `MODEL_MOVES`."""
    open: tuple[str, ...]
    """O_k: the names of the candidates still open, in candidate order."""
    offered: tuple[str, ...]
    """Q_k: the candidates an ``ask_tool`` question offers (empty for any other move)."""
    missing: tuple[str, ...]
    """M_k: the required parameters of τ* whose values U_k does not give (positive split)."""
    known_named: tuple[str, ...]
    """The required parameters of τ* that an ``ask_value`` question names although U_k gives them."""
    said: str
    """U_k: the user turns so far, joined by newlines."""
    calls: tuple[ToolCall, ...] = field(default=())
    """The calls of a ``call`` turn."""


def _in_order(candidates: Sequence[Tool], names: set[str]) -> tuple[str, ...]:
    return tuple(c.name for c in candidates if c.name in names)


def _reference_positive(open_: Sequence[Tool], missing: Sequence[str]) -> str:
    if len(open_) >= 2:
        return "ask_tool"
    return "ask_value" if missing else "call"


@dataclass
class _Replay:
    """The state of one transcript's replay between its turns (module docstring)."""

    transcript: Transcript
    candidates: list[Tool]
    target: Tool | None
    """τ* on the positive split, ν on the no-tool split."""
    encoder: Encoder | None
    said: list[str] = field(default_factory=list)
    history: list[Turn] = field(default_factory=list)
    offers: dict[int, list[Tool]] = field(default_factory=dict)
    """id of a turn of `history` -> what the user read it to offer (answers turn those down)."""
    pool: list[Tool] | None = None
    """O on the positive split; None before the opening."""
    pending: list[Tool] | None = None
    """What the next answer is read against; None when it does not move O."""
    selecting: bool = True
    """The user-proxy still answers about which tool (no missing value asked for yet)."""
    reference_offers: list[list[Tool] | None] | None = None
    """Static mode: what each reference question offered (module docstring); None if unknown."""
    answers: int = 0
    """How many answers (user turns after the opening) have been heard."""

    @property
    def no_tool(self) -> bool:
        return self.transcript.split == "no_tool"

    @property
    def static(self) -> bool:
        return self.transcript.mode == "static"

    def hear(self, text: str, after_a_turn: bool) -> None:
        """A user turn: the opening sets O; an answer may narrow it."""
        if self.pool is None:
            self.pool = plausible(self.candidates, text) if self.candidates else []
        elif self.static and after_a_turn and not self.no_tool and self.reference_offers is not None:
            # the reference dialogue's user answers the reference's question, whatever it offered
            k = self.answers
            offered = self.reference_offers[k] if k < len(self.reference_offers) else None
            if offered is not None and len(self.pool) > 1:
                self.pool = still_open(self.candidates, self.pool, offered, text)
        elif self.static and after_a_turn and not self.no_tool and len(self.pool) > 1:
            # specs without offers: an answer that gives no new value says which tool
            if self.target is not None and not self._gives_values(text):
                self.pool = still_open(self.candidates, self.pool, self.pool[:_FIRST_VERSION_OFFERS], text)
        elif self.pending is not None:
            self.pool = still_open(self.candidates, self.pool, self.pending, text)
        if after_a_turn:
            self.answers += 1
        self.pending = None
        self.said.append(text)
        self.history.append(Turn(role="user", content=text))

    def _gives_values(self, text: str) -> bool:
        assert self.target is not None
        before = ScriptedTeacher.known_values(self.target, " ".join(self.said))
        after = ScriptedTeacher.known_values(self.target, " ".join([*self.said, text]))
        return not after.keys() <= before.keys()

    def open_now(self) -> list[Tool]:
        """O_k: the candidates still open before the assistant's turn."""
        if not self.no_tool:
            return list(self.pool or [])
        assert self.target is not None
        state = DialogueState(
            gold=self.target,
            candidates=self.candidates,
            persona=_REPLAY_PERSONA,
            goal="",
            gold_args={},
            turns=list(self.history),
            no_tool=True,
        )
        return miss_progress(state, _MAX_OPTIONS, offers=lambda t: self.offers.get(id(t))).left

    def answer_read(self, record: Turn, move: str, offered: list[Tool], open_now: list[Tool]) -> None:
        """How the user-proxy will read the turn `record` (module docstring): it sets what the next
        answer is read against, and stops the selection once a missing value was asked for."""
        content = record.content
        if self.static:  # the user turns answer the reference dialogue's questions, not this turn
            if move == "ask_tool" and offered:
                self.offers[id(record)] = offered
            return
        if not self.selecting or self.target is None or move == "call":
            return
        if asks_missing_value(content, self.target, " ".join(self.said), self.candidates, self.encoder):
            self.selecting = False  # from here on the user-proxy gives values
            return
        named = named_parameters(content, self.target)
        read = offered if move == "ask_tool" else offered_options(content, self.candidates, self.encoder)
        if read and (len(read) >= 2 or not named):
            self.pending = self.offers[id(record)] = read  # the answer says which of these it means
        elif not read and not named and len(open_now) > 1:
            self.pending = open_now  # an open turn: the answer restates the need


def replay(
    transcript: Transcript, tools: DialogueTools, encoder: Encoder | None = None
) -> list[DecisionPoint]:
    """The decision points of one transcript, given its tool specs (module docstring); `encoder`
    reads the options of a question by meaning, as the user-proxy does (None: by words only)."""
    candidates = list(tools.candidates)
    if transcript.split == "no_tool":
        target = tools.withheld
        if target is None:
            raise ValueError(
                f"{transcript.id}: a dialogue of the no-tool split needs its withheld tool's spec"
            )
    else:
        target = next((c for c in candidates if c.name == transcript.seed_tool), None)
    state = _Replay(transcript, candidates, target, encoder, reference_offers=tools.offers)
    points: list[DecisionPoint] = []
    for turn in transcript.turns:
        if turn.role == "user":
            state.hear(turn.content, after_a_turn=bool(points))
            continue
        move, offered = model_move(
            turn.kind, turn.content, candidates, target if state.no_tool else None, encoder
        )
        open_now = state.open_now()
        missing: list[str] = []
        known_named: list[str] = []
        if state.no_tool:
            reference = "ask_tool" if open_now else "refuse"
        else:
            if target is not None:
                known = ScriptedTeacher.known_values(target, " ".join(state.said))
                missing = [k for k in target.required if k not in known]
                if move == "ask_value":
                    known_named = [k for k in named_parameters(turn.content, target) if k in known]
            reference = _reference_positive(open_now, missing)
        record = Turn(
            role="assistant",
            content=turn.content,
            tool_calls=[ToolCall(name=c.name, args=c.args) for c in turn.tool_calls or []] or None,
        )
        state.answer_read(record, move, offered, open_now)
        state.history.append(record)
        points.append(
            DecisionPoint(
                position=len(points) + 1,
                split=transcript.split,
                reference=reference,
                move=move,
                open=_in_order(candidates, {c.name for c in open_now}),
                offered=_in_order(candidates, {c.name for c in offered}),
                missing=tuple(missing),
                known_named=tuple(known_named),
                said="\n".join(state.said),
                calls=tuple(turn.tool_calls or ()),
            )
        )
    return points


# --------------------------------------------------------------------------------------------
# The matrix and the unsupported calls
# --------------------------------------------------------------------------------------------


def _share(num: int, den: int) -> float | None:
    return round(num / den, _ROUND) if den else None


def _matrix(points: Sequence[DecisionPoint]) -> dict[str, Any]:
    matrix = {r: dict.fromkeys(MODEL_MOVES, 0) for r in REFERENCE_MOVES}
    for p in points:
        matrix[p.reference][p.move] += 1
    agree = sum(matrix[r][r] for r in REFERENCE_MOVES)
    return {"points_n": len(points), "agree_n": agree, "agree": _share(agree, len(points)), "matrix": matrix}


def _call_verdict(point: DecisionPoint, call: ToolCall, candidates: set[str]) -> tuple[bool, bool, bool]:
    """(unknown tool, tool unsupported, a value ungrounded) of one call at `point`."""
    unknown = call.name not in candidates
    unsupported = unknown or point.split == "no_tool" or point.open != (call.name,)
    ungrounded = any(not value_grounded(k, v, point.said) for k, v in call.args.items())
    return unknown, unsupported, ungrounded


def replay_all(
    transcripts: Sequence[Transcript], specs: ToolSpecs, encoder: Encoder | None = None
) -> list[list[DecisionPoint]]:
    """`replay` of each transcript, in order (`check_covers` first)."""
    check_covers(specs, transcripts)
    return [replay(t, specs.dialogues[t.id], encoder) for t in transcripts]


def reader_name(encoder: Encoder | None) -> str:
    """How questions were read: the encoder's name, or ``words`` without one."""
    return str(getattr(encoder, "name", type(encoder).__name__)) if encoder is not None else "words"


def compute_decisions(
    transcripts: Sequence[Transcript],
    specs: ToolSpecs,
    encoder: Encoder | None = None,
    points: Sequence[list[DecisionPoint]] | None = None,
) -> dict[str, Any]:
    """The decisions of one mode's transcripts (both splits): the keys of `DECISION_KEYS`.
    `points` may hold `replay_all`'s points already made for these transcripts."""
    per = dict(enumerate(points if points is not None else replay_all(transcripts, specs, encoder)))
    every = [p for i in range(len(transcripts)) for p in per[i]]
    out: dict[str, Any] = _matrix(every)
    for split in SPLITS:
        mine = [p for p in every if p.split == split]
        out[split] = _matrix(mine) if any(t.split == split for t in transcripts) else None
    calls = unknown = unsupported = ungrounded = either = 0
    for i, t in enumerate(transcripts):
        names = set(t.candidate_tools)
        for p in per[i]:
            for call in p.calls:
                u, s, g = _call_verdict(p, call, names)
                calls += 1
                unknown += u
                unsupported += s
                ungrounded += g
                either += s or g
    off_gold = sum(
        1
        for i, t in enumerate(transcripts)
        if t.split == "positive"
        for p in per[i]
        if len(p.open) == 1 and p.open[0] != t.seed_tool
    )
    out.update(
        reader=reader_name(encoder),
        calls_n=calls,
        unsupported_calls_n=either,
        unsupported_calls=_share(either, calls),
        tool_unsupported_n=unsupported,
        unknown_tool_n=unknown,
        value_ungrounded_n=ungrounded,
        settled_off_gold_n=off_gold,
    )
    return {k: out[k] for k in DECISION_KEYS}


def read_legacy_keys(metrics: dict[str, Any]) -> dict[str, Any]:
    """`metrics` (a ``metrics.json``) with the per-call share of an older run under its name now
    (`LEGACY_KEYS`), in ``decisions`` and ``intervals`` -> ``decisions``, changed in place and
    returned; a run that has the new names, or no decisions, is left as it is."""
    sections = [metrics.get("decisions"), (metrics.get("intervals") or {}).get("decisions")]
    for section in sections:
        if not isinstance(section, dict):
            continue
        for d in section.values():
            if not isinstance(d, dict):
                continue
            for old, new in LEGACY_KEYS.items():
                if old in d and new not in d:
                    d[new] = d.pop(old)
    return metrics


def summarise_decisions(
    transcripts: Sequence[Transcript], specs: ToolSpecs | None, encoder: Encoder | None = None
) -> dict[str, Any] | None:
    """``metrics.json`` -> ``decisions``: `compute_decisions` per mode (both splits), or None
    when there are no tool specs. Specs that do not cover the transcripts are an `InputError`."""
    if specs is None:
        return None
    return {mode: compute_decisions(ts, specs, encoder) for mode, ts in split_by_mode(transcripts).items()}


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

DECISIONS_NOTE = (
    "At every assistant turn, the move the conversation so far calls for (rows: ask which tool while "
    "two or more candidates are open, as the scripted teacher reads the user's answers; ask for a "
    "required value the user has not given; call; refuse once the user has ruled out every candidate, "
    "no-tool split) against the model's move (columns: a question offering candidates or none is "
    "*ask tool*, one naming a missing required parameter *ask value*; a refusal; any other reply, "
    "malformed or truncated output). *Calls not supported by the conversation*: the share of calls "
    "whose tool is not the one tool left open (or no candidate fits) or whose values are not all "
    "grounded in what the user said; a share of calls, not When2Call's tool hallucination rate (a "
    "share of the items where no tool fits, in the no-tool split's section). Definitions: "
    'docs/metrics.md, "Decisions and clarification", and `eval/decisions.py`.'
)

_MOVE_TITLES = {
    "ask_tool": "ask tool",
    "ask_value": "ask value",
    "call": "call",
    "refuse": "refuse",
    "other": "other reply",
    "malformed": "malformed",
    "truncated": "truncated",
}


def matrix_table(matrix: Mapping[str, Mapping[str, int]]) -> str:
    """The matrix as markdown: a row per reference move, a column per model move, counts."""
    headers = ["reference \\ model", *(_MOVE_TITLES[m] for m in MODEL_MOVES), "all"]
    body = []
    for r in REFERENCE_MOVES:
        row = matrix.get(r) or {}
        counts = [int(row.get(m, 0)) for m in MODEL_MOVES]
        body.append([_MOVE_TITLES[r], *(str(c) for c in counts), str(sum(counts))])
    return markdown_table(headers, body)


NOT_COMPUTED = (
    "Not computed: the run folder has no `tools.json` (the candidate tool specs) and no "
    "benchmark was given (`python -m diaforge.eval score RUN --bench FILE`)."
)
"""What the decision and clarification sections of ``report.md`` say without tool specs."""


def decisions_section(metrics: Mapping[str, Any]) -> list[str]:
    """The "When to call" part of ``report.md``: per mode, the matrix, agreement and the calls not
    supported by the conversation; a "not computed" line when ``metrics.json`` has no ``decisions``
    (no tool specs)."""
    if "decisions" not in metrics:
        return []
    parts = ["## When to call: every decision against the reference move", DECISIONS_NOTE]
    decisions = metrics.get("decisions")
    if not isinstance(decisions, Mapping):
        parts.append(NOT_COMPUTED)
        return parts
    for mode, d in decisions.items():
        if not isinstance(d, Mapping):
            continue
        title = MODE_TITLE.get(mode, mode)
        lines = [
            f"- agreement {counted_share(d.get('agree'), d['agree_n'], d['points_n'])} of decision points"
            + "".join(
                f"; {split.replace('_', '-')} split {counted_share(s.get('agree'), s['agree_n'], s['points_n'])}"
                for split in SPLITS
                if isinstance(s := d.get(split), Mapping)
            ),
            "- calls not supported by the conversation "
            f"{counted_share(d.get('unsupported_calls'), d['unsupported_calls_n'], d['calls_n'])} of calls: "
            f"tool not the one left open {d['tool_unsupported_n']} (no such candidate "
            f"{d['unknown_tool_n']}), a value not grounded {d['value_ungrounded_n']}",
        ]
        parts += [f"### {title} evaluation", matrix_table(d["matrix"]), "\n".join(lines)]
    return parts
