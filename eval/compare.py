"""Several evaluation runs side by side: ``python -m eval compare RUN ...``.

`compare_runs` puts several runs side by side (Table 1 layout, one row per run, and the
trade-off plot with one point per run), with the reference-policy runs (`eval.policies`: the
`reference` ceiling and the `name-overlap` and `random` floors) marked and set beside the models.
Numbers in the markdown are rounded to 2 decimals as in the paper; ``metrics.json`` keeps 6.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from eval.anatomy import anatomy_breakdowns, compute_anatomy
from eval.clarification import decision_quality_section
from eval.metrics import split_by_mode
from eval.no_tool import no_tool_section
from eval.policies import POLICIES
from eval.report import DEFAULT_WANDB_PROJECT, log_folder_to_wandb, plot_tradeoff, write_atomic
from eval.tables import (
    DOWN,
    MODE_TITLE,
    anatomy_section,
    fmt,
    markdown_table,
    mode_metrics,
    paper_tables,
    table1,
)
from eval.transcripts import MODES, read_transcripts

__all__ = ["DEFAULT_COMPARE_DIR", "compare_runs", "floor_policy", "floors_section", "output_table"]

DEFAULT_COMPARE_DIR = Path("outputs") / "compare"
_POLICY_ROLE = {"reference": "ceiling", "name-overlap": "floor", "random": "floor"}


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
    if "anatomy" not in data:
        data.update(_anatomy_from_transcripts(path.parent / "transcripts.jsonl"))
    return path, data


def _anatomy_from_transcripts(path: Path) -> dict[str, Any]:
    """``anatomy`` and ``anatomy_breakdowns`` of a run whose ``metrics.json`` predates them,
    recomputed from the ``transcripts.jsonl`` beside it; nothing when there is none or it cannot
    be read."""
    if not path.is_file():
        return {}
    try:
        groups = split_by_mode(t for t in read_transcripts(path) if t.split == "positive")
    except InputError:  # the metrics are still worth comparing without their anatomy
        return {}
    return {
        "anatomy": {mode: compute_anatomy(ts) for mode, ts in groups.items()},
        "anatomy_breakdowns": {mode: anatomy_breakdowns(ts) for mode, ts in groups.items()},
    }


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
            mine = mode_metrics(m, mode)
            if mine is None:
                continue
            notes = []
            for policy in ("name-overlap", "reference"):
                if policy not in floors:
                    continue
                flabel, fm = floors[policy]
                theirs = mode_metrics(fm, mode)
                if theirs is None:
                    continue
                delta = float(mine["Acc"]) - float(theirs["Acc"])
                note = f"{policy} {fmt(theirs['Acc'])} ({delta:+.2f})"
                if not _same_dialogues(m, fm, mode):
                    note += " [not the same dialogues: benchmark or n differ]"
                notes.append(note)
            if not notes:
                continue
            verdict = ""
            if "name-overlap" in floors and mode_metrics(floors["name-overlap"][1], mode) is not None:
                floor_acc = float(floors["name-overlap"][1][mode]["Acc"])
                verdict = (
                    "; clears the heuristic floor"
                    if float(mine["Acc"]) > floor_acc
                    else "; does not clear the heuristic floor"
                )
            lines.append(f"- {label}, {mode}: Acc {fmt(mine['Acc'])} vs " + ", ".join(notes) + verdict + ".")
    if lines:
        parts.append("\n".join(lines))
    return parts


def output_table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Malformed and truncated output per run: the share of malformed assistant turns and the share
    of dialogues that ended on a reply cut off by the token budget, per mode, and the budget."""
    headers = ["Model", "max_new_tokens"] + [
        f"{MODE_TITLE[mode]} {key} ({DOWN})" for mode in MODES for key in ("malformed", "truncated")
    ]
    body = []
    for label, metrics in rows:
        budget = metrics.get("max_new_tokens")
        cells = [label, str(budget) if isinstance(budget, int) else "–"]
        for mode in MODES:
            m = mode_metrics(metrics, mode)
            cells += [fmt(m.get(k, 0.0)) if m is not None else "–" for k in ("malformed", "truncated")]
        body.append(cells)
    return markdown_table(headers, body)


