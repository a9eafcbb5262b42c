"""Where the model under test and the scripted teacher part ways: one assistant turn of a rollout
(`diaforge.eval.rollouts`) read twice, as the model wrote it and as the teacher writes it for the
same history, and the disagreement named by its kind.

Both turns are read as the user-proxy reads a reply (`diaforge.eval.moves.model_move`): a call, a
refusal, a question for a value (``ask_value``), a question about which tool (``ask_tool``),
another reply, or malformed or truncated output. The teacher's turn is read by its phase when it
has one (a selection question asks which tool; a completion question asks for values), since
it is the reference. Then the first rule that applies names the kind:

=====================  =========================================================================
kind                   when
=====================  =========================================================================
``malformed``          the model's output does not parse (`diaforge.format.parse_assistant`)
``truncated``          the token budget cut the model's output
``missed_refusal``     the teacher refuses (no candidate fits) and the model does not
``needless_refusal``   the model refuses where the teacher asks or calls
``premature_call``     the model calls where the teacher still asks (which tool, or for a value)
``near_duplicate``     both call, the model a tool other than the teacher's that is a near-duplicate
                       of it (`near`: composite similarity >= 0.70, DiaFORGE A.4)
``wrong_tool``         both call, the model another tool that is not a near-duplicate
``invented_value``     same tool; a value of the model's call is not grounded in anything the user
                       said (`diaforge.eval.anatomy.value_grounded`)
``wrong_key``          same tool, every value grounded; the keys differ from the teacher's, or a
                       value the teacher puts under one key sits under another in the model's call
``wrong_value``        same tool and keys, values grounded, yet a value differs from the teacher's
                       (`diaforge.eval.metrics.values_match`)
``repeated_question``  the model asks for a value of the gold tool that the user has already given
                       (read as the teacher reads values, `ScriptedTeacher.known_values`)
``needless_question``  the model asks where the teacher calls, or asks which tool once the
                       teacher's selection is settled (the teacher asks for a value)
``value_before_tool``  the model asks for values while the teacher still asks which tool
``other``              any other disagreement (a statement where the teacher asks or calls)
=====================  =========================================================================

Two turns that make the same move agree (``kind`` None): two questions of the same sort, however
worded, and two calls to the same tool with the same keys and matching values.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from diaforge.data_gen.agents import COMPLETION, SELECTION, ScriptedTeacher, is_refusal
from diaforge.eval.anatomy import value_grounded
from diaforge.eval.metrics import values_match
from diaforge.eval.moves import model_move, named_parameters
from diaforge.schema import Tool, ToolCall, Turn

if TYPE_CHECKING:  # numpy and the encoders load only when a run reads by meaning
    from diaforge.similarity import Encoder

__all__ = ["DISAGREEMENT_KINDS", "Disagreement", "classify", "near_duplicate_names", "teacher_move"]

DISAGREEMENT_KINDS = (
    "premature_call",
    "wrong_tool",
    "near_duplicate",
    "invented_value",
    "wrong_key",
    "wrong_value",
    "repeated_question",
    "missed_refusal",
    "needless_question",
    "needless_refusal",
    "value_before_tool",
    "malformed",
    "truncated",
    "other",
)
"""Every kind `classify` names, in the order ``stats.json`` lists them (module docstring)."""


@dataclass(frozen=True)
class Disagreement:
    """How one assistant turn of the model compares with the teacher's turn for the same history."""

    model_move: str
    """The model's move (`diaforge.eval.moves.MODEL_MOVES`)."""
    teacher_move: str
    """The teacher's move: ``ask_tool``, ``ask_value``, ``call``, ``refuse`` (or ``other``)."""
    kind: str | None
    """One of `DISAGREEMENT_KINDS`; None where the two agree."""
    detail: str = ""
    """What differs, in words (the tool, key or value), for a reader of the rollout."""


def teacher_move(turn: Turn, candidates: Sequence[Tool], encoder: Encoder | None = None) -> str:
    """The move of a teacher's turn: by its calls and its refusal, then by its phase (a selection
    question asks which tool, a completion question asks for values), else as a model's is read."""
    if turn.tool_calls:
        return "call"
    if is_refusal(turn.content):
        return "refuse"
    if turn.phase == SELECTION:
        return "ask_tool"
    if turn.phase == COMPLETION:
        return "ask_value"
    return model_move("reply", turn.content, candidates, encoder=encoder)[0]


