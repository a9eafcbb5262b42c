"""Turn-level function calling with gold history (CONFETTI and BFCL style), off-policy.

Every assistant turn of a reference dialogue is a prediction point: the model sees the reference
turns before it (gold history: the reference's own earlier replies and calls, never the model's)
and writes the next assistant turn. Nothing is executed.

Function-calling examples (`call_examples`). A reference turn with J calls a_1..a_J (a chain)
gives J examples: example j shows the history plus, for j > 1, one assistant turn holding the gold
calls a_1..a_{j-1} (CONFETTI's teacher forcing of chained actions), and is scored on the model's
*first* call against a_j (CONFETTI's prompt asks for "the first function call in the chain
only"). The acceptable values of a_j are the turn's ``metadata["acceptable"][j]`` lists when the
importer kept them (BFCL, CONFETTI: ``{name: {param: [values]}}``, "" = may be omitted), else the
gold value itself.

Scores of one example (`score_call`), each 0 unless the model's reply is a call:

* ``name``: the first call's name equals the gold name exactly;
* ``params``: ``name`` and its argument names form a valid set: every gold argument that may not
  be omitted is present and no argument outside the acceptable lists is given;
* ``strict`` (AST exact): ``params`` and every value acceptable: strings under BFCL's
  `standardize_string` or `diaforge.eval.metrics.values_match`, other values under `values_match`;
* ``soft`` (AST soft): 0 unless ``params`` and every non-string value acceptable; then the
  minimum over the string arguments of their best string score against the acceptable strings
  (1.0 with no string argument): a call is only as right as its weakest argument. The default
  string score (`soft_string_score`) is 1.0 for a strict match, else the token F1 between the two
  values (lower-cased word tokens, `diaforge.text.tokenize`): "Naples" vs "Naples, Italy" =
  2·1/(1+2) = 0.667, "Rome" vs "Naples" = 0. CONFETTI scores strings with AlignScore-base, which
  is not on PyPI; pass `string_scorer` to plug it (or any scorer into [0, 1]) in.

Corpus numbers (`turn_level_metrics`): the mean of each score over the call examples; the chain
score of a reference call turn, ``∏_j soft(ã_j | a_<j, c)`` (CONFETTI's chain factorisation with
AST-soft factors), averaged over the call turns, also by chain length (1, 2, 3, 4+) and strictly
(``∏_j strict``); ``no_call`` / ``malformed``: the shares of call examples answered by a reply
or by unreadable output.

Dialog-act accuracy (CONFETTI). Every assistant turn is a DA example (for a chain, its first
example). Its gold acts are ``metadata["acts"]`` when the importer kept several, else the turn's
`act`. The model's reply gets one predicted act: a call -> function_calling; a reply -> the act an
act classifier gives its text (`diaforge.eval.peers.acts`: the rules of `classify_act` by default, 88.0% on
the held-out half of the labelled CONFETTI set, or an LLM with ``act_classifier``); malformed
output -> other. ``DA_accuracy`` = share of DA examples whose predicted act is among the gold acts (CONFETTI's
"any predicted label among the gold ones"); ``DA_confusion`` = {first gold act: {predicted act:
count}}.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.eval.metrics import values_match
from diaforge.eval.peers.acts import classify_act
from diaforge.eval.peers.bfcl.checker import standardize_string
from diaforge.schema import ACT_OF_ACTION, Dialogue, ToolCall, Turn
from diaforge.text import tokenize

__all__ = [
    "CallExample",
    "call_examples",
    "da_examples",
    "format_turn_level",
    "predicted_act",
    "run_turn_level",
    "score_call",
    "soft_string_score",
    "turn_level_metrics",
    "write_turn_level_run",
]

_ROUND = 6
StringScorer = Callable[[str, str], float]


@dataclass
class CallExample:
    """One query: a dialogue prefix (gold history, plus earlier calls of the chain) and, for a call
    target, the gold call and its acceptable values."""

    dialogue: Dialogue
    turn: int
    index: int
    """Position j of the target in its turn's chain (0-based); 0 for DA-only examples."""
    prompt: Dialogue
    gold: ToolCall | None
    acceptable: dict[str, list[Any]] | None
    chain_length: int
    gold_acts: list[str]


_LAST_TURN_ONLY = ("confetti", "bfcl")


def _acceptable_of(turn: Turn, j: int, call: ToolCall) -> dict[str, list[Any]]:
    answers = turn.metadata.get("acceptable")
    if isinstance(answers, list) and j < len(answers) and isinstance(answers[j], dict):
        ((name, params),) = answers[j].items()
        if name == call.name and isinstance(params, dict):
            return {k: list(v) for k, v in params.items()}
    return {k: [v] for k, v in call.args.items()}


def _gold_acts(turn: Turn) -> list[str]:
    acts = turn.metadata.get("acts")
    if isinstance(acts, list) and acts:
        return [str(a) for a in acts]
    if turn.act is not None:
        return [turn.act]
    return ["function_calling"] if turn.tool_calls else []


