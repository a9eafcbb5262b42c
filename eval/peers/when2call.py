"""When2Call (Ross, Mahabaleshwarkar and Suhara, NAACL 2025; github.com/NVIDIA/When2Call): its
test records into our schema, and its official metrics over the two prediction files its scripts
write.

A test record (``data/test/when2call_test_mcq.jsonl``, 3,652 records; its 300-record subset
``when2call_test_llm_judge.jsonl`` for the LLM-as-a-judge evaluation), one JSON object a line::

    {"uuid", "source": "BFCL v2 Live Multiple", "source_id", "question",
     "orig_question"?, "correct_answer": "tool_call" | "request_for_info" | "cannot_answer" | "direct",
     "answers": {"direct": str, "tool_call": "<JSON call {name, arguments}>",
                 "request_for_info": str, "cannot_answer": str},
     "target_tool": "<JSON tool>" | null, "tools": ["<JSON tool>", ...],
     "orig_tools"?: [...], "held_out_param"?: str}

Every item is one decision: the tools shown, one user question, and the correct behaviour among
the four; ``answers`` holds one reply of each behaviour (the multiple-choice options, in that key
order). `load_when2call` makes each item a two-turn `Dialogue`: the question, then the reference
reply of the correct behaviour; ``tool_call``: one call (``answers.tool_call``; `seed_tool` its
tool, `gold_args` its arguments); ``request_for_info``: the question asking for
``held_out_param`` (action ``request``; `seed_tool` the ``target_tool``); ``cannot_answer``: the
refusal (action ``response_fail``, no gold tool); ``direct``: the answer (action ``response``, no
gold tool). The uuid, source, behaviour, all four answers and ``held_out_param`` stay in
``provenance.when2call``; ``orig_tools`` and ``orig_question`` are not used by When2Call's
evaluation and are dropped.

Scoring (`score_when2call`) reads either prediction file of the repository's evaluation:

* the per-sample log of lm-eval-harness (``--log_samples``: ``samples_when2call-*.jsonl``; the
  task in ``evaluation/mcq/lm_eval_harness/when2call/``): ``doc`` (the record plus ``choices``,
  the four answers in key order as the task's prompt format writes them), ``filtered_resps``
  (one ``[log-likelihood, is_greedy]`` per choice, written as strings) and the per-sample
  metrics ``acc``, ``acc_norm`` and ``macro_f1`` (the pair [gold index, predicted index]);
* the output of ``evaluation/llm_as_a_judge/run_openai_judge.py``: ``judge_response``
  (``{"classification": ...}``) and ``question`` (the record). The judge names the direct answer
  ``direct_answer``; it is read as ``direct``.

With gold behaviour g_i and predicted behaviour p_i of item i (i = 1..N):

* ``accuracy`` = #{p_i = g_i} / N; for the MCQ log p_i = argmax_j ll_ij (lm-eval's ``acc``);
* ``acc_norm`` (MCQ) = #{argmax_j ll_ij / len(choice_j) = g_i} / N, len in characters of the
  choice as the task wrote it (lm-eval's ``acc_norm``; the first index wins a tie);
* per behaviour c: precision #{p=g=c} / #{p=c}, recall #{p=g=c} / #{g=c},
  F1 = 2PR / (P + R), each 0 when its denominator is 0;
* ``macro_f1`` = the mean of F1_c over the behaviours that occur among the gold or the predicted
  labels (scikit-learn's ``f1_score(average="macro")``, the aggregation lm-eval's f1 metrics
  use); When2Call's tables print it x 100. Its lm-eval task names an aggregation ``macro_f1``
  that the public lm-eval-harness does not have (NVIDIA/When2Call issue 6), so the pairs are read
  as logged when a sample has them (``additional_metrics.py`` reads them), else p_i is the
  unnormalised argmax, the prediction lm-eval pairs with the gold for its own f1 and mcc;
  ``macro_f1_norm`` is the same over the length-normalised argmax (printed beside, in no table);
* ``tool_hallucination_rate`` = #{g_i = cannot_answer, no tools shown, p_i = tool_call} /
  #{g_i = cannot_answer, no tools shown}, 0 when there are none (``additional_metrics.py``);
* ``confusion``: counts of (g, p), rows the gold behaviour;
* judge files also get ``aggregate_llm_as_a_judge_results.py``'s output: per gold behaviour the
  share judged as it (``score``) and the counts of the judge's labels
  (``response_distribution``); and ``cannot_answer_tool_call_rate``, the share of all
  cannot_answer items judged tool calls. No script defines the README's LLM-as-a-judge "Tool
  Hall%" column (26%, 41%, 22%), and it cannot be a share of the judge file's 17 no-tool
  cannot_answer items (k/17 is never 22% or 26%); this share over all of them is one reading that
  fits, reported beside the defined rate.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.schema import ACT_OF_ACTION, Dialogue, Tool, ToolCall, Turn
from eval.peers import ImportReport, ImportResult, make_dialogue, read_json_lines

__all__ = [
    "CATEGORIES",
    "TEST_FILES",
    "When2CallItem",
    "Scored",
    "format_when2call",
    "load_when2call",
    "macro_f1",
    "per_category",
    "read_judge_results",
    "read_lm_eval_samples",
    "read_predictions",
    "read_when2call",
    "score_when2call",
]

CATEGORIES: tuple[str, ...] = ("direct", "tool_call", "request_for_info", "cannot_answer")
"""The four behaviours, in the key order of a record's ``answers`` (the choice order)."""
TEST_FILES: tuple[str, ...] = ("when2call_test_mcq.jsonl", "when2call_test_llm_judge.jsonl")
"""The test files a folder is searched for, in order (the judge file is a subset of the MCQ file)."""
_JUDGE_NAMES = {"direct_answer": "direct"}
_ACTION_OF = {
    "tool_call": "call",
    "request_for_info": "request",
    "cannot_answer": "response_fail",
    "direct": "response",
}
_ROUND = 6


