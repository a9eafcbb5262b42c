"""Next-action prediction (ToolDial's action task, DialogTool's tool awareness).

Task. Given a dialogue prefix that ends with a user turn (gold history: the reference turns, not
the model's), predict the system's next action. Every assistant turn of a dialogue that carries an
`action` label is one example; its gold label is that action and, for a call, the names of the
tools it calls. Labels are ToolDial's system actions (our schema's `SystemAction`): clarify,
request, suggest, call, response, response_fail, system_bye, retriever_call. DialogTool's nine
SGD actions (`DIALOGTOOL_ACTIONS`) can be scored with the same functions by passing their label
set and tool-related labels.

How the predicted action is obtained (`run_next_action`):

* ``method="reply"`` (default): the model answers as the assistant would (our prompt format) and
  the action is read off its reply (`action_of_reply`) with the heuristics the scripted agents
  use: a call -> ``call``; unreadable output -> ``malformed`` (never a valid label); a question
  (outside the closing sentences of `diaforge.eval.peers.acts.without_closings`, such as "Is there anything
  else I can help you with?") that names two or more candidate tools -> ``clarify``; a question that names a required
  parameter of the tool being discussed -> ``request``; a question that names one candidate tool
  -> ``suggest``; any other question -> ``clarify``; a farewell -> ``system_bye``; an apology or
  refusal (sorry, cannot, unable, not possible, no tool) -> ``response_fail``; anything else ->
  ``response``. The tool being discussed is the gold tool (`seed_tool`) once a dialogue has one.
* ``method="label"``: the model is shown the action list with definitions and the dialogue, and
  asked for one action name; an answer in DialogTool's ``[action_name(explanations)]`` form gives
  its action name; otherwise the answer is normalised (lower case, letters and underscores, the
  words "action"/"api" dropped) and matched exactly, else the longest label found in it as a whole
  word (so ``response_fail`` wins over ``response``), else it is ``unparsed``. This reads one label
  out of free text; it is not ToolDial's scoring rule. ToolDial's two rules (exact match after its
  normalisation for its GPT baselines, substring containment of the gold label for its open
  models) are `diaforge.eval.peers.label_files.score_label_files`, used by ``python -m diaforge.eval next-action score``.
* ``labels="dialogtool"`` asks for DialogTool's nine SGD actions (label mode only); its
  tool-related actions (request, confirm, inform_count, notify_success, notify_failure) are the
  TOOL and CALL sets of the metrics below. The gold labels are then the assistant turns'
  ``metadata["dialogtool_action"]``, as `diaforge.eval.peers.dialogtool` imports them.

Metrics (`score_next_action`), over N examples with gold g_i and prediction p_i, with TOOL the
labels that invoke a tool (ToolDial: call, retriever_call; DialogTool: its tool-related actions)
and CALL the labels that are a call (ToolDial: call, retriever_call; DialogTool: none but ``call``,
which it does not use):

* ``accuracy`` = #{p_i = g_i} / N; ``per_action``: precision, recall, F1 and support per label;
  ``macro_f1`` = mean F1 over the labels with gold support; ``confusion`` = {gold: {pred: count}}.
* ``T`` (DialogTool "T.", false negatives of tool use) = #{g_i ∈ TOOL, p_i ≠ g_i} / N: the tool was
  needed and the predicted action is not the one that uses it.
* ``NoT`` (DialogTool "No T.", false positives) = #{g_i ∉ TOOL, p_i ≠ g_i} / N: no tool was needed
  and the model invoked one or chose another non-tool action. T + NoT = 1 - accuracy, as in
  DialogTool's Table 4 (e.g. GPT-4o: 19.9 + 16.7 = 100 - 63.5).
* ``Rec`` (DialogTool "Rec.", selection recall) = among the examples where the gold action is a
  call and the model called, the share whose calls include every gold tool; None when there is no
  such example or no tool names are known (label mode).
* ``API`` (DialogTool "API.", parse errors) = #{p_i = malformed} / N.
* ``Unn`` (DialogTool "Unn.", unnecessary calls) = #{p_i ∈ CALL, g_i ∉ CALL} / #{p_i ∈ CALL}: the
  share of the model's calls that were not needed (GPT-3.5: "27.1% of its tool calls").
* ``call_precision`` = #{p ∈ CALL, g ∈ CALL} / #{p ∈ CALL}, ``call_recall`` = same / #{g ∈ CALL}
  (binary call detection), ``premature_call`` = #{p ∈ CALL, g ∉ CALL} / #{g ∉ CALL}.

Ratios with a zero denominator are 0.0 (``Rec``: None). Numbers are rounded to 6 decimals.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from diaforge.data_gen.agents import offered_options
from diaforge.eval.peers.acts import without_closings
from diaforge.format.rendering import THINK_BLOCK
from diaforge.schema import CALL_ACTIONS, Dialogue, SystemAction, Tool
from diaforge.text import humanise_name, humanise_param, stem, words

__all__ = [
    "CALL_ACTIONS",
    "DIALOGTOOL_ACTIONS",
    "DIALOGTOOL_TOOL_ACTIONS",
    "MALFORMED",
    "TOOLDIAL_ACTIONS",
    "UNPARSED",
    "NextActionExample",
    "action_of_reply",
    "build_examples",
    "classify_reply",
    "format_next_action",
    "label_messages",
    "parse_action_label",
    "run_next_action",
    "score_next_action",
    "score_records",
    "squash_label",
    "write_next_action_run",
]

TOOLDIAL_ACTIONS: tuple[str, ...] = get_args(SystemAction)
DIALOGTOOL_ACTIONS = (
    "request",
    "confirm",
    "inform_count",
    "notify_success",
    "notify_failure",
    "inform",
    "offer_intent",
    "req_more",
    "goodbye",
)
DIALOGTOOL_TOOL_ACTIONS = ("request", "confirm", "inform_count", "notify_success", "notify_failure")
MALFORMED = "malformed"
UNPARSED = "unparsed"

ACTION_DEFINITIONS = {
    "clarify": "ask the user to choose between several tools or to make a vague request precise",
    "request": "ask the user for the value of a required argument of the chosen tool",
    "suggest": "propose one specific tool and ask whether it is the right one",
    "call": "call a tool now (all its required arguments are known)",
    "response": "answer or inform the user (e.g. with a call's result)",
    "response_fail": "tell the user the request cannot be fulfilled",
    "system_bye": "close the conversation",
    "retriever_call": "search the tool catalogue for candidate tools",
}

# DialogTool's Table 7 (the SGD action definitions)
ACTION_DEFINITIONS.update(
    {
        "confirm": "confirm the value of all arguments before making a transactional API call",
        "inform_count": "inform the number of items found that satisfy the user's request",
        "notify_success": "inform the user that their request was successful",
        "notify_failure": "inform the user that their request failed",
        "inform": "inform the value for an argument to the user",
        "offer_intent": "offer a new intent to the user",
        "req_more": "ask the user if they need anything else",
        "goodbye": "end the dialogue",
    }
)

_ROUND = 6


@dataclass
class NextActionExample:
    """One prediction point: the dialogue prefix and the gold action (and gold tools for a call)."""

    dialogue: Dialogue
    turn: int
    gold: str
    gold_tools: list[str] = field(default_factory=list)

    @property
    def prefix(self) -> Dialogue:
        return self.dialogue.model_copy(update={"turns": self.dialogue.turns[: self.turn]})


def build_examples(dialogues: Iterable[Dialogue], labels: str = "tooldial") -> list[NextActionExample]:
    """An example per labelled assistant turn (turns without a label are left out): the turn's
    `action` for ToolDial's labels, its ``metadata["dialogtool_action"]`` (`diaforge.eval.peers.dialogtool`)
    for DialogTool's."""
    out = []
    for d in dialogues:
        for i, t in enumerate(d.turns):
            gold = t.metadata.get("dialogtool_action") if labels == "dialogtool" else t.action
            if t.role == "assistant" and gold is not None and i > 0:
                out.append(NextActionExample(d, i, gold, [c.name for c in t.tool_calls or []]))
    return out


