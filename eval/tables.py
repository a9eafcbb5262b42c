"""The markdown of evaluation reports: the paper's tables (DiaFORGE Table 1, Tables 3-6) and a
run's ``report.md``.

Numbers are rounded to 2 decimals as in the paper (``metrics.json`` keeps 6); a metric that was
not computed shows "n/c", a mode that did not run "–".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval.transcripts import MODES

__all__ = [
    "CONV_COLUMNS",
    "DOWN",
    "MODE_TITLE",
    "TOOL_COLUMNS",
    "UP",
    "fmt",
    "markdown_table",
    "mode_metrics",
    "mode_table",
    "paper_tables",
    "render_report",
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
    """Table 1 layout: one row per model, static Acc/FTR/TAR | dynamic Acc/FTR/TAR ("–" for a
    mode that did not run). `rows` pairs a label with a ``metrics.json``-like dict."""
    headers = ["Model"] + [
        f"{MODE_TITLE[mode]} {key} ({arrow})"
        for mode in MODES
        for key, arrow in (("Acc", UP), ("FTR", DOWN), ("TAR", DOWN))
    ]
    body = []
    for label, metrics in rows:
        cells = [label]
        for mode in MODES:
            m = mode_metrics(metrics, mode)
            cells += [fmt(m.get(k)) if m is not None else "–" for k in ("Acc", "FTR", "TAR")]
        body.append(cells)
    return markdown_table(headers, body)


def mode_table(
    rows: Sequence[tuple[str, Mapping[str, Any]]], mode: str, columns: Sequence[tuple[str, str]]
) -> str:
    """One mode's columns, one row per model (Tables 3-6 layout); rows lacking the mode are left out."""
    headers = ["Model"] + [f"{key} ({arrow})" for key, arrow in columns]
    body = []
    for label, metrics in rows:
        m = mode_metrics(metrics, mode)
        if m is not None:
            body.append([label] + [fmt(m.get(key)) for key, _ in columns])
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


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def _budget_note(metrics: Mapping[str, Any]) -> str:
    budget = metrics.get("max_new_tokens")
    return f" (max_new_tokens {budget})" if isinstance(budget, int) else ""


def render_report(metrics: Mapping[str, Any], label: str) -> str:
    """``report.md`` for one run, from its ``metrics.json`` dict."""
    modes = [m for m in MODES if mode_metrics(metrics, m) is not None]
    counts = ", ".join(f"{m} n = {metrics[m]['n']}" for m in modes)
    parts = [
        f"# Evaluation report: {label}",
        f"Dialogues scored: {counts}. {UP} higher is better, {DOWN} lower is better; values rounded "
        "to 2 decimals (`metrics.json` keeps 6). Metric definitions: DiaFORGE Appendix C.1 and "
        "`eval/metrics.py`.",
    ]
    parts += paper_tables([(label, metrics)])

    parts.append("## Malformed and truncated output")
    lines = []
    for mode in modes:
        m = metrics[mode]
        lines.append(
            f"- {MODE_TITLE[mode]}: {_percent(m['malformed'])} of assistant turns malformed; "
            f"{_percent(m['malformed_dialogues'])} of dialogues had at least one malformed turn; "
            f"TAR from malformed output {fmt(m['TAR_malformed'])} of TAR {fmt(m['TAR'])}; "
            f"{_percent(m.get('truncated', 0.0))} of dialogues ended on a reply cut off by the token budget"
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

    breakdowns = metrics.get("breakdowns") or {}
    if breakdowns:
        parts.append("## Breakdowns")
        columns = (("Acc", UP), ("FTR", DOWN), ("TAR", DOWN), *TOOL_COLUMNS[:4])
        for mode, groups in breakdowns.items():
            rows = []
            for group in ("by_near_duplicate", "by_required_args"):
                for key, m in (groups.get(group) or {}).items():
                    rows.append(
                        [_SLICE_TITLES.get(key, key), str(m["n"])] + [fmt(m.get(c)) for c, _ in columns]
                    )
            parts.append(f"### {MODE_TITLE.get(mode, mode)} evaluation")
            parts.append(markdown_table(["Slice", "n"] + [f"{c} ({a})" for c, a in columns], rows))
    return "\n\n".join(parts) + "\n"