class _Bad(Exception):
    pass


@dataclass(frozen=True)
class When2CallItem:
    """One When2Call test record, validated.

    `tools` are the tool specs shown (decoded from their JSON strings); `target_tool` the tool a
    ``tool_call`` or ``request_for_info`` item is about; `answers` the four replies by behaviour,
    in the record's key order; `held_out_param` the parameter removed from a
    ``request_for_info`` question; `line` its line in the file."""

    uuid: str
    source: str
    source_id: str
    question: str
    correct_answer: str
    answers: dict[str, str]
    tools: list[dict[str, Any]]
    target_tool: dict[str, Any] | None = None
    held_out_param: str | None = None
    line: int = 0

    @property
    def no_tools(self) -> bool:
        return not self.tools


def _json_object(value: Any, what: str) -> dict[str, Any]:
    """A tool or call given as a JSON string (the test files) or already decoded (the judge log)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _Bad(f"{what} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise _Bad(f"{what} must be a JSON object with a 'name'")
    return value


def _item(obj: Any, line: int = 0) -> When2CallItem:
    if not isinstance(obj, dict):
        raise _Bad("a record must be a JSON object")
    for key in ("uuid", "question", "correct_answer"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise _Bad(f"'{key}' must be a non-empty string")
    gold = obj["correct_answer"]
    if gold not in CATEGORIES:
        raise _Bad(f"correct_answer {gold!r} is not one of {', '.join(CATEGORIES)}")
    answers = obj.get("answers")
    if not isinstance(answers, dict) or set(answers) != set(CATEGORIES):
        raise _Bad(f"'answers' must hold exactly {', '.join(CATEGORIES)}")
    if not all(isinstance(v, str) for v in answers.values()):
        raise _Bad("every answer must be a string")
    tools = obj.get("tools")
    if not isinstance(tools, list):
        raise _Bad("'tools' must be a list")
    target = obj.get("target_tool")
    held_out = obj.get("held_out_param")
    if held_out is not None and not isinstance(held_out, str):
        raise _Bad("'held_out_param' must be a string")
    return When2CallItem(
        uuid=obj["uuid"],
        source=str(obj.get("source") or ""),
        source_id=str(obj.get("source_id") or ""),
        question=obj["question"],
        correct_answer=gold,
        answers=dict(answers),
        tools=[_json_object(t, f"tools[{k}]") for k, t in enumerate(tools)],
        target_tool=None if target is None else _json_object(target, "target_tool"),
        held_out_param=held_out,
        line=line,
    )


def _test_file(src: str | Path) -> Path:
    p = Path(src)
    if p.is_dir():
        for sub in (p, p / "data" / "test", p / "test"):
            for name in TEST_FILES:
                if (sub / name).is_file():
                    return sub / name
        raise InputError(f"no {' or '.join(TEST_FILES)} in this folder", path=p)
    return p


def read_when2call(src: str | Path) -> list[When2CallItem]:
    """The items of a When2Call test file (or of a folder holding one, the MCQ file first). A
    malformed record or a repeated uuid raises `InputError` naming the file and the line."""
    path = _test_file(src)
    items: list[When2CallItem] = []
    seen: set[str] = set()
    for lineno, obj in read_json_lines(path):
        try:
            item = _item(obj, lineno)
        except _Bad as exc:
            raise InputError(str(exc), path=path, record=lineno) from None
        if item.uuid in seen:
            raise InputError(f"uuid {item.uuid!r} appears twice", path=path, record=lineno)
        seen.add(item.uuid)
        items.append(item)
    if not items:
        raise InputError("no records", path=path)
    return items


def _tool(spec: dict[str, Any]) -> Tool:
    return Tool(
        name=spec["name"],
        description=str(spec.get("description") or ""),
        parameters=spec.get("parameters"),
        metadata={"source": "when2call"},
    )


def _reference_turn(item: When2CallItem) -> tuple[Turn, str | None, dict[str, Any]]:
    """(the reference assistant turn, the gold tool, the gold arguments) of an item."""
    action = _ACTION_OF[item.correct_answer]
    if item.correct_answer == "tool_call":
        call = _json_object(item.answers["tool_call"], "answers.tool_call")
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            raise _Bad("answers.tool_call.arguments must be an object")
        turn = Turn(
            role="assistant",
            tool_calls=[ToolCall(name=call["name"], args=args)],
            act=ACT_OF_ACTION[action],
            action=action,
        )
        return turn, call["name"], dict(args)
    turn = Turn(
        role="assistant",
        content=item.answers[item.correct_answer],
        act=ACT_OF_ACTION[action],
        action=action,
    )
    seed = (
        item.target_tool["name"] if item.correct_answer == "request_for_info" and item.target_tool else None
    )
    return turn, seed, {}


def _dialogue(item: When2CallItem, path: Path) -> Dialogue:
    try:
        tools = [_tool(spec) for spec in item.tools]
        turn, seed, gold_args = _reference_turn(item)
    except (ValidationError, _Bad) as exc:
        msg = str(exc.errors()[0].get("msg")) if isinstance(exc, ValidationError) else str(exc)
        where = f"{item.uuid}: tool " if isinstance(exc, ValidationError) else f"{item.uuid}: "
        raise InputError(where + msg.removeprefix("Value error, "), path=path, record=item.line) from None
    extra = {
        "uuid": item.uuid,
        "source": item.source,
        "source_id": item.source_id,
        "correct_answer": item.correct_answer,
        "answers": item.answers,
        "held_out_param": item.held_out_param,
        "file": path.name,
    }
    return make_dialogue(
        "when2call",
        extra,
        path=path,
        record=item.line,
        entry_id=f"when2call-{item.uuid}",
        seed_tool=seed,
        candidate_tools=tools,
        gold_args=gold_args,
        turns=[Turn(role="user", content=item.question), turn],
    )


def load_when2call(src: str | Path) -> ImportResult:
    """Import a When2Call test file (or a folder holding one) as our dialogues, with counts: items
    per behaviour and per source, tools shown (0, 1, 2+), no-tool cannot_answer items."""
    path = _test_file(src)
    items = read_when2call(path)
    dialogues = [_dialogue(item, path) for item in items]
    shown = Counter("0" if len(i.tools) == 0 else "1" if len(i.tools) == 1 else "2+" for i in items)
    report = ImportReport(source="when2call", path=str(path), loaded=len(dialogues))
    report.counts = {
        "items": len(items),
        "behaviours": {c: n for c in CATEGORIES if (n := sum(i.correct_answer == c for i in items))},
        "sources": dict(sorted(Counter(i.source for i in items).items())),
        "tools_shown": {k: shown[k] for k in ("0", "1", "2+")},
        "no_tool_cannot_answer": sum(i.correct_answer == "cannot_answer" and i.no_tools for i in items),
        "held_out_params": sum(i.held_out_param is not None for i in items),
    }
    return ImportResult(dialogues, report)


# --------------------------------------------------------------------------------------------
# Prediction files
# --------------------------------------------------------------------------------------------


@dataclass
class Scored:
    """One item of a prediction file: its gold and predicted behaviour.

    `pred` is what the F1, the confusion matrix and the hallucination rate count: the judge's
    label, or in an MCQ log the logged ``macro_f1`` pair's choice (else `pred_raw`). `pred_raw`
    and `pred_norm` are the MCQ log's unnormalised and length-normalised argmax choices (``acc``,
    ``acc_norm``); `logged` the per-sample ``acc`` / ``acc_norm`` the log carries (0/1), checked
    against ours; `label` the predicted label as the file wrote it (the judge's spelling)."""

    uuid: str
    gold: str
    pred: str
    no_tools: bool
    pred_raw: str | None = None
    pred_norm: str | None = None
    label: str = ""
    logged: dict[str, float] = field(default_factory=dict)


def _number(x: Any) -> float:
    """A log-likelihood as lm-eval writes it: a number, or its string (``"-12.5"``)."""
    if isinstance(x, bool):
        raise _Bad("a log-likelihood must be a number")
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise _Bad(f"log-likelihood {x!r} is not a number") from None
    if math.isnan(value):
        raise _Bad("a log-likelihood is NaN")
    return value


def _argmax(values: Sequence[float]) -> int:
    best = 0
    for j, v in enumerate(values):
        if v > values[best]:
            best = j
    return best


def _likelihoods(sample: dict[str, Any], n_choices: int) -> list[float]:
    resps = sample.get("filtered_resps")
    if not isinstance(resps, list) or len(resps) != n_choices:
        raise _Bad(f"'filtered_resps' must hold one log-likelihood per choice ({n_choices})")
    return [_number(r[0] if isinstance(r, list | tuple) and r else r) for r in resps]


def _sample(sample: Any) -> Scored:
    """One line of lm-eval's ``samples_*.jsonl`` of a When2Call task."""
    if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
        raise _Bad("a sample needs the record as 'doc'")
    doc = sample["doc"]
    item = _item(doc)
    names = list(item.answers)
    choices = doc.get("choices", [item.answers[n] for n in names])
    if (
        not isinstance(choices, list)
        or len(choices) != len(names)
        or not all(isinstance(c, str) for c in choices)
    ):
        raise _Bad("doc.choices must be the four answers as strings")
    lls = _likelihoods(sample, len(choices))
    gold = names.index(item.correct_answer)
    pred = raw = _argmax(lls)
    pred_norm = _argmax([ll / len(c) if c else ll for ll, c in zip(lls, choices, strict=True)])
    pair = sample.get("macro_f1")
    if pair is not None:
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, int) for x in pair):
            raise _Bad("'macro_f1' must be the pair [gold index, predicted index]")
        if pair[0] != gold or not 0 <= pair[1] < len(names):
            raise _Bad(f"'macro_f1' pair {pair} does not fit correct_answer {item.correct_answer!r}")
        pred = pair[1]
    logged = {k: float(sample[k]) for k in ("acc", "acc_norm") if isinstance(sample.get(k), int | float)}
    return Scored(
        uuid=item.uuid,
        gold=item.correct_answer,
        pred=names[pred],
        no_tools=item.no_tools,
        pred_raw=names[raw],
        pred_norm=names[pred_norm],
        label=names[pred],
        logged=logged,
    )


