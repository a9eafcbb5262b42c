"""The markdown of evaluation reports: the paper's tables (DiaFORGE Table 1, Tables 3-6) and a
run's ``report.md``.

Numbers are rounded to 2 decimals as in the paper (``metrics.json`` keeps 6); a metric that was
not computed shows "n/c", a mode that did not run "–". Every rate carries its 95 % interval in
brackets (`diaforge.eval.intervals`: Wilson for shares, a bootstrap for FTR and ConvRel), and its n: the
dialogues of the mode in an "n" column, or "(k/n)" after a share whose denominator counts
something else (calls, names, keys, values, turns). A run whose ``metrics.json`` predates the
intervals shows them for the shares of dialogues (recomputed from the rate and n) and none for the
others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diaforge.eval.anatomy import ANATOMY_SHARES
from diaforge.eval.passk import passk_section
from diaforge.eval.stats import share_interval, wilson
from diaforge.eval.transcripts import MODES

__all__ = [
    "ANATOMY_NOTE",
    "ANATOMY_TITLES",
    "CONV_COLUMNS",
    "DOWN",
    "INTERVAL_NOTE",
    "MODE_TITLE",
    "TOOL_COLUMNS",
    "UP",
    "anatomy_section",
    "anatomy_table",
    "counted_share",
    "fmt",
    "fmt_ci",
    "interval_of",
    "markdown_table",
    "metric_cell",
    "mode_metrics",
    "mode_table",
    "paper_tables",
    "render_report",
    "share_cell",
    "table1",
]

UP, DOWN = "↑", "↓"
MODE_TITLE = {"static": "Static", "dynamic": "Dynamic"}
TOOL_COLUMNS = (
    ("TCP", UP),
    ("TCR", UP),
    ("PKP", UP),
    ("PKR", UP),
    ("Acc", UP),
    ("FTR", DOWN),
    ("TAR", DOWN),
)
CONV_COLUMNS = (("ConvRel", UP), ("TTR", UP), ("NGD3", UP), ("NGD2", UP), ("NGD4", UP))
ANATOMY_TITLES = {
    "asks_first": "asks first",
    "right_tool": f"right tool ({UP})",
    "right_keys": f"right keys ({UP})",
    "right_values": f"right values ({UP})",
    "values_grounded": f"values grounded ({UP})",
    "values_invented": f"invented a value ({DOWN})",
}
ANATOMY_NOTE = (
    "The sub-skills behind Acc, each a share with its 95 % Wilson interval and (numerator/denominator): "
    "*asks first* of all dialogues "
    "(the first assistant turn is a reply with a question mark); *right tool* of the dialogues with a "
    "call (the first call turn calls the gold tool only); *right keys* of those with the right tool "
    "(exactly the gold key set); *right values* of those with the right keys (every value matches); "
    "*values grounded* of the argument values of the first call turn (said by the user before it); "
    '*invented a value* of the dialogues with a call (at least one value not grounded). "–": '
    'nothing to count. Definitions: docs/metrics.md, "The anatomy of a dialogue", and `eval/anatomy.py`.'
)
INTERVAL_NOTE = (
    "Brackets: the 95 % interval of a rate over its n (Wilson for shares; for FTR and ConvRel, means "
    "that are not shares, a percentile bootstrap of 2000 resamples, seed 0); n is the dialogues of the "
    "mode, or the counts in parentheses. TTR and NGD carry none (ratios over all tokens together). "
    'Definitions: docs/metrics.md, "Intervals and paired comparisons", and `eval/intervals.py`.'
)
_SLICE_TITLES = {
    "near_duplicate": "near-duplicate among candidates",
    "no_near_duplicate": "no near-duplicate among candidates",
    "0": "0 required args",
    "1": "1 required arg",
    "2": "2 required args",
    "3+": "3+ required args",
}


def fmt(value: Any) -> str:
    if value is None:
        return "n/c"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def fmt_ci(value: Any, entry: Mapping[str, Any] | None, digits: int = 2) -> str:
    """`value` (as `fmt` writes it, or with `digits` decimals) and its interval: "0.33 [0.20, 0.48]";
    the value alone when `entry` has no bounds."""
    shown = f"{value:.{digits}f}" if isinstance(value, float) else fmt(value)
    if not isinstance(entry, Mapping) or entry.get("lo") is None or entry.get("hi") is None:
        return shown
    return f"{shown} [{entry['lo']:.{digits}f}, {entry['hi']:.{digits}f}]"


def counted_share(value: float | None, num: int, den: int) -> str:
    """A share kept as counts, with its Wilson 95 % interval and its counts: "0.13 [0.10, 0.17]
    (41/327)"; "– (0/0)" over a zero denominator (nothing to count)."""
    if value is None or not den:
        return f"– ({num}/{den})"
    return f"{fmt_ci(float(value), share_interval(num, den))} ({num}/{den})"