# --------------------------------------------------------------------------------------------
# Reading an action off a reply
# --------------------------------------------------------------------------------------------

_BYE = re.compile(
    r"\b(?:good ?bye|bye|farewell|have a (?:nice|great|good|lovely) (?:day|evening|week))\b", re.I
)
_FAIL = re.compile(
    r"\b(?:sorry|unfortunately|unable|cannot|can(?:'|’)t|can not|not able|not possible|no (?:tool|function|api)s?"
    r"|not supported|don(?:'|’)t have (?:a|any) (?:tool|function))\b",
    re.I,
)


_PURPOSE = re.compile(r"(?:^|(?<=[.!]\s))(?:in order )?to [^,.?]*,", re.I)


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def _names_tool(text_low: str, stems: set[str], tool: Tool) -> bool:
    human = humanise_name(tool)
    if human and human in text_low:
        return True
    name = {stem(w) for w in words(tool.name)}
    return len(name) > 1 and name <= stems


def _names_param(text_low: str, stems: set[str], key: str) -> bool:
    human = humanise_param(key).lower()
    if human and human in text_low:
        return True
    parts = {stem(w) for w in words(key) if w not in ("is", "has")}
    return bool(parts) and parts <= stems


def classify_reply(text: str, candidates: Sequence[Tool], focus: Tool | None = None) -> str:
    """The action of a textual reply (rules in the module docstring)."""
    low = text.lower()
    stems = _stems(text)
    asks = "?" in without_closings(text)  # "Anything else I can help with?" asks nothing
    if _BYE.search(text) and not asks:
        return "system_bye"
    if asks:
        named = [c for c in candidates if _names_tool(low, stems, c)]
        if len(named) >= 2:
            return "clarify"
        pool = [focus] if focus is not None else list(candidates)
        asked = {k for t in pool for k in t.required if _names_param(low, stems, k)}
        # A purpose clause ("To book a hotel room, I need ...") restates the task, it offers nothing.
        offered = offered_options(_PURPOSE.sub("", text), candidates)
        if len(offered) >= 2 and len(offered) > len(asked):
            return "clarify"  # offers options by what they do; a parameter word is incidental
        if asked:
            return "request"
        if len(named) == 1:
            return "suggest"
        return "clarify"
    if _FAIL.search(text):
        return "response_fail"
    if _BYE.search(text):
        return "system_bye"
    return "response"


