"""The no-tool split: retrieval misses, evaluated and reported apart from the benchmark.

The held-out benchmark (the *positive* split: some candidate is right) has a no-tool split beside
it, ``<benchmark>_no_tool.jsonl``: dialogues built the same way from held-out tools, except that
the tool the user needs was kept out of the candidates while its near neighbours stayed
(`diaforge.data_gen.no_tool`; `python -m diaforge.data_gen build-no-tool-split`). Every record has ``seed_tool:
null`` and the missing tool in ``provenance.withheld_tool``, which the user-proxy pursues. ``eval
run`` evaluates the split after the positive split, in the same modes, and stores its
transcripts with ``split: "no_tool"``; a dialogue of the split also ends at the model's first
refusal (``ended: "refusal"``). The positive split, its sample (``--limit``) and its metrics are
exactly what they were without the split.

Notation as in `diaforge.eval.metrics`: c(d) is the list of calls of the first tool-bearing assistant turn
(∅ when there is none; malformed and truncated turns carry no calls). A *refusal* is an assistant
turn of kind ``reply`` whose text asks nothing and holds a negation
(`diaforge.data_gen.agents.refusal.is_refusal`: no question mark, and one of no, none, not, cannot,
unable, neither, nor, nothing, never or a word ending in n't); r(d) is the position (1-based)
among the assistant turns of d of its first refusal, None when it has none, and
``refused(d) = 1[c(d) = ∅ and r(d) is not None]``: it refused and called nothing.

Over the dialogues N of the split in one mode::

    refusal_acc      = Σ_N refused(d) / |N|                       (refusals_n / n)
    wrong_call       = Σ_N 1[c(d) ≠ ∅] / |N|                      (calls_n / n)
    tool_hallucination_rate = the same share, computed by When2Call's definition
                       (`diaforge.eval.peers.when2call_scores.tool_hallucination_rate`: per item, over
                       items where no tool fits, the share the model answers with a call)
    undecided        = 1 − refusal_acc − wrong_call               (no call and no refusal: still
                                                                   asking at the end, malformed or
                                                                   truncated output)
    turns_to_refusal = Σ_{d ∈ N, refused(d)} r(d) / refusals_n    (None when refusals_n = 0)

and over the dialogues P of the positive split of the same run and mode (a refusal where a tool
fits; C.1's TAR counts every dialogue without a call, this only the plain refusals)::

    false_refusal    = Σ_P refused(d) / |P|                       (false_refusals_n / positive_n)

Refusal accuracy asks for more than C.1's Acc with ``seed_tool = None`` (which is 1 for any
dialogue without a call): the model has to say so. ``tool_hallucination_rate`` is When2Call's
metric of that name on this split: one count per dialogue (a dialogue with two calls counts once,
a malformed turn is no call), so it equals ``wrong_call``; it is stored under When2Call's name so
that it is not confused with the per-call share of `diaforge.eval.decisions`
(``unsupported_calls``). When2Call's scorer takes the items that show no tools at all (its
cannot_answer items that show some are left out of its rate); here every dialogue shows
candidates, near neighbours of the tool the user needs, none of which fits. Shares are rounded to
6 decimals; a share over an empty set is 0.0 and `turns_to_refusal` None. `summarise_no_tool` gives ``metrics.json`` ->
``no_tool``: one dict per mode, and ``ended`` per mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.errors import InputError
from diaforge.eval.metrics import first_call, split_by_mode
from diaforge.eval.peers.when2call_scores import tool_hallucination_rate
from diaforge.eval.stats import wilson
from diaforge.eval.tables import DOWN, MODE_TITLE, UP, fmt, markdown_table, share_cell
from diaforge.eval.transcripts import ENDINGS, MODES, Transcript
from diaforge.schema import Dialogue, load_dialogues

__all__ = [
    "NO_TOOL_KEYS",
    "NO_TOOL_NOTE",
    "NO_TOOL_SHARES",
    "NO_TOOL_SUFFIX",
    "check_positive_bench",
    "compute_no_tool",
    "false_refusals",
    "first_refusal",
    "load_no_tool_split",
    "no_tool_bench_for",
    "no_tool_section",
    "no_tool_table",
    "render_split_summary",
    "run_lines",
    "split_summary",
    "summarise_no_tool",
]

NO_TOOL_SUFFIX = "_no_tool"
"""The split of ``X.jsonl`` is ``X_no_tool.jsonl`` beside it."""

NO_TOOL_KEYS = (
    "n",
    "refusals_n",
    "calls_n",
    "refusal_acc",
    "wrong_call",
    "tool_hallucination_rate",
    "undecided",
    "turns_to_refusal",
    "false_refusals_n",
    "positive_n",
    "false_refusal",
)
"""The keys of one mode of ``metrics.json`` -> ``no_tool``."""

NO_TOOL_SHARES = (
    ("refusal_acc", "refusals_n", "n"),
    ("wrong_call", "calls_n", "n"),
    ("tool_hallucination_rate", "calls_n", "n"),
    ("false_refusal", "false_refusals_n", "positive_n"),
)
"""(share, numerator, denominator) keys of the split's shares (``undecided`` is the rest of n);
their Wilson intervals are in ``metrics.json`` -> ``intervals`` -> ``no_tool`` (`diaforge.eval.intervals`)."""

NO_TOOL_NOTE = (
    "Retrieval misses: the tool the user needs is not among the candidates, its near neighbours "
    "are. *refusal acc*: the share of these dialogues in which the model refused plainly (a reply "
    "with no question mark and a negation) and called nothing; *wrong call*: the share with a call "
    "(When2Call's tool hallucination rate: per dialogue, on dialogues where no tool fits); "
    "*turns to refusal*: the mean position of that refusal among the assistant turns; *false "
    "refusal*: the share of the positive split's dialogues with such a refusal and no call. "
    'Definitions: docs/metrics.md, "The no-tool split\'s metrics", and `eval/no_tool.py`.'
)

_ROUND = 6


# --------------------------------------------------------------------------------------------
# The split's file
# --------------------------------------------------------------------------------------------


def no_tool_bench_for(bench: str | Path, option: str | None = "auto") -> Path | None:
    """The no-tool split `eval run` evaluates beside `bench`: ``auto`` (``X_no_tool.jsonl`` beside
    ``X.jsonl`` when it exists, else none), ``none``, or a file (which must exist)."""
    if option is None or option.strip().lower() == "none":
        return None
    if option.strip().lower() == "auto":
        path = Path(bench)
        sibling = path.with_name(f"{path.stem}{NO_TOOL_SUFFIX}{path.suffix}")
        return sibling if sibling.is_file() else None
    path = Path(option)
    if not path.is_file():
        raise InputError("no such file (--no-tool-bench takes a file, auto or none)", path=path)
    return path


def load_no_tool_split(path: str | Path) -> list[Dialogue]:
    """The records of a no-tool split; one that is not a retrieval miss (no
    ``provenance.withheld_tool``) is an `InputError` naming the file and the record."""
    records = load_dialogues(path)
    for d in records:
        if d.withheld_tool is None:
            raise InputError(
                "not a retrieval miss (seed_tool must be null and provenance.withheld_tool set)",
                path=path,
                record=d.id,
                field="provenance.withheld_tool",
            )
    return records


def check_positive_bench(path: str | Path, bench: Sequence[Dialogue]) -> None:
    """`--bench` holds the positive split: a retrieval miss there is an `InputError` that says to
    pass its file as `--no-tool-bench`."""
    for d in bench:
        if d.withheld_tool is not None:
            raise InputError(
                "is a retrieval miss of a no-tool split; pass that file as --no-tool-bench, not --bench",
                path=path,
                record=d.id,
            )


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def first_refusal(transcript: Transcript) -> int | None:
    """r(d): the 1-based position among the assistant turns of the first refusal; None if none."""
    for position, turn in enumerate(transcript.assistant_turns(), start=1):
        if turn.kind == "reply" and is_refusal(turn.content):
            return position
    return None


def _refused(transcript: Transcript) -> int | None:
    """r(d) when the dialogue refused and called nothing, else None."""
    return None if first_call(transcript) else first_refusal(transcript)


def _share(num: int, den: int) -> float:
    return round(num / den, _ROUND) if den else 0.0


def false_refusals(positive: Sequence[Transcript]) -> dict[str, Any]:
    """``false_refusals_n``, ``positive_n`` and ``false_refusal`` over positive-split transcripts."""
    count = sum(1 for t in positive if _refused(t) is not None)
    return {
        "false_refusals_n": count,
        "positive_n": len(positive),
        "false_refusal": _share(count, len(positive)),
    }


def compute_no_tool(transcripts: Sequence[Transcript], positive: Sequence[Transcript] = ()) -> dict[str, Any]:
    """The no-tool metrics of one mode (module docstring): the keys of `NO_TOOL_KEYS`, the
    false refusals counted over `positive` (the same run's positive split in the same mode)."""
    positions = [_refused(t) for t in transcripts]
    refused = [p for p in positions if p is not None]
    n = len(transcripts)
    called = [first_call(t) is not None for t in transcripts]
    calls = sum(called)
    out: dict[str, Any] = {
        "n": n,
        "refusals_n": len(refused),
        "calls_n": calls,
        "refusal_acc": _share(len(refused), n),
        "wrong_call": _share(calls, n),
        "tool_hallucination_rate": tool_hallucination_rate(called),
        "undecided": _share(n - len(refused) - calls, n),
        "turns_to_refusal": round(sum(refused) / len(refused), _ROUND) if refused else None,
        **false_refusals(positive),
    }
    return {k: out[k] for k in NO_TOOL_KEYS}


def summarise_no_tool(no_tool: Sequence[Transcript], positive: Sequence[Transcript]) -> dict[str, Any]:
    """``metrics.json`` -> ``no_tool``: `compute_no_tool` per mode of the split, and how its
    dialogues ended (``ended``)."""
    groups = split_by_mode(no_tool)
    positives = split_by_mode(positive)
    out: dict[str, Any] = {mode: compute_no_tool(ts, positives.get(mode, [])) for mode, ts in groups.items()}
    out["ended"] = {
        mode: {ending: sum(1 for t in ts if t.ended == ending) for ending in ENDINGS}
        for mode, ts in groups.items()
    }
    return out


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

_COLUMNS = (
    ("refusal_acc", f"refusal acc ({UP})"),
    ("wrong_call", f"wrong call ({DOWN})"),
    ("turns_to_refusal", "turns to refusal"),
    ("false_refusal", f"false refusal ({DOWN})"),
)


def _mode_split(metrics: Mapping[str, Any], mode: str) -> Mapping[str, Any] | None:
    split = metrics.get("no_tool")
    value = split.get(mode) if isinstance(split, Mapping) else None
    return value if isinstance(value, Mapping) else None


_COUNTS = {share: (num, den) for share, num, den in NO_TOOL_SHARES}


def _cell(m: Mapping[str, Any], key: str) -> str:
    if key in _COUNTS:
        num, den = _COUNTS[key]
        return share_cell(m.get(key), int(m.get(num, 0)), int(m.get(den, 0)))
    return "–" if m.get(key) is None else fmt(m.get(key))


def _with_interval(m: Mapping[str, Any], key: str) -> str:
    """A share of the split as `eval run` prints it: "0.286 [0.082, 0.641]"."""
    num, den = _COUNTS[key]
    bounds = wilson(int(m[num]), int(m[den]))
    shown = f"{m[key]:.3f}"
    return shown if bounds is None else f"{shown} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def no_tool_table(rows: Sequence[tuple[str, Mapping[str, Any]]], first: str = "Model") -> str:
    """One row per (label, ``metrics.json``-like dict): per mode, refusal accuracy, wrong calls,
    turns to refusal and false refusals, with their counts; "–" where the run has no split."""
    modes = [m for m in MODES if any(_mode_split(metrics, m) is not None for _, metrics in rows)]
    headers = [first] + [f"{MODE_TITLE[mode]} {title}" for mode in modes for _, title in _COLUMNS]
    body = []
    for label, metrics in rows:
        cells = [label]
        for mode in modes:
            m = _mode_split(metrics, mode)
            cells += [_cell(m, key) if m is not None else "–" for key, _ in _COLUMNS]
        body.append(cells)
    return markdown_table(headers, body)


def no_tool_section(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The "No-tool split" part of ``report.md`` and ``comparison.md``; nothing when no run has it."""
    if not any(isinstance(metrics.get("no_tool"), Mapping) for _, metrics in rows):
        return []
    return ["## No-tool split (retrieval misses)", NO_TOOL_NOTE, no_tool_table(rows)]


def run_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The no-tool lines `eval run` prints, one per mode."""
    lines = []
    for mode in MODES:
        m = _mode_split(metrics, mode)
        if m is None:
            continue
        turns = m.get("turns_to_refusal")
        lines.append(
            f"no-tool {mode:8s} refusal acc {_with_interval(m, 'refusal_acc')}  wrong call "
            f"(When2Call's tool hallucination rate) {_with_interval(m, 'wrong_call')}  turns to refusal {'n/a' if turns is None else f'{turns:.2f}'}  "
            f"n={m['n']}  (positive split: false refusal {_with_interval(m, 'false_refusal')} "
            f"n={m['positive_n']})"
        )
    return lines


def split_summary(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Per run (a ``{label: metrics.json}`` report such as the demo's): the positive split's Acc
    and the no-tool split's refusal accuracy, wrong calls and turns to refusal, per mode, with the
    counts their intervals need (``positive_n``, ``refusals_n``, ``calls_n``)."""
    summary: dict[str, Any] = {}
    for label, metrics in runs.items():
        if not isinstance(metrics, Mapping):
            continue
        row: dict[str, Any] = {}
        for mode in MODES:
            positive = metrics.get(mode)
            split = _mode_split(metrics, mode)
            if not isinstance(positive, Mapping) and split is None:
                continue
            row[mode] = {
                "positive_Acc": positive.get("Acc") if isinstance(positive, Mapping) else None,
                **{k: (split or {}).get(k) for k in ("refusal_acc", "wrong_call", "turns_to_refusal", "n")},
                "positive_n": positive.get("n") if isinstance(positive, Mapping) else None,
                **{k: (split or {}).get(k) for k in ("refusals_n", "calls_n")},
            }
        summary[label] = row
    return summary


def render_split_summary(summary: Mapping[str, Any]) -> str:
    """`split_summary` as the lines the demo prints: each run's positive row beside its no-tool row,
    each share with its Wilson interval and n."""
    lines = [
        "run            mode     positive Acc [95% CI] n      no-tool refusal acc [95% CI] n  "
        "wrong call [95% CI]    turns to refusal"
    ]

    def num(x: float | None, spec: str = ".3f") -> str:
        return "n/a" if x is None else format(x, spec)

    def share(x: float | None, k: Any, n: Any) -> str:
        bounds = wilson(int(k), int(n)) if isinstance(k, int) and isinstance(n, int) else None
        if x is None or bounds is None:
            return num(x)
        return f"{x:.3f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"

    for label, row in summary.items():
        for mode, m in row.items():
            positive_n = m.get("positive_n")
            positive_k = (
                round(m["positive_Acc"] * positive_n)
                if m["positive_Acc"] is not None and positive_n
                else None
            )
            lines.append(
                f"{label:<14} {mode:<8} {share(m['positive_Acc'], positive_k, positive_n):<20} "
                f"n={positive_n if positive_n is not None else 'n/a':<4} "
                f"{share(m['refusal_acc'], m.get('refusals_n'), m.get('n')):<22} "
                f"n={m['n'] if m.get('n') is not None else 'n/a':<5} "
                f"{share(m['wrong_call'], m.get('calls_n'), m.get('n')):<22} {num(m['turns_to_refusal'], '.2f')}"
            )
    return "\n".join(lines)