def _comparison_md(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    shown: Sequence[tuple[str, Mapping[str, Any]]],
    paths: Sequence[Path],
) -> str:
    """``comparison.md``: the paper's tables, the no-tool split, the anatomy, the decisions and
    clarification, malformed and truncated output, the floors, and the run folders."""
    parts = [f"# Comparison of {len(rows)} runs", *paper_tables(shown)]
    parts += no_tool_section(shown)
    parts += anatomy_section(shown)
    parts += decision_quality_section(shown)
    parts += ["## Malformed and truncated output", output_table(shown)]
    parts += floors_section(rows)
    parts.append("## Runs")
    parts.append("\n".join(f"- {label}: `{path}`" for (label, _), path in zip(shown, paths, strict=True)))
    return "\n\n".join(parts) + "\n"


def compare_runs(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    json_path: str | Path | None = None,
    wandb_cfg: Mapping[str, Any] | None = None,
) -> str:
    """Compare runs: returns the Table 1 markdown (one row per run, labelled by its ``model``),
    followed by the no-tool split's table when a run has that split (`eval.no_tool`), and
    writes ``comparison.md`` (Table 1, then Tables 3-6 per mode, the no-tool split of the runs that
    ran it (`eval.no_tool`), the anatomy of the dialogues per mode (`eval.anatomy`), malformed and
    truncated output, the runs against the floors, then the
    run folders) and ``comparison.png`` (the trade-off plot,
    one point per run) into `out_dir`, by default ``outputs/compare`` under the current folder.

    Runs of a reference policy (``metrics.json``'s ``backend`` is one of `eval.policies.POLICIES`)
    are the floors: they are listed after the models, marked "(ceiling)" for `reference` and
    "(floor)" for the others in the markdown and the plot (where they are squares), and in the JSON
    report each run's metrics carry ``"floor": true|false`` and ``"policy"``, and its anatomy as
    ``report[label]["anatomy"][mode]`` (recomputed from the run's ``transcripts.jsonl`` when its
    ``metrics.json`` predates the anatomy; absent when neither has it). Two runs with the same
    label are told apart by their folder names. `wandb_cfg` (as in `write_run`) logs the comparison
    to W&B: the runs and their prompt formats as config, every run's metrics as the summary, the
    written files as an artifact. Printing is left to the caller."""
    if not run_dirs:
        raise ValueError("compare_runs needs at least one run folder")
    loaded = [_load_run(rd) for rd in run_dirs]
    first: dict[Path, str] = {}
    for given, (path, _) in zip(run_dirs, loaded, strict=True):
        key = path.resolve()
        if key in first:
            raise InputError(
                f"the same run is given twice (also as {first[key]}); list each run once",
                path=given,
            )
        first[key] = str(given)
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
    no_tool = no_tool_section(shown)
    if no_tool:
        table += "\n\nNo-tool split (retrieval misses):\n\n" + no_tool[-1]
    out = Path(out_dir) if out_dir is not None else DEFAULT_COMPARE_DIR
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "comparison.md", _comparison_md(rows, shown, [path for _, path, _ in entries]))
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
        write_atomic(Path(json_path), json.dumps(report, indent=2) + "\n")
    if wandb_cfg is not None:
        given = {k: v for k, v in dict(wandb_cfg).items() if v is not None}
        cfg = {"project": DEFAULT_WANDB_PROJECT, "run_name": f"compare: {', '.join(labels)}", **given}
        settings = {
            "runs": {label: str(path.parent) for label, path, _ in entries},
            "prompt_formats": {label: data.get("prompt_format") for label, _, data in entries},
        }
        log_folder_to_wandb(
            out, {label: data for label, data in rows}, job_type="compare", settings=settings, **cfg
        )
    return table