def call_examples(dialogues: Iterable[Dialogue]) -> list[CallExample]:
    """Every query of the turn-level task: one per call of a reference call turn, one per
    reference reply turn (DA only). Assistant turns at position 0 (no history) are skipped. An
    imported CONFETTI or BFCL example is scored on its last turn only: its earlier assistant turns
    are the history the benchmark gives, and are targets of their own examples."""
    out = []
    for d in dialogues:
        last_only = getattr(d.provenance, "source", None) in _LAST_TURN_ONLY
        for i, t in enumerate(d.turns):
            if t.role != "assistant" or i == 0 or (last_only and i != len(d.turns) - 1):
                continue
            history = list(d.turns[:i])
            acts = _gold_acts(t)
            if not t.tool_calls:
                out.append(CallExample(d, i, 0, d.model_copy(update={"turns": history}), None, None, 0, acts))
                continue
            calls = list(t.tool_calls)
            for j, call in enumerate(calls):
                turns = history + (
                    [Turn(role="assistant", tool_calls=calls[:j], act="function_calling", action="call")]
                    if j
                    else []
                )
                out.append(
                    CallExample(
                        d,
                        i,
                        j,
                        d.model_copy(update={"turns": turns}),
                        call,
                        _acceptable_of(t, j, call),
                        len(calls),
                        acts,
                    )
                )
    return out


def da_examples(examples: Sequence[CallExample]) -> list[CallExample]:
    """The dialog-act examples: reply turns and the first example of each call turn."""
    return [e for e in examples if e.index == 0]


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


def _strings_equal(a: str, b: str) -> bool:
    return standardize_string(a) == standardize_string(b) or values_match(a, b)


def soft_string_score(pred: str, gold: str) -> float:
    """1.0 for a strict match, else the token F1 of the two strings (module docstring)."""
    if _strings_equal(pred, gold):
        return 1.0
    p, g = tokenize(pred), tokenize(gold)
    if not p or not g:
        return 0.0
    common = sum(min(p.count(t), g.count(t)) for t in set(p))
    return 2 * common / (len(p) + len(g))


def _value_ok(value: Any, acceptable: Sequence[Any]) -> bool:
    for a in acceptable:
        if a == "":
            continue
        if isinstance(value, str) and isinstance(a, str):
            if _strings_equal(value, a):
                return True
        elif values_match(value, a):
            return True
    return False


def score_call(
    pred: ToolCall | None,
    gold: ToolCall,
    acceptable: Mapping[str, Sequence[Any]],
    *,
    string_scorer: StringScorer = soft_string_score,
) -> dict[str, float]:
    """``name``, ``params``, ``strict`` and ``soft`` of one predicted call (module docstring)."""
    zero = {"name": 0.0, "params": 0.0, "strict": 0.0, "soft": 0.0}
    if pred is None or pred.name != gold.name:
        return zero
    out = dict(zero, name=1.0)
    needed = {k for k, vals in acceptable.items() if "" not in vals}
    if not needed <= set(pred.args) or not set(pred.args) <= set(acceptable):
        return out
    out["params"] = 1.0
    soft = 1.0
    strict = True
    for key, value in pred.args.items():
        allowed = [a for a in acceptable[key] if a != ""]
        ok = _value_ok(value, allowed)
        strict = strict and ok
        strings = [a for a in allowed if isinstance(a, str)]
        if isinstance(value, str) and strings:
            soft = min(soft, 1.0 if ok else max(float(string_scorer(value, a)) for a in strings))
        elif not ok:
            soft = 0.0
    out["strict"] = float(strict)
    out["soft"] = max(0.0, min(1.0, soft))
    return out


def predicted_act(parsed: Any, dialogue: Dialogue | None = None) -> str:
    """The CONFETTI act of a parsed reply (`diaforge.format.ParsedMessage`) by the rules.
    `dialogue` is not read (the act is the text's); it stays for callers that pass it."""
    if parsed.kind == "tool_calls":
        return ACT_OF_ACTION["call"]
    if parsed.kind == "malformed":
        return "other"
    return classify_act(parsed.content)


def _mean(xs: Sequence[float]) -> float:
    return round(sum(xs) / len(xs), _ROUND) if xs else 0.0


def _bucket(n: int) -> str:
    return "4+" if n >= 4 else str(n)


