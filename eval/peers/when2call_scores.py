"""When2Call's official metrics (`score_when2call`) over the two prediction files its evaluation
writes; the test records themselves are read by `diaforge.eval.peers.when2call`.

`read_predictions` reads either prediction file of the repository's evaluation:

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
  #{g_i = cannot_answer, no tools shown}, 0 when there are none (``additional_metrics.py``): a
  share of *items*, those where no tool fits, each counted once whatever its response holds
  (`tool_hallucination_rate`; `diaforge.eval.no_tool` applies it to the no-tool split's dialogues);
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

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import read_json_lines
from diaforge.eval.peers.when2call import CATEGORIES, MalformedRecord, parse_item

__all__ = [
    "Scored",
    "format_when2call",
    "macro_f1",
    "per_category",
    "read_judge_results",
    "read_lm_eval_samples",
    "read_predictions",
    "score_when2call",
    "tool_hallucination_rate",
]

_JUDGE_NAMES = {"direct_answer": "direct"}
"""The judge's spelling of a behaviour -> ours."""
_ROUND = 6

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
        raise MalformedRecord("a log-likelihood must be a number")
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise MalformedRecord(f"log-likelihood {x!r} is not a number") from None
    if math.isnan(value):
        raise MalformedRecord("a log-likelihood is NaN")
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
        raise MalformedRecord(f"'filtered_resps' must hold one log-likelihood per choice ({n_choices})")
    return [_number(r[0] if isinstance(r, list | tuple) and r else r) for r in resps]


def _sample(sample: Any) -> Scored:
    """One line of lm-eval's ``samples_*.jsonl`` of a When2Call task."""
    if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
        raise MalformedRecord("a sample needs the record as 'doc'")
    doc = sample["doc"]
    item = parse_item(doc)
    names = list(item.answers)
    choices = doc.get("choices", [item.answers[n] for n in names])
    if (
        not isinstance(choices, list)
        or len(choices) != len(names)
        or not all(isinstance(c, str) for c in choices)
    ):
        raise MalformedRecord("doc.choices must be the four answers as strings")
    lls = _likelihoods(sample, len(choices))
    gold = names.index(item.correct_answer)
    pred = raw = _argmax(lls)
    pred_norm = _argmax([ll / len(c) if c else ll for ll, c in zip(lls, choices, strict=True)])
    pair = sample.get("macro_f1")
    if pair is not None:
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, int) for x in pair):
            raise MalformedRecord("'macro_f1' must be the pair [gold index, predicted index]")
        if pair[0] != gold or not 0 <= pair[1] < len(names):
            raise MalformedRecord(
                f"'macro_f1' pair {pair} does not fit correct_answer {item.correct_answer!r}"
            )
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
        raise MalformedRecord("a judge result needs the record as 'question'")
    item = parse_item(obj["question"])
    verdict = obj.get("judge_response")
    label = verdict.get("classification") if isinstance(verdict, dict) else None
    if not isinstance(label, str):
        raise MalformedRecord("'judge_response' must be an object with a string 'classification'")
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
        except MalformedRecord as exc:
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


def tool_hallucination_rate(called: Sequence[bool]) -> float:
    """When2Call's tool hallucination rate (``additional_metrics.py`` of its lm-eval task): over
    the items where no tool fits, one flag per item saying whether the model answered it with a
    tool call, the share of flagged items; 0 when there are none. When2Call takes the
    ``cannot_answer`` items that show no tools (`score_when2call`); the no-tool split's dialogues,
    whose candidates are near neighbours of the tool the user needs, are such items too
    (`diaforge.eval.no_tool`)."""
    return _ratio(sum(1 for c in called if c), len(called))


def score_when2call(items: Sequence[Scored], form: str) -> dict[str, Any]:
    """When2Call's metrics over the items of one prediction file (definitions in the module)."""
    gold = [s.gold for s in items]
    pred = [s.pred for s in items]
    no_tool = [s for s in items if s.gold == "cannot_answer" and s.no_tools]
    called = [s.pred == "tool_call" for s in no_tool]
    hallucinated = sum(called)
    metrics: dict[str, Any] = {
        "form": form,
        "n": len(items),
        "macro_f1": macro_f1(gold, pred),
        "f1_labels": list(per_category(gold, pred)),
        "accuracy": _ratio(sum(g == p for g, p in zip(gold, pred, strict=True)), len(items)),
        "tool_hallucination_rate": tool_hallucination_rate(called),
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
