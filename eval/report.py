"""What an evaluation run leaves behind, and how runs are compared.

`write_run` fills a run folder with:

* ``transcripts.jsonl``: one `Transcript` per benchmark dialogue and mode (the raw material:
  ``python -m eval score transcripts.jsonl`` recomputes everything below from it with no model);
* ``metrics.json``::

      {"model": "<label>",
       "static":  {"Acc": ..., "FTR": ..., ..., "n": ...},      # present when static mode ran
       "dynamic": {...},                                        # present when dynamic mode ran
       "breakdowns": {"static": {"by_near_duplicate": {...}, "by_required_args": {...}}, "dynamic": ...},
       "ended": {"static": {"tool_call": 80, "t_max": 30, "reference_end": 9, "truncated": 0, "error": 0}, ...},
       ...extra}                                                # whatever the caller adds

  with the metric keys of `eval.metrics.METRIC_KEYS`;
* ``report.md``: the paper's tables for this run (Table 1: Acc/FTR/TAR static | dynamic; Tables
  3 and 5: TCP TCR PKP PKR Acc FTR TAR per mode; Tables 4 and 6: ConvRel TTR NGD3 plus NGD2 and
  NGD4), the malformed-output and truncated shares, how dialogues ended, and the breakdowns;
* ``tradeoff.png``: the Figure 3 trade-off plot (x = 1 − TAR, y = Acc, marker size and colour
  ∝ FTR), one point for the run;
* optionally a W&B run (`log_to_wandb`), offline into the run folder when there is no API key.

`compare_runs` puts several runs side by side (Table 1 layout, one row per run, and the
trade-off plot with one point per run), with the reference-policy runs (`eval.policies`: the
`reference` ceiling and the `name-overlap` and `random` floors) marked and set beside the models.
Numbers in the markdown are rounded to 2 decimals as in the paper; ``metrics.json`` keeps 6.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from data_gen.errors import InputError
from data_gen.runs import has_wandb_credentials
from eval.metrics import (
    compute_breakdowns,
    compute_metrics,
    first_call,
    score_dialogue,
    split_by_mode,
)
from eval.policies import POLICIES
from eval.transcripts import ENDINGS, MODES, Transcript, read_transcripts, write_transcripts

__all__ = [
    "compare_runs",
    "floor_policy",
    "log_to_wandb",
    "plot_tradeoff",
    "render_report",
    "score_transcripts",
    "summarise",
    "write_run",
]

RESERVED_KEYS = ("model", *MODES, "breakdowns", "ended")
DEFAULT_COMPARE_DIR = Path("outputs") / "compare"
DEFAULT_WANDB_PROJECT = "diaforge-eval"

_UP, _DOWN = "↑", "↓"
_POLICY_ROLE = {"reference": "ceiling", "name-overlap": "floor", "random": "floor"}
_MODE_TITLE = {"static": "Static", "dynamic": "Dynamic"}
_TOOL_COLUMNS = (
    ("TCP", _UP),
    ("TCR", _UP),
    ("PKP", _UP),
    ("PKR", _UP),
    ("Acc", _UP),
    ("FTR", _DOWN),
    ("TAR", _DOWN),
)
_CONV_COLUMNS = (("ConvRel", _UP), ("TTR", _UP), ("NGD3", _UP), ("NGD2", _UP), ("NGD4", _UP))
_SLICE_TITLES = {
    "near_duplicate": "near-duplicate among candidates",
    "no_near_duplicate": "no near-duplicate among candidates",
    "0": "0 required args",
    "1": "1 required arg",
    "2": "2 required args",
    "3+": "3+ required args",
}


# --------------------------------------------------------------------------------------------
# Metrics of a set of transcripts
# --------------------------------------------------------------------------------------------


def summarise(transcripts: Iterable[Transcript]) -> dict[str, Any]:
    """Per-mode metrics, breakdowns and endings: everything of ``metrics.json`` but the label and
    the caller's extras. `write_run` stores it and `score_transcripts` recomputes it."""
    groups = split_by_mode(transcripts)
    out: dict[str, Any] = {mode: compute_metrics(ts) for mode, ts in groups.items()}
    out["breakdowns"] = {mode: compute_breakdowns(ts) for mode, ts in groups.items()}
    out["ended"] = {
        mode: {ending: sum(1 for t in ts if t.ended == ending) for ending in ENDINGS}
        for mode, ts in groups.items()
    }
    return out