def _judged(obj: Any) -> Scored:
    """One line of ``run_openai_judge.py``'s output."""
    if not isinstance(obj, dict) or not isinstance(obj.get("question"), dict):
        raise _Bad("a judge result needs the record as 'question'")
    item = _item(obj["question"])
    verdict = obj.get("judge_response")
    label = verdict.get("classification") if isinstance(verdict, dict) else None
    if not isinstance(label, str):
        raise _Bad("'judge_response' must be an object with a string 'classification'")
    return Scored(
        uuid=item.uuid,
        gold=item.correct_answer,
        pred=_JUDGE_NAMES.get(label, label),
        no_tools=item.no_tools,
        label=label,
    )


def _read(path: str | Path, parse: Any) -> list[Scored]:
    out = []
    for lineno, obj in read_json_lines(path):
        try:
            out.append(parse(obj))
        except _Bad as exc:
            raise InputError(str(exc), path=path, record=lineno) from None
    if not out:
        raise InputError("no predictions", path=path)
    return out


def read_lm_eval_samples(path: str | Path) -> list[Scored]:
    """The items of an lm-eval-harness samples log of a When2Call task."""
    return _read(path, _sample)


def read_judge_results(path: str | Path) -> list[Scored]:
    """The items of ``run_openai_judge.py``'s output."""
    return _read(path, _judged)