_DIALOGUE_SHARES = ("Acc", "TAR", "truncated", "malformed_dialogues", "TAR_malformed")
"""Metrics whose denominator is the mode's dialogues: their interval follows from the rate and n."""
_COUNTED_SHARES = ("TCP", "TCR", "PKP", "PKR", "malformed")
"""Shares of something other than dialogues: their cells show "(k/n)"."""


def interval_of(metrics: Mapping[str, Any], mode: str, key: str) -> Mapping[str, Any] | None:
    """The interval entry of metric `key` of `mode` in a ``metrics.json``-like dict
    (``intervals[mode][key]``); for a dict without intervals, the Wilson interval of a share of
    dialogues recomputed from its rate and n, else None."""
    stored = ((metrics.get("intervals") or {}).get(mode) or {}).get(key)
    if isinstance(stored, Mapping):
        return stored
    m = mode_metrics(metrics, mode)
    if m is None or key not in _DIALOGUE_SHARES or not isinstance(m.get(key), float | int):
        return None
    n = m.get("n")
    if not isinstance(n, int) or n < 1:
        return None
    return share_interval(round(float(m[key]) * n), n)


def metric_cell(metrics: Mapping[str, Any], mode: str, key: str) -> str:
    """One metric of one mode with its interval, and "(k/n)" when its n is not the dialogues'."""
    m = mode_metrics(metrics, mode) or {}
    entry = interval_of(metrics, mode, key)
    text = fmt_ci(m.get(key), entry)
    if key in _COUNTED_SHARES and isinstance(entry, Mapping) and "k" in entry:
        text += f" ({entry['k']}/{entry['n']})"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def mode_metrics(metrics: Mapping[str, Any], mode: str) -> Mapping[str, Any] | None:
    value = metrics.get(mode)
    return value if isinstance(value, Mapping) else None


