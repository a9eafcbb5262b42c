"""Scoring action and state label files in the peers' published form (ToolDial's GPT baselines,
DialogTool), for ``python -m diaforge.eval next-action score``.

ToolDial publishes its baselines' predictions as JSON arrays of labels (``*_pred.json``) beside
gold files of ``{"label": ...}`` objects (``*_label.json``); `score_label_files` applies its two
rules (exact match after its normalisation, and containment of the normalised gold label in the
normalised prediction) and `score_dst` its dialogue-state exact match. The labels are mapped to
ours (`canonical_label`) for DialogTool's error rates (`diaforge.eval.peers.next_action.score_next_action`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diaforge.eval.peers.next_action import (
    _BRACKETED,
    CALL_ACTIONS,
    DIALOGTOOL_ACTIONS,
    DIALOGTOOL_TOOL_ACTIONS,
    TOOLDIAL_ACTIONS,
    UNPARSED,
    score_next_action,
    squash_label,
)

__all__ = [
    "LABEL_SETS",
    "TOOL_LABELS",
    "canonical_label",
    "format_label_scores",
    "label_of",
    "normalise_state",
    "read_label_file",
    "read_states",
    "score_dst",
    "score_label_files",
]

_ROUND = 6


def _ratio(num: int, den: int) -> float:
    return round(num / den, _ROUND) if den else 0.0


# --------------------------------------------------------------------------------------------
# Scoring label files in the peers' published form (ToolDial's GPT baselines, DialogTool)
# --------------------------------------------------------------------------------------------


LABEL_SETS: dict[str, tuple[str, ...]] = {"tooldial": TOOLDIAL_ACTIONS, "dialogtool": DIALOGTOOL_ACTIONS}
TOOL_LABELS: dict[str, tuple[str, ...]] = {"tooldial": CALL_ACTIONS, "dialogtool": DIALOGTOOL_TOOL_ACTIONS}


def canonical_label(text: str, labels: Sequence[str] = TOOLDIAL_ACTIONS) -> str:
    """Our snake-case label for a label in any spelling (``retrievercall``, ``System bye``,
    ``Notify_Success``), by ToolDial's normalisation, or the action name of DialogTool's output
    format ``[action_name(explanations)]``; `UNPARSED` when it is none of `labels`."""
    table = {squash_label(a): a for a in labels}
    hit = table.get(squash_label(text))
    if hit is None:
        m = _BRACKETED.search(str(text))
        hit = table.get(squash_label(m.group(1))) if m else None
    return hit or UNPARSED


def label_of(item: Any, path: str | Path, i: int) -> str:
    from diaforge.errors import InputError

    if isinstance(item, Mapping):
        item = item.get("label", item.get("action"))
    if not isinstance(item, str):
        raise InputError("a label must be a string or an object with a string 'label'", path=path, record=i)
    return item


def read_label_file(path: str | Path, *, key: str = "label") -> list[Any]:
    """A label file as ToolDial publishes it: a JSON array of labels (strings, or objects whose
    ``label`` holds the label, as its ``*_label.json`` files do); JSON Lines of the same also read.
    Returns the raw items (strings or objects); `InputError` naming the file otherwise."""
    from diaforge.errors import InputError
    from diaforge.eval.peers import read_json, read_json_lines

    p = Path(path)
    text = p.read_text(encoding="utf-8") if p.is_file() else None
    if text is not None and text.lstrip().startswith("["):
        data = read_json(p)
    else:
        data = [obj for _, obj in read_json_lines(p)]
    if not isinstance(data, list):
        raise InputError("expected a JSON array of labels", path=p)
    return data


def _prf(gold: Sequence[str], pred: Sequence[str], label: str) -> dict[str, Any]:
    tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == p == label)
    n_pred = sum(1 for p in pred if p == label)
    n_gold = sum(1 for g in gold if g == label)
    prec, rec = (tp / n_pred if n_pred else 0.0), (tp / n_gold if n_gold else 0.0)
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {
        "precision": round(prec, _ROUND),
        "recall": round(rec, _ROUND),
        "f1": round(f1, _ROUND),
        "support": n_gold,
    }


def score_label_files(
    gold: Sequence[str], pred: Sequence[str], *, labels: str = "tooldial"
) -> dict[str, Any]:
    """Exact-match and containment accuracy of predicted action labels, by ToolDial's rules.

    With g = `squash_label`(gold) and p = `squash_label`(prediction):

    * ``exact`` = #{g = p} / N: ToolDial's GPT-baseline rule (``action_gpt_error_analysis.py``
      compares the normalised gold label with the saved prediction; every published prediction is
      already in normalised form, so normalising it changes nothing there);
    * ``containment`` = #{g is a substring of p} / N: its open-model rule (``normalize_action(label)
      in normalize_action(predict)``, ``action_train_dist_normal.py``), which counts a wordy answer
      that contains the label, and also ``responsefail`` for a gold ``response``;
    * ``per_action``: precision, recall and F1 per normalised gold label over exact matches (what
      ToolDial's ``classification_report`` prints), keyed by our snake-case label;
    * the DialogTool error rates of `score_next_action` on the labels mapped to ours
      (`canonical_label`; a prediction that maps to none is ``unparsed``) under ``mapped``.
    """
    if labels not in LABEL_SETS:
        raise ValueError(f"labels must be one of {', '.join(LABEL_SETS)}, got {labels!r}")
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    label_set = LABEL_SETS[labels]
    g = [squash_label(x) for x in gold]
    p = [squash_label(x) for x in pred]
    n = len(g)
    names = {squash_label(a): a for a in label_set}
    per = {names.get(label, label): _prf(g, p, label) for label in sorted(set(g))}
    mapped_gold = [canonical_label(x, label_set) for x in gold]
    mapped_pred = [canonical_label(x, label_set) for x in pred]
    return {
        "labels": labels,
        "n": n,
        "exact": _ratio(sum(1 for a, b in zip(g, p, strict=True) if a == b), n),
        "containment": _ratio(sum(1 for a, b in zip(g, p, strict=True) if a in b), n),
        "per_action": per,
        "gold_outside_labels": sum(1 for x in mapped_gold if x == UNPARSED),
        "pred_outside_labels": sum(1 for x in mapped_pred if x == UNPARSED),
        "mapped": score_next_action(
            mapped_gold,
            mapped_pred,
            labels=label_set,
            tool_labels=TOOL_LABELS[labels],
            call_labels=TOOL_LABELS[labels],
        ),
    }


def normalise_state(value: Any) -> Any:
    """ToolDial's DST normaliser (``normalize_json`` in ``dst_gpt_error_analysis.py``): keys and
    string values lower-cased with every character but a-z and 0-9 removed, numbers as their
    digits, a list as its ``str()`` normalised the same way; anything else (None, booleans) as is."""
    if isinstance(value, dict):
        return {normalise_state(k): normalise_state(v) for k, v in value.items()}
    if isinstance(value, (list, str, int, float)):  # bool is an int there too: True -> "true"
        return re.sub(r"[^a-z0-9]", "", str(value).lower())
    return value


def score_dst(gold: Sequence[Any], pred: Sequence[Any]) -> dict[str, Any]:
    """DST exact-match accuracy by ToolDial's rule: a state is right when its `normalise_state`
    equals the gold's (a prediction that is not an object, an unparsed generation, is wrong unless
    the gold is the same string). Also the share of predictions that are not objects
    (``generation_errors``, ToolDial's "Generation" error type)."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold states but {len(pred)} predictions")
    n = len(gold)
    right = sum(1 for g, p in zip(gold, pred, strict=True) if normalise_state(g) == normalise_state(p))
    return {
        "n": n,
        "accuracy": _ratio(right, n),
        "errors": n - right,
        "generation_errors": sum(1 for p in pred if not isinstance(p, dict)),
    }


def read_states(path: str | Path, *, gold: bool) -> list[Any]:
    """States of a DST label file: ToolDial's gold files hold ``{"dial", "label": state}`` objects,
    its prediction files the states themselves (objects, or strings that did not parse)."""
    items = read_label_file(path)
    if gold:
        return [it["label"] if isinstance(it, Mapping) and "label" in it else it for it in items]
    return items


def format_label_scores(m: Mapping[str, Any]) -> str:
    """Two lines and the per-action F1 of `score_label_files`."""
    lines = [
        f"{m['labels']} actions: exact {m['exact']:.3f}, containment {m['containment']:.3f}, n={m['n']}",
        "per-action F1: "
        + ", ".join(f"{a} {v['f1']:.3f} ({v['support']})" for a, v in m["per_action"].items()),
    ]
    if m["labels"] == "dialogtool" or m["mapped"]["Unn"] or m["mapped"]["T"]:
        x = m["mapped"]
        lines.append(
            f"T. {x['T']:.3f}  No T. {x['NoT']:.3f}  API. {x['API']:.3f}  Unn. {x['Unn']:.3f} "
            f"(predictions outside the label set: {m['pred_outside_labels']})"
        )
    return "\n".join(lines)