def action_of_reply(parsed: Any, dialogue: Dialogue) -> tuple[str, list[str]]:
    """(action, called tool names) of a parsed reply (`diaforge.format.ParsedMessage`)."""
    if parsed.kind == "tool_calls":
        names = [c.name for c in parsed.tool_calls]
        return ("retriever_call" if names and all(n == "retriever" for n in names) else "call"), names
    if parsed.kind == "malformed":
        return MALFORMED, []
    return classify_reply(parsed.content, dialogue.candidate_tools, dialogue.gold_tool), []


_LABEL_CHARS = re.compile(r"[^a-z_ ]+")
_BRACKETED = re.compile(r"\[\s*([A-Za-z][A-Za-z_ -]*?)\s*[(\]]")


def parse_action_label(text: str, labels: Sequence[str] = TOOLDIAL_ACTIONS) -> str:
    """An action name out of a model's answer (module docstring), or `UNPARSED`."""
    text = re.sub(THINK_BLOCK, " ", text or "", flags=re.S)
    bracketed = _BRACKETED.search(text)
    if bracketed:  # DialogTool's output format: [action_name(explanations)]
        hit = {squash_label(a): a for a in labels}.get(squash_label(bracketed.group(1)))
        if hit:
            return hit
    text = text.lower()
    norm = _LABEL_CHARS.sub(" ", text.replace("-", "_"))
    norm = re.sub(r"\b(?:action|api)\b", " ", norm)
    squashed = "_".join(norm.split())
    for label in labels:
        if squashed == label:
            return label
    spaced = f" {' '.join(norm.split())} "
    for label in sorted(labels, key=len, reverse=True):
        if f" {label} " in spaced or f" {label.replace('_', ' ')} " in spaced:
            return label
    return UNPARSED


def _render_prefix(d: Dialogue) -> str:
    lines = []
    for t in d.turns:
        if t.role == "user":
            lines.append(f"User: {t.content}")
        elif t.tool_calls:
            calls = ", ".join(
                f"{c.name}({json.dumps(c.args, ensure_ascii=False, default=str)})" for c in t.tool_calls
            )
            lines.append(f"System [{t.action or 'call'}]: {calls}")
        else:
            lines.append(f"System [{t.action or '?'}]: {t.content}")
    return "\n".join(lines)