def read_predictions(path: str | Path) -> tuple[str, list[Scored]]:
    """(form, items) of a prediction file, its form told by its first record: ``lm_eval_samples``
    (a ``doc`` and ``filtered_resps``) or ``llm_judge`` (``judge_response`` and ``question``)."""
    for lineno, obj in read_json_lines(path):
        if isinstance(obj, dict) and "doc" in obj and "filtered_resps" in obj:
            return "lm_eval_samples", read_lm_eval_samples(path)
        if isinstance(obj, dict) and "judge_response" in obj and "question" in obj:
            return "llm_judge", read_judge_results(path)
        raise InputError(
            "neither an lm-eval samples log (doc, filtered_resps) nor a judge output "
            "(judge_response, question)",
            path=path,
            record=lineno,
        )
    raise InputError("no predictions", path=path)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float:
    return round(num / den, _ROUND) if den else 0.0


def _ordered(labels: set[str]) -> list[str]:
    return [c for c in CATEGORIES if c in labels] + sorted(labels - set(CATEGORIES))


def _counts(gold: Sequence[str], pred: Sequence[str]) -> dict[str, tuple[int, int, int]]:
    """label -> (both, gold count, predicted count) for every label among `gold` or `pred`."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    gold, pred = list(gold), list(pred)
    return {
        c: (sum(1 for g, p in zip(gold, pred, strict=True) if g == p == c), gold.count(c), pred.count(c))
        for c in _ordered(set(gold) | set(pred))
    }


def per_category(gold: Sequence[str], pred: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Precision, recall, F1, support (gold count) and predicted count of every behaviour found
    among the gold or predicted labels (each 0 when its denominator is 0)."""
    return {
        c: {
            "precision": _ratio(tp, n_pred),
            "recall": _ratio(tp, n_gold),
            "f1": _ratio(2 * tp, n_gold + n_pred),  # = 2PR / (P + R), and 0 when tp = 0
            "support": n_gold,
            "predicted": n_pred,
        }
        for c, (tp, n_gold, n_pred) in _counts(gold, pred).items()
    }