def score_transcripts(path: str | Path) -> dict[str, Any]:
    """Recompute, with no model, what `write_run` stored from a ``transcripts.jsonl`` (or a run
    folder holding one): ``{"static": ..., "dynamic": ..., "breakdowns": ..., "ended": ...}``.
    A bad file raises `InputError` naming the file, the line and the field."""
    p = Path(path)
    if p.is_dir():
        p = p / "transcripts.jsonl"
    return summarise(read_transcripts(p))


# --------------------------------------------------------------------------------------------
# Markdown tables
# --------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
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


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _mode_metrics(metrics: Mapping[str, Any], mode: str) -> Mapping[str, Any] | None:
    value = metrics.get(mode)
    return value if isinstance(value, Mapping) else None


def table1(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Table 1 layout: one row per model, static Acc/FTR/TAR | dynamic Acc/FTR/TAR ("–" for a
    mode that did not run). `rows` pairs a label with a ``metrics.json``-like dict."""
    headers = ["Model"] + [
        f"{_MODE_TITLE[mode]} {key} ({arrow})"
        for mode in MODES
        for key, arrow in (("Acc", _UP), ("FTR", _DOWN), ("TAR", _DOWN))
    ]
    body = []
    for label, metrics in rows:
        cells = [label]
        for mode in MODES:
            m = _mode_metrics(metrics, mode)
            cells += [_fmt(m.get(k)) if m is not None else "–" for k in ("Acc", "FTR", "TAR")]
        body.append(cells)
    return _table(headers, body)


def mode_table(
    rows: Sequence[tuple[str, Mapping[str, Any]]], mode: str, columns: Sequence[tuple[str, str]]
) -> str:
    """One mode's columns, one row per model (Tables 3-6 layout); rows lacking the mode are left out."""
    headers = ["Model"] + [f"{key} ({arrow})" for key, arrow in columns]
    body = []
    for label, metrics in rows:
        m = _mode_metrics(metrics, mode)
        if m is not None:
            body.append([label] + [_fmt(m.get(key)) for key, _ in columns])
    return _table(headers, body)


def _paper_tables(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Table 1, then Tables 3/5 and 4/6 for the modes present in any row."""
    modes = [m for m in MODES if any(_mode_metrics(metrics, m) is not None for _, metrics in rows)]
    parts = [
        "## Tool-call accuracy and failure modes (Table 1 layout)",
        table1(rows),
    ]
    numbers = {"static": ("3", "4"), "dynamic": ("5", "6")}
    for mode in modes:
        tool_no, conv_no = numbers[mode]
        parts += [
            f"## {_MODE_TITLE[mode]} evaluation: tool-calling metrics (Table {tool_no} layout)",
            mode_table(rows, mode, _TOOL_COLUMNS),
            f"## {_MODE_TITLE[mode]} evaluation: conversational metrics (Table {conv_no} layout)",
            mode_table(rows, mode, _CONV_COLUMNS),
        ]
        if any(
            (_mode_metrics(metrics, mode) or {"ConvRel": 0}).get("ConvRel") is None for _, metrics in rows
        ):
            parts.append('ConvRel "n/c": not computed (no rubric judge was run).')
    return parts


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def _budget_note(metrics: Mapping[str, Any]) -> str:
    budget = metrics.get("max_new_tokens")
    return f" (max_new_tokens {budget})" if isinstance(budget, int) else ""


def render_report(metrics: Mapping[str, Any], label: str) -> str:
    """``report.md`` for one run, from its ``metrics.json`` dict."""
    modes = [m for m in MODES if _mode_metrics(metrics, m) is not None]
    counts = ", ".join(f"{m} n = {metrics[m]['n']}" for m in modes)
    parts = [
        f"# Evaluation report: {label}",
        f"Dialogues scored: {counts}. {_UP} higher is better, {_DOWN} lower is better; values rounded "
        "to 2 decimals (`metrics.json` keeps 6). Metric definitions: DiaFORGE Appendix C.1 and "
        "`eval/metrics.py`.",
    ]
    parts += _paper_tables([(label, metrics)])

    parts.append("## Malformed and truncated output")
    lines = []
    for mode in modes:
        m = metrics[mode]
        lines.append(
            f"- {_MODE_TITLE[mode]}: {_percent(m['malformed'])} of assistant turns malformed; "
            f"{_percent(m['malformed_dialogues'])} of dialogues had at least one malformed turn; "
            f"TAR from malformed output {_fmt(m['TAR_malformed'])} of TAR {_fmt(m['TAR'])}; "
            f"{_percent(m.get('truncated', 0.0))} of dialogues ended on a reply cut off by the token budget"
            f"{_budget_note(metrics)}."
        )
    parts.append("\n".join(lines))

    ended = metrics.get("ended") or {}
    if ended:
        parts.append("## How the dialogues ended")
        parts.append(
            "\n".join(
                f"- {_MODE_TITLE.get(mode, mode)}: " + ", ".join(f"{k} {v}" for k, v in counts_.items())
                for mode, counts_ in ended.items()
            )
        )

    breakdowns = metrics.get("breakdowns") or {}
    if breakdowns:
        parts.append("## Breakdowns")
        columns = (("Acc", _UP), ("FTR", _DOWN), ("TAR", _DOWN), *_TOOL_COLUMNS[:4])
        for mode, groups in breakdowns.items():
            rows = []
            for group in ("by_near_duplicate", "by_required_args"):
                for key, m in (groups.get(group) or {}).items():
                    rows.append(
                        [_SLICE_TITLES.get(key, key), str(m["n"])] + [_fmt(m.get(c)) for c, _ in columns]
                    )
            parts.append(f"### {_MODE_TITLE.get(mode, mode)} evaluation")
            parts.append(_table(["Slice", "n"] + [f"{c} ({a})" for c, a in columns], rows))
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------------------------
# Trade-off plot (Figure 3)
# --------------------------------------------------------------------------------------------


def _plot_metrics(metrics: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
    """(mode, flat metrics) of a point: dynamic if present, else static; a flat dict as is."""
    if "Acc" in metrics:
        return None, metrics
    for mode in ("dynamic", "static"):
        m = _mode_metrics(metrics, mode)
        if m is not None:
            return mode, m
    raise ValueError("metrics hold neither 'static' nor 'dynamic' results")


def plot_tradeoff(
    points: Sequence[tuple[str, Mapping[str, Any]]],
    path: str | Path,
    *,
    floors: Collection[str] = (),
) -> Path:
    """Figure 3: x = 1 − TAR, y = Acc, marker size and colour ∝ FTR, one labelled point per
    (label, metrics) pair. Metrics are a ``metrics.json``-like dict (dynamic used if present, else
    static, marked "(static)" when the plot mixes modes) or one mode's flat dict. Points whose label
    is in `floors` (reference policies) are drawn as squares with a dashed edge, the models as
    circles. Uses the Agg canvas directly, so pyplot's global state is never touched."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    resolved = [(label, *_plot_metrics(metrics)) for label, metrics in points]
    modes = {mode for _, mode, _ in resolved}
    xs = [1.0 - float(m["TAR"]) for _, _, m in resolved]
    ys = [float(m["Acc"]) for _, _, m in resolved]
    ftr = [float(m["FTR"]) for _, _, m in resolved]

    fig = Figure(figsize=(7.0, 5.5), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    norm = Normalize(vmin=0.0, vmax=max([1.0, *ftr]))
    sizes = [60 + 900 * min(f, 2.0) for f in ftr]
    is_floor = [label in floors for label, _, _ in resolved]
    scatter = None
    for floor, marker, style, legend in (
        (False, "o", "solid", "model"),
        (True, "s", "dashed", "reference policy (no model)"),
    ):
        idx = [i for i, f in enumerate(is_floor) if f is floor]
        if not idx:
            continue
        drawn = ax.scatter(
            [xs[i] for i in idx],
            [ys[i] for i in idx],
            s=[sizes[i] for i in idx],
            c=[ftr[i] for i in idx],
            cmap="plasma",
            norm=norm,
            alpha=0.8,
            marker=marker,
            edgecolors="black",
            linestyles=style,
            label=legend,
        )
        scatter = scatter or drawn
    if any(is_floor):
        ax.legend(loc="lower left", fontsize=8, markerscale=0.5)
    seen: dict[tuple[float, float], int] = {}
    for (label, mode, _), x, y in zip(resolved, xs, ys, strict=True):
        text = f"{label} (static)" if mode == "static" and len(modes) > 1 else label
        stack = seen.get((round(x, 2), round(y, 2)), 0)  # labels of coinciding points are stacked
        seen[(round(x, 2), round(y, 2))] = stack + 1
        right = x > 0.7  # labels of points on the right go to their left, clear of the colour bar
        ax.annotate(
            text,
            (x, y),
            xytext=(-6 if right else 6, 6 + 11 * stack),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize=8,
        )
    fig.colorbar(scatter, ax=ax, label=f"FTR ({_DOWN})")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(f"1 − TAR ({_UP})")
    ax.set_ylabel(f"Acc ({_UP})")
    which = "dynamic" if modes == {"dynamic"} else "static" if modes == {"static"} else None
    ax.set_title(
        f"Tool-call trade-offs ({which} evaluation)"
        if which
        else "Tool-call trade-offs (dynamic evaluation where run, else static)",
        fontsize=11,
    )
    ax.grid(True, linestyle="--", alpha=0.4)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", bbox_inches="tight")
    return out


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_run(
    run_dir: str | Path,
    transcripts: Sequence[Transcript],
    *,
    model_label: str,
    extra: Mapping[str, Any] | None = None,
    wandb_cfg: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``transcripts.jsonl``, ``metrics.json``, ``report.md`` and ``tradeoff.png`` into
    `run_dir` and return the ``metrics.json`` dict.

    `extra` adds top-level keys to ``metrics.json`` (benchmark, checkpoint, settings, ...); it
    may not replace ``model``, ``static``, ``dynamic``, ``breakdowns`` or ``ended``. `wandb_cfg`,
    when given, logs the run to W&B with `log_to_wandb`: keys ``project`` (default
    ``diaforge-eval``), ``run_name`` (default the label), ``tags``, ``entity``; a key set to
    None takes its default.
    """
    if not transcripts:
        raise ValueError("write_run needs at least one transcript")
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(RESERVED_KEYS))
    if clash:
        raise ValueError(f"extra may not set reserved metrics.json keys: {', '.join(clash)}")
    out = Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_transcripts(out / "transcripts.jsonl", transcripts)
    metrics: dict[str, Any] = {"model": model_label, **summarise(transcripts), **extra}
    _write_text(out / "metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    _write_text(out / "report.md", render_report(metrics, model_label))
    plot_tradeoff([(model_label, metrics)], out / "tradeoff.png")
    if wandb_cfg is not None:
        given = {k: v for k, v in dict(wandb_cfg).items() if v is not None}
        cfg = {"project": DEFAULT_WANDB_PROJECT, "run_name": model_label, **given}
        log_to_wandb(out, metrics, transcripts, **cfg)
    return metrics


def _load_run(run_dir: str | Path) -> tuple[Path, dict[str, Any]]:
    p = Path(run_dir)
    path = p / "metrics.json" if p.is_dir() else p
    if not path.is_file():
        raise InputError("metrics.json not found (expected a run folder written by write_run)", path=path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg} at line {exc.lineno})", path=path) from None
    if not isinstance(data, dict) or not any(isinstance(data.get(m), dict) for m in MODES):
        raise InputError("holds neither 'static' nor 'dynamic' metrics", path=path)
    return path, data


def floor_policy(metrics: Mapping[str, Any]) -> str | None:
    """The reference policy a run was (``metrics.json``'s recorded ``backend``), or None for a model."""
    backend = metrics.get("backend")
    return backend if backend in POLICIES else None


def _display_label(label: str, policy: str | None) -> str:
    return f"{label} ({_POLICY_ROLE[policy]})" if policy else label


def _same_dialogues(a: Mapping[str, Any], b: Mapping[str, Any], mode: str) -> bool:
    return a.get("benchmark") == b.get("benchmark") and a[mode].get("n") == b[mode].get("n")


def floors_section(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The "Against the floors" part of ``comparison.md``: what each policy means, then, per model
    and mode, its Acc beside the name-overlap floor and the reference ceiling of the same mode."""
    floors = {floor_policy(m): (label, m) for label, m in rows if floor_policy(m)}
    models = [(label, m) for label, m in rows if not floor_policy(m)]
    if not floors:
        return []
    parts = [
        "## Against the floors",
        "Reference policies run through the same loops as the models, with no model: `reference` is "
        "the scripted teacher told the gold tool, taking every value from what the user said (the "
        "judge's ceiling); `name-overlap` calls the candidate whose name shares the most words with "
        "the user's turns, after asking for its missing required arguments; `random` calls a random "
        "candidate. A model's gain that does not clear `name-overlap` is not a gain.",
    ]
    lines = []
    for label, m in models:
        for mode in MODES:
            mine = _mode_metrics(m, mode)
            if mine is None:
                continue
            notes = []
            for policy in ("name-overlap", "reference"):
                if policy not in floors:
                    continue
                flabel, fm = floors[policy]
                theirs = _mode_metrics(fm, mode)
                if theirs is None:
                    continue
                delta = float(mine["Acc"]) - float(theirs["Acc"])
                note = f"{policy} {_fmt(theirs['Acc'])} ({delta:+.2f})"
                if not _same_dialogues(m, fm, mode):
                    note += " [not the same dialogues: benchmark or n differ]"
                notes.append(note)
            if not notes:
                continue
            verdict = ""
            if "name-overlap" in floors and _mode_metrics(floors["name-overlap"][1], mode) is not None:
                floor_acc = float(floors["name-overlap"][1][mode]["Acc"])
                verdict = (
                    "; clears the heuristic floor"
                    if float(mine["Acc"]) > floor_acc
                    else "; does not clear the heuristic floor"
                )
            lines.append(f"- {label}, {mode}: Acc {_fmt(mine['Acc'])} vs " + ", ".join(notes) + verdict + ".")
    if lines:
        parts.append("\n".join(lines))
    return parts


def output_table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Malformed and truncated output per run: the share of malformed assistant turns and the share
    of dialogues that ended on a reply cut off by the token budget, per mode, and the budget."""
    headers = ["Model", "max_new_tokens"] + [
        f"{_MODE_TITLE[mode]} {key} ({_DOWN})" for mode in MODES for key in ("malformed", "truncated")
    ]
    body = []
    for label, metrics in rows:
        budget = metrics.get("max_new_tokens")
        cells = [label, str(budget) if isinstance(budget, int) else "–"]
        for mode in MODES:
            m = _mode_metrics(metrics, mode)
            cells += [_fmt(m.get(k, 0.0)) if m is not None else "–" for k in ("malformed", "truncated")]
        body.append(cells)
    return _table(headers, body)


def compare_runs(
    run_dirs: Sequence[str | Path], out_dir: str | Path | None = None, *, json_path: str | Path | None = None
) -> str:
    """Compare runs: returns the Table 1 markdown (one row per run, labelled by its ``model``) and
    writes ``comparison.md`` (Table 1, then Tables 3-6 per mode, malformed and truncated output,
    the runs against the floors, then the run folders) and ``comparison.png`` (the trade-off plot,
    one point per run) into `out_dir`, by default ``outputs/compare`` under the current folder.

    Runs of a reference policy (``metrics.json``'s ``backend`` is one of `eval.policies.POLICIES`)
    are the floors: they are listed after the models, marked "(ceiling)" for `reference` and
    "(floor)" for the others in the markdown and the plot (where they are squares), and in the JSON
    report each run's metrics carry ``"floor": true|false`` and ``"policy"``. Two runs with the same
    label are told apart by their folder names. Printing is left to the caller."""
    if not run_dirs:
        raise ValueError("compare_runs needs at least one run folder")
    loaded = [_load_run(rd) for rd in run_dirs]
    labels = [str(data.get("model") or path.parent.name) for path, data in loaded]
    entries = []
    for (path, data), label in zip(loaded, labels, strict=True):
        if labels.count(label) > 1:
            label = f"{label} ({path.parent.name})"
        entries.append((label, path, data))
    # Models first, in the given order; then the policies, ceiling first.
    order = {p: i for i, p in enumerate(POLICIES)}
    entries.sort(key=lambda e: (floor_policy(e[2]) is not None, order.get(floor_policy(e[2]) or "", -1)))
    rows = [(label, data) for label, _, data in entries]
    shown = [(_display_label(label, floor_policy(data)), data) for label, data in rows]
    table = table1(shown)
    out = Path(out_dir) if out_dir is not None else DEFAULT_COMPARE_DIR
    out.mkdir(parents=True, exist_ok=True)
    parts = [f"# Comparison of {len(rows)} runs", *_paper_tables(shown)]
    parts += ["## Malformed and truncated output", output_table(shown)]
    parts += floors_section(rows)
    parts.append("## Runs")
    parts.append(
        "\n".join(f"- {label}: `{path}`" for (label, _), (_, path, _) in zip(shown, entries, strict=True))
    )
    _write_text(out / "comparison.md", "\n\n".join(parts) + "\n")
    plot_tradeoff(
        shown,
        out / "comparison.png",
        floors={label for label, data in shown if floor_policy(data)},
    )
    if json_path is not None:  # {label: metrics.json of that run}, e.g. the demo's report.json
        report = {
            label: {**data, "floor": floor_policy(data) is not None, "policy": floor_policy(data)}
            for label, data in rows
        }
        _write_text(Path(json_path), json.dumps(report, indent=2) + "\n")
    return table


# --------------------------------------------------------------------------------------------
# Weights & Biases
# --------------------------------------------------------------------------------------------


def wandb_mode() -> str | None:
    """The ``mode`` passed to `wandb.init`: None (wandb decides) when ``WANDB_MODE`` is set or
    there are credentials (``WANDB_API_KEY`` or a netrc entry), else ``"offline"``, so a run with
    no key lands in the run folder and ``wandb sync`` can upload it later."""
    if os.environ.get("WANDB_MODE", "").strip():
        return None
    return None if has_wandb_credentials() else "offline"


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"static": {"Acc": 0.5}}`` -> ``{"static/Acc": 0.5}``; None values are dropped."""
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_metrics(value, prefix=f"{name}/"))
        elif value is not None:
            flat[name] = value
    return flat


def _call_json(t: Transcript) -> str:
    calls = first_call(t)
    if not calls:
        return ""
    return json.dumps([{"name": c.name, "args": c.args} for c in calls], ensure_ascii=False, default=str)


def log_to_wandb(
    run_dir: str | Path,
    metrics: Mapping[str, Any],
    transcripts: Sequence[Transcript],
    *,
    project: str,
    run_name: str,
    tags: Iterable[str] | None = (),
    entity: str | None = None,
) -> Path:
    """Log one evaluation run to W&B: the flattened metrics (``static/Acc``, ...,
    ``breakdowns/dynamic/by_required_args/3+/Acc``) as the run summary and a ``transcripts`` table
    (id, mode, seed_tool, ended, acc, first call as JSON, dialogue as text). Runs offline into
    `run_dir` when there are no credentials (see `wandb_mode`); the run is always finished.
    Returns the run's folder (``run_dir/wandb/offline-run-...`` when offline)."""
    import wandb

    out = Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=project,
        entity=entity,
        name=run_name,
        tags=list(tags or ()),
        dir=str(out),
        mode=wandb_mode(),
        job_type="eval",
        config={"model": metrics.get("model"), "modes": [m for m in MODES if m in metrics]},
        reinit="create_new",
    )
    try:
        run.summary.update(flatten_metrics(metrics))
        table = wandb.Table(columns=["id", "mode", "seed_tool", "ended", "acc", "first_call", "dialogue"])
        for t in transcripts:
            table.add_data(
                t.id, t.mode, t.seed_tool or "", t.ended, score_dialogue(t).acc, _call_json(t), t.render()
            )
        run.log({"transcripts": table})
        run_folder = Path(run.dir).parent
    finally:
        run.finish()
    return run_folder