def label_messages(d: Dialogue, labels: Sequence[str] = TOOLDIAL_ACTIONS) -> list[dict[str, str]]:
    """The chat messages of label mode: action definitions, candidate tools, the dialogue prefix."""
    defs = "\n".join(f"- {a}: {ACTION_DEFINITIONS.get(a, a.replace('_', ' '))}" for a in labels)
    tools = "\n".join(f"- {t.name}: {t.description}" for t in d.candidate_tools) or "(none)"
    system = (
        "You are the dialogue manager of a tool-using assistant. Given a conversation, decide the "
        f"assistant's next action. The actions are:\n{defs}\n\nAvailable tools:\n{tools}\n\n"
        "Answer with the action name only."
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Conversation:\n{_render_prefix(d)}\n\nNext action:"},
    ]


# --------------------------------------------------------------------------------------------
# Running and scoring
# --------------------------------------------------------------------------------------------


async def run_next_action(
    model: Any,
    dialogues: Sequence[Dialogue],
    *,
    method: str = "reply",
    labels: str = "tooldial",
    chunk: int = 64,
    progress: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Predict the next action of every example of `dialogues` with `model` (anything with
    ``async respond(dialogues, messages=None) -> [Reply]``; label mode passes its own prompt as
    `messages`) and score it. Returns (metrics, records).
    ``labels="dialogtool"`` asks for (and scores) DialogTool's nine actions; it needs
    ``method="label"`` (a reply does not show which SGD action it is)."""
    from tqdm.auto import tqdm

    if method not in ("reply", "label"):
        raise ValueError(f"method must be 'reply' or 'label', got {method!r}")
    if labels not in ("tooldial", "dialogtool"):
        raise ValueError(f"labels must be 'tooldial' or 'dialogtool', got {labels!r}")
    if labels == "dialogtool" and method != "label":
        raise ValueError("DialogTool's actions are asked for as labels: use method='label'")
    label_set = DIALOGTOOL_ACTIONS if labels == "dialogtool" else TOOLDIAL_ACTIONS
    examples = build_examples(dialogues, labels)
    records: list[dict[str, Any]] = []
    bar = tqdm(total=len(examples), desc="next-action", unit="turn", disable=not progress)
    for start in range(0, len(examples), chunk):
        batch = examples[start : start + chunk]
        prefixes = [ex.prefix for ex in batch]
        if method == "label":  # the model is shown the label prompt instead of the dialogue
            replies = await model.respond(prefixes, messages=[label_messages(d, label_set) for d in prefixes])
        else:
            replies = await model.respond(prefixes)
        for ex, reply in zip(batch, replies, strict=True):
            if method == "label":
                pred, tools = parse_action_label(reply.raw, label_set), []
            else:
                pred, tools = action_of_reply(reply.parsed, ex.dialogue)
            records.append(
                {
                    "id": ex.dialogue.id,
                    "turn": ex.turn,
                    "gold": ex.gold,
                    "pred": pred,
                    "gold_tools": ex.gold_tools,
                    "pred_tools": tools,
                    "raw": reply.raw,
                }
            )
        bar.update(len(batch))
    bar.close()
    tool_labels = DIALOGTOOL_TOOL_ACTIONS if labels == "dialogtool" else CALL_ACTIONS
    metrics = score_records(
        records,
        tools_known=method == "reply",
        labels=label_set,
        tool_labels=tool_labels,
        call_labels=tool_labels,
    )
    metrics["method"] = method
    metrics["labels"] = labels
    return metrics, records


def _ratio(num: int, den: int) -> float:
    return round(num / den, _ROUND) if den else 0.0


def score_next_action(
    gold: Sequence[str],
    pred: Sequence[str],
    *,
    labels: Sequence[str] = TOOLDIAL_ACTIONS,
    tool_labels: Sequence[str] = CALL_ACTIONS,
    call_labels: Sequence[str] = CALL_ACTIONS,
    gold_tools: Sequence[Sequence[str]] | None = None,
    pred_tools: Sequence[Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Every metric of the module docstring from aligned gold and predicted labels."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    n = len(gold)
    tool, calls = set(tool_labels), set(call_labels)
    seen = list(labels) + sorted({*gold, *pred} - set(labels))
    per: dict[str, dict[str, Any]] = {}
    for label in seen:
        tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == p == label)
        n_pred = sum(1 for p in pred if p == label)
        n_gold = sum(1 for g in gold if g == label)
        prec, rec = (tp / n_pred if n_pred else 0.0), (tp / n_gold if n_gold else 0.0)
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per[label] = {
            "precision": round(prec, _ROUND),
            "recall": round(rec, _ROUND),
            "f1": round(f1, _ROUND),
            "support": n_gold,
        }
    supported = [m["f1"] for label, m in per.items() if m["support"]]
    confusion: dict[str, dict[str, int]] = {}
    for g, p in zip(gold, pred, strict=True):
        confusion.setdefault(g, {}).setdefault(p, 0)
        confusion[g][p] += 1
    wrong = [(g, p) for g, p in zip(gold, pred, strict=True) if g != p]
    gold_call = [g in calls for g in gold]
    pred_call = [p in calls for p in pred]
    both = sum(1 for a, b in zip(gold_call, pred_call, strict=True) if a and b)
    rec_value: float | None = None
    if gold_tools is not None and pred_tools is not None:
        pairs = [
            (set(gt), set(pt))
            for g, p, gt, pt in zip(gold, pred, gold_tools, pred_tools, strict=True)
            if g in calls and p in calls and gt
        ]
        rec_value = _ratio(sum(1 for gt, pt in pairs if gt <= pt), len(pairs)) if pairs else None
    return {
        "n": n,
        "accuracy": _ratio(sum(1 for g, p in zip(gold, pred, strict=True) if g == p), n),
        "macro_f1": round(sum(supported) / len(supported), _ROUND) if supported else 0.0,
        "per_action": per,
        "confusion": confusion,
        "T": _ratio(sum(1 for g, _ in wrong if g in tool), n),
        "NoT": _ratio(sum(1 for g, _ in wrong if g not in tool), n),
        "Rec": rec_value,
        "API": _ratio(sum(1 for p in pred if p == MALFORMED), n),
        "Unn": _ratio(
            sum(1 for a, b in zip(gold_call, pred_call, strict=True) if b and not a), sum(pred_call)
        ),
        "call_precision": _ratio(both, sum(pred_call)),
        "call_recall": _ratio(both, sum(gold_call)),
        "premature_call": _ratio(
            sum(1 for a, b in zip(gold_call, pred_call, strict=True) if b and not a), n - sum(gold_call)
        ),
    }


def score_records(
    records: Sequence[Mapping[str, Any]], *, tools_known: bool = True, **kwargs: Any
) -> dict[str, Any]:
    """`score_next_action` over prediction records (``gold``, ``pred``, ``gold_tools``, ``pred_tools``)."""
    return score_next_action(
        [r["gold"] for r in records],
        [r["pred"] for r in records],
        gold_tools=[r.get("gold_tools") or [] for r in records] if tools_known else None,
        pred_tools=[r.get("pred_tools") or [] for r in records] if tools_known else None,
        **kwargs,
    )


def format_next_action(metrics: Mapping[str, Any]) -> str:
    """A readable summary: accuracy, DialogTool's error rates and per-action F1."""
    rec = "n/a" if metrics["Rec"] is None else f"{metrics['Rec']:.3f}"
    lines = [
        f"next-action ({metrics.get('method', 'reply')}): accuracy {metrics['accuracy']:.3f}, macro-F1 "
        f"{metrics['macro_f1']:.3f}, n={metrics['n']}",
        f"T. {metrics['T']:.3f}  No T. {metrics['NoT']:.3f}  Rec. {rec}  API. {metrics['API']:.3f}  "
        f"Unn. {metrics['Unn']:.3f}",
        "per-action F1: "
        + ", ".join(
            f"{a} {m['f1']:.3f} ({m['support']})" for a, m in metrics["per_action"].items() if m["support"]
        ),
    ]
    return "\n".join(lines)


def write_next_action_run(
    out: str | Path, metrics: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> Path:
    """``next_action_metrics.json`` and ``next_action_predictions.jsonl`` in the run folder."""
    from diaforge.eval.run_files import write_run_files

    return write_run_files(
        out, metrics=metrics, records=records, records_name="predictions", prefix="next_action_"
    )


def squash_label(text: str) -> str:
    """ToolDial's action normaliser (``normalize_action`` in its ``experiments/`` scripts): lower
    case, every character but a-z removed, then the substrings "action" and "api" deleted.
    ``"Retriever call"`` -> ``"retrievercall"``, ``"- Action: system_bye"`` -> ``"systembye"``."""
    return re.sub(r"[^a-z]", "", str(text).lower()).replace("action", "").replace("api", "")