def near_duplicate_names(
    gold: Tool | None, candidates: Sequence[Tool], encoder: Encoder | None
) -> frozenset[str]:
    """The candidates that are near-duplicates of `gold` (composite similarity >= 0.70, DiaFORGE
    A.4, descriptions read with `encoder`); empty without a gold tool or an encoder."""
    if gold is None or encoder is None:
        return frozenset()
    from diaforge.similarity import NEAR_DUPLICATE_THRESHOLD, pair_score

    others = [c for c in candidates if c.name != gold.name]
    vecs = encoder.encode([gold.description, *[c.description for c in others]])
    return frozenset(
        c.name
        for i, c in enumerate(others)
        if pair_score(gold, c, vecs[0], vecs[i + 1]).score >= NEAR_DUPLICATE_THRESHOLD
    )


def _compare_calls(
    mine: Sequence[ToolCall], theirs: ToolCall, said: str, near: Collection[str]
) -> tuple[str | None, str]:
    """The kind of two calls that differ (None: they agree), and what differs."""
    for call in mine:
        if call.name != theirs.name:
            kind = "near_duplicate" if call.name in near else "wrong_tool"
            return kind, f"called {call.name}, the teacher {theirs.name}"
    call = mine[0]
    invented = [k for k, v in call.args.items() if not value_grounded(k, v, said)]
    if invented:
        return "invented_value", f"{invented[0]}={call.args[invented[0]]!r} was never said"
    if set(call.args) != set(theirs.args):
        missing, extra = sorted(set(theirs.args) - set(call.args)), sorted(set(call.args) - set(theirs.args))
        return "wrong_key", f"keys missing {missing}, extra {extra}"
    for key, value in call.args.items():
        if not values_match(value, theirs.args[key]):
            elsewhere = [k for k, v in theirs.args.items() if k != key and values_match(value, v)]
            if elsewhere:
                return "wrong_key", f"{value!r} under {key}, the teacher's {elsewhere[0]}"
            return "wrong_value", f"{key}={value!r}, the teacher {theirs.args[key]!r}"
    if len(mine) > 1:
        return "other", f"{len(mine)} calls, the teacher one"
    return None, ""


def _repeats(content: str, gold: Tool | None, said: str) -> list[str]:
    """The required parameters of `gold` that `content` names and the user has already given."""
    if gold is None:
        return []
    known = ScriptedTeacher.known_values(gold, said)
    return [k for k in named_parameters(content, gold) if k in known]


def classify(
    model: Turn,
    model_kind: str,
    teacher: Turn,
    *,
    candidates: Sequence[Tool],
    gold: Tool | None,
    said: str,
    near: Collection[str] = (),
    encoder: Encoder | None = None,
) -> Disagreement:
    """The disagreement between the model's turn (`model_kind`: ``reply``, ``tool_calls``,
    ``malformed`` or ``truncated``) and the teacher's, at a point where the user has said `said`
    (every user turn so far, joined by newlines), `gold` being the tool the teacher serves (None on
    a retrieval miss) and `near` its near-duplicates among the candidates. Rules: module docstring."""
    mine = model_move(model_kind, model.content, candidates, encoder=encoder)[0]
    theirs = teacher_move(teacher, candidates, encoder)

    def verdict(kind: str | None, detail: str = "") -> Disagreement:
        return Disagreement(mine, theirs, kind, detail)

    if mine in ("malformed", "truncated"):
        return verdict(mine, model.metadata.get(mine, ""))
    if theirs == "refuse":
        return verdict(None if mine == "refuse" else "missed_refusal", f"the model's move: {mine}")
    if mine == "refuse":
        return verdict("needless_refusal", f"the teacher's move: {theirs}")
    if mine == "call":
        if theirs != "call":
            return verdict("premature_call", f"the teacher's move: {theirs}")
        return verdict(*_compare_calls(model.tool_calls or [], (teacher.tool_calls or [])[0], said, near))
    repeated = _repeats(model.content, gold, said) if mine == "ask_value" else []
    if repeated:
        return verdict("repeated_question", f"asks again for {', '.join(repeated)}")
    if mine == "other":
        return verdict("other", f"a statement; the teacher's move: {theirs}")
    if theirs == "call":
        return verdict("needless_question", "the teacher calls")
    if mine == theirs:
        return verdict(None)
    if theirs == "ask_value":
        return verdict("needless_question", "asks which tool once the selection is settled")
    return verdict("value_before_tool", "asks for values while the tool is still open")