def turn_level_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Corpus metrics from per-query records (`run_turn_level`): AST scores, chain score,
    dialog-act accuracy and confusion (module docstring)."""
    calls = [r for r in records if r["gold"] is not None]
    das = [r for r in records if r["index"] == 0 and r["gold_acts"]]
    chains: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in calls:
        chains.setdefault((r["id"], r["turn"]), []).append(r)
    chain_soft, chain_strict, by_len = [], [], {}
    for rs in chains.values():
        soft, strict = 1.0, 1.0
        for r in rs:
            soft *= r["scores"]["soft"]
            strict *= r["scores"]["strict"]
        chain_soft.append(soft)
        chain_strict.append(strict)
        by_len.setdefault(_bucket(rs[0]["chain_length"]), []).append(soft)
    confusion: dict[str, dict[str, int]] = {}
    for r in das:
        row = confusion.setdefault(r["gold_acts"][0], {})
        row[r["pred_act"]] = row.get(r["pred_act"], 0) + 1
    return {
        "call_examples": len(calls),
        "call_turns": len(chains),
        "name": _mean([r["scores"]["name"] for r in calls]),
        "params": _mean([r["scores"]["params"] for r in calls]),
        "AST_strict": _mean([r["scores"]["strict"] for r in calls]),
        "AST_soft": _mean([r["scores"]["soft"] for r in calls]),
        "chain": _mean(chain_soft),
        "chain_strict": _mean(chain_strict),
        "chain_by_length": {k: {"chain": _mean(v), "turns": len(v)} for k, v in sorted(by_len.items())},
        "no_call": _mean([1.0 if r["kind"] == "reply" else 0.0 for r in calls]),
        "malformed": _mean([1.0 if r["kind"] == "malformed" else 0.0 for r in calls]),
        "DA_examples": len(das),
        "DA_accuracy": _mean([1.0 if r["pred_act"] in r["gold_acts"] else 0.0 for r in das]),
        "DA_confusion": confusion,
    }


async def _acts_of(replies: Sequence[Any], classifier: Any) -> list[str]:
    """The predicted act of every reply: calls and malformed output by their kind, texts by
    `classifier` (the rules when None)."""
    acts = [predicted_act(r.parsed) for r in replies]
    if classifier is None:
        return acts
    texts = [i for i, r in enumerate(replies) if r.parsed.kind not in ("tool_calls", "malformed")]
    labelled = await classifier.classify([replies[i].parsed.content or "" for i in texts])
    for i, act in zip(texts, labelled, strict=True):
        acts[i] = act
    return acts


async def run_turn_level(
    model: Any,
    dialogues: Sequence[Dialogue],
    *,
    chunk: int = 64,
    progress: bool = True,
    string_scorer: StringScorer = soft_string_score,
    act_classifier: Any = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Query `model` (anything with ``async respond(dialogues) -> [Reply]``) on every example of
    `dialogues` and score it. Returns (metrics, records). `act_classifier` (``async
    classify(texts) -> acts``, e.g. `diaforge.eval.peers.acts.LLMActClassifier`) labels the replies'
    texts; None uses the rules."""
    from tqdm.auto import tqdm

    examples = call_examples(dialogues)
    records: list[dict[str, Any]] = []
    bar = tqdm(total=len(examples), desc="turn-level", unit="query", disable=not progress)
    for start in range(0, len(examples), chunk):
        batch = examples[start : start + chunk]
        replies = await model.respond([e.prompt for e in batch])
        acts = await _acts_of(replies, act_classifier)
        for e, reply, act in zip(batch, replies, acts, strict=True):
            p = reply.parsed
            first = p.tool_calls[0] if p.kind == "tool_calls" and p.tool_calls else None
            scores = (
                score_call(first, e.gold, e.acceptable or {}, string_scorer=string_scorer)
                if e.gold is not None
                else None
            )
            records.append(
                {
                    "id": e.dialogue.id,
                    "turn": e.turn,
                    "index": e.index,
                    "chain_length": e.chain_length,
                    "gold": {"name": e.gold.name, "args": e.gold.args} if e.gold is not None else None,
                    "kind": p.kind,
                    "pred": {"name": first.name, "args": first.args} if first is not None else None,
                    "raw": reply.raw,
                    "scores": scores,
                    "gold_acts": e.gold_acts,
                    "pred_act": act,
                }
            )
        bar.update(len(batch))
    bar.close()
    return turn_level_metrics(records), records


def format_turn_level(m: Mapping[str, Any]) -> str:
    """A readable summary of `turn_level_metrics`."""
    lines = [
        f"turn-level: {m['call_examples']} call examples over {m['call_turns']} call turns, {m['DA_examples']} DA examples",
        f"AST soft {m['AST_soft']:.3f}  AST strict {m['AST_strict']:.3f}  name {m['name']:.3f}  params {m['params']:.3f}",
        f"chain {m['chain']:.3f} (strict {m['chain_strict']:.3f}); by length: "
        + ", ".join(f"{k}: {v['chain']:.3f} ({v['turns']})" for k, v in m["chain_by_length"].items()),
        f"no call {m['no_call']:.3f}  malformed {m['malformed']:.3f}  DA accuracy {m['DA_accuracy']:.3f}",
    ]
    return "\n".join(lines)


def write_turn_level_run(
    out: str | Path, metrics: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> Path:
    """``turn_level_metrics.json`` and ``turn_level_records.jsonl`` in the run folder."""
    from diaforge.eval.run_files import write_run_files

    return write_run_files(
        out, metrics=metrics, records=records, records_name="records", prefix="turn_level_"
    )