def macro_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """The mean F1 over the behaviours among the gold or predicted labels (see the module)."""
    counts = _counts(gold, pred)
    f1s = [2 * tp / (n_gold + n_pred) for tp, n_gold, n_pred in counts.values()]
    return round(sum(f1s) / len(f1s), _ROUND) if f1s else 0.0


def _confusion(gold: Sequence[str], pred: Sequence[str]) -> dict[str, dict[str, int]]:
    labels = _ordered(set(gold) | set(pred) | set(CATEGORIES))
    out = {g: dict.fromkeys(labels, 0) for g in labels}
    for g, p in zip(gold, pred, strict=True):
        out[g][p] += 1
    return out


def _judge_aggregate(items: Sequence[Scored]) -> dict[str, dict[str, Any]]:
    """``aggregate_llm_as_a_judge_results.py``: per gold behaviour, the share judged as it and the
    counts of the judge's labels as it wrote them."""
    out = {}
    for c in _ordered({s.gold for s in items}):
        mine = [s for s in items if s.gold == c]
        out[c] = {
            "score": _ratio(sum(s.pred == c for s in mine), len(mine)),
            "response_distribution": dict(Counter(s.label for s in mine)),
        }
    return out


def _mcq_metrics(items: Sequence[Scored]) -> dict[str, Any]:
    """lm-eval's ``acc`` and ``acc_norm`` from the log-likelihoods, the macro F1 of the normalised
    choices, and how many logged per-sample ``acc`` / ``acc_norm`` differ from ours."""
    gold = [s.gold for s in items]
    raw = [s.pred_raw or s.pred for s in items]
    norm = [s.pred_norm or s.pred for s in items]
    mine = {"acc": raw, "acc_norm": norm}
    return {
        "accuracy": _ratio(sum(g == p for g, p in zip(gold, raw, strict=True)), len(items)),
        "acc_norm": _ratio(sum(g == p for g, p in zip(gold, norm, strict=True)), len(items)),
        "macro_f1_norm": macro_f1(gold, norm),
        "logged_disagreements": {
            key: sum(
                1
                for s, p in zip(items, preds, strict=True)
                if key in s.logged and s.logged[key] != float(s.gold == p)
            )
            for key, preds in mine.items()
        },
    }