def table1(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Table 1 layout: one row per model, static n/Acc/FTR/TAR | dynamic n/Acc/FTR/TAR, each
    rate with its interval ("–" for a mode that did not run). `rows` pairs a label with a
    ``metrics.json``-like dict."""
    headers = ["Model"]
    for mode in MODES:
        headers += [f"{MODE_TITLE[mode]} n"] + [
            f"{MODE_TITLE[mode]} {key} ({arrow})"
            for key, arrow in (("Acc", UP), ("FTR", DOWN), ("TAR", DOWN))
        ]
    body = []
    for label, metrics in rows:
        cells = [label]
        for mode in MODES:
            m = mode_metrics(metrics, mode)
            if m is None:
                cells += ["–"] * 4
            else:
                cells += [fmt(m.get("n"))] + [metric_cell(metrics, mode, k) for k in ("Acc", "FTR", "TAR")]
        body.append(cells)
    return markdown_table(headers, body)


def mode_table(
    rows: Sequence[tuple[str, Mapping[str, Any]]], mode: str, columns: Sequence[tuple[str, str]]
) -> str:
    """One mode's columns, one row per model (Tables 3-6 layout), n first, each metric with its
    interval where it has one; rows lacking the mode are left out."""
    headers = ["Model", "n"] + [f"{key} ({arrow})" for key, arrow in columns]
    body = []
    for label, metrics in rows:
        m = mode_metrics(metrics, mode)
        if m is not None:
            body.append([label, fmt(m.get("n"))] + [metric_cell(metrics, mode, key) for key, _ in columns])
    return markdown_table(headers, body)


def paper_tables(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Table 1, then Tables 3/5 and 4/6 for the modes present in any row."""
    modes = [m for m in MODES if any(mode_metrics(metrics, m) is not None for _, metrics in rows)]
    parts = [
        "## Tool-call accuracy and failure modes (Table 1 layout)",
        table1(rows),
    ]
    numbers = {"static": ("3", "4"), "dynamic": ("5", "6")}
    for mode in modes:
        tool_no, conv_no = numbers[mode]
        parts += [
            f"## {MODE_TITLE[mode]} evaluation: tool-calling metrics (Table {tool_no} layout)",
            mode_table(rows, mode, TOOL_COLUMNS),
            f"## {MODE_TITLE[mode]} evaluation: conversational metrics (Table {conv_no} layout)",
            mode_table(rows, mode, CONV_COLUMNS),
        ]
        if any((mode_metrics(metrics, mode) or {"ConvRel": 0}).get("ConvRel") is None for _, metrics in rows):
            parts.append('ConvRel "n/c": not computed (no rubric judge was run).')
    return parts


def share_cell(value: float | None, k: int, n: int) -> str:
    """A share with its Wilson interval and its counts: "0.62 [0.31, 0.86] (5/8)"; "– (0/0)"
    with nothing to count."""
    bounds = wilson(k, n)
    if value is None or bounds is None:
        return f"– ({k}/{n})"
    return f"{fmt(value)} [{bounds[0]:.2f}, {bounds[1]:.2f}] ({k}/{n})"


def _anatomy_cell(anatomy: Mapping[str, Any], share: str, num: str, den: str) -> str:
    return share_cell(anatomy.get(share), int(anatomy.get(num, 0)), int(anatomy.get(den, 0)))


def anatomy_table(rows: Sequence[tuple[str, Mapping[str, Any] | None]], first: str = "Model") -> str:
    """One row per (label, `diaforge.eval.anatomy.compute_anatomy` dict): n, then each share with its
    Wilson interval, numerator and denominator ("0.36 [0.20, 0.55] (9/25)"); a row whose dict is
    None shows "–"."""
    headers = [first, "n"] + [ANATOMY_TITLES[share] for share, _, _ in ANATOMY_SHARES]
    body = []
    for label, anatomy in rows:
        if anatomy is None:
            body.append([label] + ["–"] * (len(headers) - 1))
        else:
            body.append(
                [label, str(anatomy.get("n", 0))] + [_anatomy_cell(anatomy, *k) for k in ANATOMY_SHARES]
            )
    return markdown_table(headers, body)


def anatomy_section(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The anatomy of several runs (``metrics.json``-like dicts): one table per mode that any run
    ran, one row per run that ran it ("–" for a run whose ``metrics.json`` has no anatomy)."""
    modes = [m for m in MODES if any(mode_metrics(metrics, m) is not None for _, metrics in rows)]
    if not modes:
        return []
    parts = ["## The anatomy of the dialogues", ANATOMY_NOTE]
    for mode in modes:
        table = [
            (label, (metrics.get("anatomy") or {}).get(mode))
            for label, metrics in rows
            if mode_metrics(metrics, mode) is not None
        ]
        parts += [f"### {MODE_TITLE[mode]} evaluation", anatomy_table(table)]
    return parts


def _percent(x: float, entry: Mapping[str, Any] | None = None) -> str:
    """x as a percentage, with its interval and counts when `entry` has them: "12.5% [4.3%, 31.0%] (2/16)"."""
    text = f"{100 * x:.1f}%"
    if isinstance(entry, Mapping) and entry.get("lo") is not None and entry.get("hi") is not None:
        text += f" [{100 * entry['lo']:.1f}%, {100 * entry['hi']:.1f}%]"
    if isinstance(entry, Mapping) and "k" in entry:
        text += f" ({entry['k']}/{entry['n']})"
    return text


def _budget_note(metrics: Mapping[str, Any]) -> str:
    budget = metrics.get("max_new_tokens")
    return f" (max_new_tokens {budget})" if isinstance(budget, int) else ""


def render_report(
    metrics: Mapping[str, Any], label: str, splits: Sequence[str] = (), decisions: Sequence[str] = ()
) -> str:
    """``report.md`` for one run, from its ``metrics.json`` dict; `splits` are the sections of
    other splits (the no-tool split's, `diaforge.eval.no_tool.no_tool_section`), placed after the paper's
    tables; `decisions` the decision and clarification sections (`diaforge.eval.decisions.decisions_section`,
    `diaforge.eval.clarification.clarification_section`), placed after the anatomy."""
    modes = [m for m in MODES if mode_metrics(metrics, m) is not None]
    counts = ", ".join(f"{m} n = {metrics[m]['n']}" for m in modes)
    parts = [
        f"# Evaluation report: {label}",
        f"Dialogues scored: {counts}. {UP} higher is better, {DOWN} lower is better; values rounded "
        "to 2 decimals (`metrics.json` keeps 6). Metric definitions: DiaFORGE Appendix C.1 and "
        "`eval/metrics.py`.",
        INTERVAL_NOTE,
    ]
    parts += paper_tables([(label, metrics)])
    parts += passk_section(metrics)
    parts += splits
    anatomy = metrics.get("anatomy") or {}
    if anatomy:
        parts += ["## The anatomy of the dialogues", ANATOMY_NOTE]
        parts.append(anatomy_table([(MODE_TITLE.get(m, m), a) for m, a in anatomy.items()], first="Mode"))
    parts += decisions

    parts.append("## Malformed and truncated output")
    lines = []
    for mode in modes:
        m = metrics[mode]

        def pct(key: str, m: Mapping[str, Any] = m, mode: str = mode) -> str:
            return _percent(m.get(key, 0.0), interval_of(metrics, mode, key))

        lines.append(
            f"- {MODE_TITLE[mode]}: {pct('malformed')} of assistant turns malformed; "
            f"{pct('malformed_dialogues')} of dialogues had at least one malformed turn; "
            f"TAR from malformed output {metric_cell(metrics, mode, 'TAR_malformed')} of TAR "
            f"{metric_cell(metrics, mode, 'TAR')}; "
            f"{pct('truncated')} of dialogues ended on a reply cut off by the token budget"
            f"{_budget_note(metrics)}."
        )
    parts.append("\n".join(lines))

    ended = metrics.get("ended") or {}
    if ended:
        parts.append("## How the dialogues ended")
        parts.append(
            "\n".join(
                f"- {MODE_TITLE.get(mode, mode)}: " + ", ".join(f"{k} {v}" for k, v in counts_.items())
                for mode, counts_ in ended.items()
            )
        )

    parts += _breakdown_section(metrics)
    return "\n\n".join(parts) + "\n"


def _slice_items(groups: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(group, slice, dict) of every slice of one mode's breakdowns, near-duplicate slices first."""
    return [
        (group, key, m)
        for group in ("by_near_duplicate", "by_required_args")
        for key, m in (groups.get(group) or {}).items()
    ]


def _slices(groups: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(title, dict) of every slice of one mode's breakdowns, near-duplicate slices first."""
    return [(_SLICE_TITLES.get(key, key), m) for _, key, m in _slice_items(groups)]


def _slice_row(
    mode: str, m: Mapping[str, Any], intervals: Mapping[str, Any], columns: Sequence[str]
) -> list[str]:
    one = {mode: m, "intervals": {mode: intervals}}
    return [str(m["n"])] + [metric_cell(one, mode, c) for c in columns]


def _breakdown_section(metrics: Mapping[str, Any]) -> list[str]:
    """The breakdowns of ``report.md``: per mode, the C.1 metrics per slice, then the anatomy per
    slice when ``metrics.json`` has it."""
    breakdowns = metrics.get("breakdowns") or {}
    if not breakdowns:
        return []
    parts = ["## Breakdowns"]
    columns = (("Acc", UP), ("FTR", DOWN), ("TAR", DOWN), *TOOL_COLUMNS[:4])
    anatomy = metrics.get("anatomy_breakdowns") or {}
    stored = (metrics.get("intervals") or {}).get("breakdowns") or {}
    for mode, groups in breakdowns.items():
        ivs = stored.get(mode) or {}
        rows = [
            [_SLICE_TITLES.get(key, key)]
            + _slice_row(mode, m, (ivs.get(group) or {}).get(key) or {}, [c for c, _ in columns])
            for group, key, m in _slice_items(groups)
        ]
        parts.append(f"### {MODE_TITLE.get(mode, mode)} evaluation")
        parts.append(markdown_table(["Slice", "n"] + [f"{c} ({a})" for c, a in columns], rows))
        if anatomy.get(mode):
            parts.append(f"Anatomy by slice ({MODE_TITLE.get(mode, mode).lower()}):")
            parts.append(anatomy_table(_slices(anatomy[mode]), first="Slice"))
    return parts