def score_when2call(items: Sequence[Scored], form: str) -> dict[str, Any]:
    """When2Call's metrics over the items of one prediction file (definitions in the module)."""
    gold = [s.gold for s in items]
    pred = [s.pred for s in items]
    no_tool = [s for s in items if s.gold == "cannot_answer" and s.no_tools]
    hallucinated = sum(s.pred == "tool_call" for s in no_tool)
    metrics: dict[str, Any] = {
        "form": form,
        "n": len(items),
        "macro_f1": macro_f1(gold, pred),
        "f1_labels": list(per_category(gold, pred)),
        "accuracy": _ratio(sum(g == p for g, p in zip(gold, pred, strict=True)), len(items)),
        "tool_hallucination_rate": _ratio(hallucinated, len(no_tool)),
        "no_tool_cannot_answer": len(no_tool),
        "hallucinated_calls": hallucinated,
        "per_category": per_category(gold, pred),
        "confusion": _confusion(gold, pred),
    }
    if form == "lm_eval_samples":
        metrics.update(_mcq_metrics(items))
    else:
        ca = [s for s in items if s.gold == "cannot_answer"]
        metrics["cannot_answer_tool_call_rate"] = _ratio(sum(s.pred == "tool_call" for s in ca), len(ca))
        metrics["categories"] = _judge_aggregate(items)
    return metrics


def format_when2call(metrics: dict[str, Any]) -> str:
    """A few lines: the headline numbers as When2Call's tables print them, then per behaviour."""
    form = "lm-eval samples" if metrics["form"] == "lm_eval_samples" else "LLM-as-a-judge"
    head = f"When2Call ({form}, {metrics['n']} items): macro F1 {100 * metrics['macro_f1']:.1f}"
    if "acc_norm" in metrics:
        head += (
            f", acc {metrics['accuracy']:.3f}, acc-norm {metrics['acc_norm']:.3f} "
            f"(its macro F1 {100 * metrics['macro_f1_norm']:.1f})"
        )
    else:
        head += f", accuracy {metrics['accuracy']:.3f}"
    head += (
        f", tool hallucination {100 * metrics['tool_hallucination_rate']:.1f}% "
        f"({metrics['hallucinated_calls']}/{metrics['no_tool_cannot_answer']} no-tool cannot_answer items)"
    )
    lines = [head]
    for c, row in metrics["per_category"].items():
        lines.append(
            f"  {c}: P {row['precision']:.3f} R {row['recall']:.3f} F1 {row['f1']:.3f} "
            f"(gold {row['support']}, predicted {row['predicted']})"
        )
    if metrics.get("categories"):
        shares = ", ".join(f"{c} {v['score']:.3f}" for c, v in metrics["categories"].items())
        lines.append(f"  judged as the gold behaviour: {shares}")
    bad = {k: v for k, v in (metrics.get("logged_disagreements") or {}).items() if v}
    if bad:
        lines.append(f"  differs from the logged per-sample metrics: {bad}")
    return "\n".join(lines)
