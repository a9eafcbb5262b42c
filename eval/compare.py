"""Several evaluation runs side by side: ``python -m diaforge.eval compare RUN ...``.

`compare_runs` puts several runs side by side (Table 1 layout, one row per run, and the
trade-off plot with one point per run), with the reference-policy runs (`diaforge.eval.policies`: the
`reference` ceiling and the `name-overlap` and `random` floors) marked and set beside the models.
Numbers in the markdown are rounded to 2 decimals as in the paper; ``metrics.json`` keeps 6.
Every rate carries its 95 % interval (`diaforge.eval.intervals`).

Paired differences: every two runs whose ``transcripts.jsonl`` share dialogues are compared
dialogue by dialogue on Acc (`diaforge.eval.intervals.paired_by_mode`, `diaforge.eval.stats.paired_difference`):
the difference A − B with Newcombe's 95 % interval, the dialogues only A or only B got right, the
exact McNemar p-value, and the verdict of the one rule (`diaforge.eval.stats.verdict`: shown,
borderline or not shown; docs/metrics.md, "The verdict rule"). A and B: of two models, the later
given minus the earlier (list the baseline first); otherwise the run listed first (a model before a
policy, the ceiling before the floors) minus the other, so a model is always measured against each
floor. In the JSON report the pair is ``report[A]["paired"][B][mode]``
(`eval.stats.PairedDifference.as_dict`). The "Against the floors" lines take their words from the
same verdict: a model clears the heuristic floor only where its paired difference with
`name-overlap` is shown and positive.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.anatomy import anatomy_breakdowns, compute_anatomy
from diaforge.eval.clarification import decision_quality_section
from diaforge.eval.decisions import read_legacy_keys
from diaforge.eval.intervals import dialogue_outcomes, interval_summary, paired_by_mode
from diaforge.eval.metrics import split_by_mode
from diaforge.eval.no_tool import no_tool_section
from diaforge.eval.policies import POLICIES
from diaforge.eval.report import DEFAULT_WANDB_PROJECT, log_folder_to_wandb, plot_tradeoff, write_atomic
from diaforge.eval.stats import SHOWN, PairedDifference, verdict_sentence
from diaforge.eval.tables import (
    DOWN,
    INTERVAL_NOTE,
    MODE_TITLE,
    anatomy_section,
    fmt,
    markdown_table,
    metric_cell,
    mode_metrics,
    paper_tables,
    table1,
)
from diaforge.eval.transcripts import MODES, Transcript, first_trials, read_transcripts

__all__ = [
    "DEFAULT_COMPARE_DIR",
    "compare_runs",
    "floor_policy",
    "floor_verdict",
    "floors_section",
    "output_table",
    "paired_pairs",
    "paired_section",
]

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
    read_legacy_keys(data)  # a run scored before the per-call share was renamed
    if "anatomy" not in data or "intervals" not in data:
        positive = _positive_transcripts(path.parent / "transcripts.jsonl")
        if positive is not None:
            if "anatomy" not in data:
                data.update(_anatomy_of(positive))
            if "intervals" not in data:
                data["intervals"] = interval_summary(data, positive)
    return path, data


def _positive_transcripts(path: Path) -> list[Transcript] | None:
    """The positive split's transcripts of a run's ``transcripts.jsonl``, first trials only (repeat
    0, `first_trials`: what its metrics are of); None when there is none or it cannot be read (the
    metrics are still worth comparing without what they give)."""
    if not path.is_file():
        return None
    try:
        return first_trials(t for t in read_transcripts(path) if t.split == "positive")
    except InputError:
        return None


def _anatomy_of(positive: list[Transcript]) -> dict[str, Any]:
    """``anatomy`` and ``anatomy_breakdowns`` of a run whose ``metrics.json`` predates them,
    recomputed from its transcripts."""
    groups = split_by_mode(positive)
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


def floor_verdict(diff: PairedDifference | None) -> str:
    """The words of an "Against the floors" line on a model against `name-overlap`, from the
    verdict rule (`diaforge.eval.stats.verdict`) on their paired difference: it clears the heuristic
    floor only when the difference is shown and positive. `diff` None: the runs were not paired (no
    transcripts, or other benchmarks), so nothing is shown."""
    if diff is None:
        return "not paired dialogue by dialogue, so not shown to clear the heuristic floor"
    said = f"paired over {diff.n} dialogues, {verdict_sentence(diff)}"
    if diff.verdict != SHOWN:
        return f"{said}; not shown to clear the heuristic floor"
    return f"{said}; {'clears' if diff.diff > 0 else 'is below'} the heuristic floor"


def floors_section(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    paired: Sequence[tuple[int, int, Mapping[str, PairedDifference]]] = (),
) -> list[str]:
    """The "Against the floors" part of ``comparison.md``: what each policy means, then, per model
    and mode, its Acc beside the name-overlap floor and the reference ceiling of the same mode, and
    the verdict on its paired difference with the name-overlap floor (`floor_verdict`; `paired` as
    `compare_runs` computed it, indices into `rows`)."""
    floors = {floor_policy(m): (label, m) for label, m in rows if floor_policy(m)}
    index = {label: i for i, (label, _) in enumerate(rows)}
    by_pair = {(a, b): by_mode for a, b, by_mode in paired}
    models = [(label, m) for label, m in rows if not floor_policy(m)]
    if not floors:
        return []
    parts = [
        "## Against the floors",
        "Reference policies run through the same loops as the models, with no model: `reference` is "
        "the scripted teacher told the gold tool, taking every value from what the user said (the "
        "judge's ceiling); `name-overlap` calls the candidate whose name shares the most words with "
        "the user's turns, after asking for its missing required arguments; `random` calls a random "
        "candidate. A model's gain that does not clear `name-overlap` is not a gain: it clears it "
        "only where their paired difference in Acc is *shown* by the verdict rule (docs/metrics.md, "
        '"The verdict rule"; borderline and not shown differences print both figures).',
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
                pair = by_pair.get((index[label], index[floors["name-overlap"][0]]), {})
                verdict = "; " + floor_verdict(pair.get(mode))
            lines.append(f"- {label}, {mode}: Acc {fmt(mine['Acc'])} vs " + ", ".join(notes) + verdict + ".")
    if lines:
        parts.append("\n".join(lines))
    return parts


def output_table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Malformed and truncated output per run: the share of malformed assistant turns (with its
    interval and counts) and the share of dialogues that ended on a reply cut off by the token
    budget (with its interval), per mode, and the budget."""
    headers = ["Model", "max_new_tokens"] + [
        f"{MODE_TITLE[mode]} {key} ({DOWN})" for mode in MODES for key in ("malformed", "truncated")
    ]
    body = []
    for label, metrics in rows:
        budget = metrics.get("max_new_tokens")
        cells = [label, str(budget) if isinstance(budget, int) else "–"]
        for mode in MODES:
            m = mode_metrics(metrics, mode)
            cells += [
                metric_cell(metrics, mode, k) if m is not None else "–" for k in ("malformed", "truncated")
            ]
        body.append(cells)
    return markdown_table(headers, body)


def paired_pairs(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[int, int]]:
    """(A, B) indices into `rows` (in `compare_runs`' order: models, then policies) of every pair
    compared dialogue by dialogue: of two models the later minus the earlier, otherwise the
    earlier minus the later (a model minus a policy, the ceiling minus a floor)."""
    pairs = []
    for j in range(len(rows)):
        for i in range(j):
            both_models = not floor_policy(rows[i][1]) and not floor_policy(rows[j][1])
            pairs.append((j, i) if both_models else (i, j))
    return pairs


def _paired_cell(d: PairedDifference) -> list[str]:
    unpaired = d.unpaired_a + d.unpaired_b
    return [
        str(d.n),
        f"{d.rate_a:.2f}",
        f"{d.rate_b:.2f}",
        f"{d.diff:+.2f} [{d.lo:+.2f}, {d.hi:+.2f}]",
        f"{d.wins} / {d.losses}",
        f"{d.p_value:.3g}",
        d.verdict,
        str(unpaired),
    ]


def paired_section(
    shown: Sequence[tuple[str, Mapping[str, Any]]],
    paired: Sequence[tuple[int, int, Mapping[str, PairedDifference]]],
    missing: Sequence[str] = (),
) -> list[str]:
    """The "Paired differences" part of ``comparison.md`` (and of what ``eval compare`` prints):
    one row per pair of runs and mode with dialogues in common; `missing` names the runs that have
    no ``transcripts.jsonl`` to pair."""
    if not paired and not missing:
        return []
    parts = [
        "## Paired differences (Acc, dialogue by dialogue)",
        "Two runs on the same dialogues, compared dialogue by dialogue: A − B is the difference of "
        "their Acc over the dialogues both ran (n), with Newcombe's 95 % interval for paired shares; "
        "*A only / B only*: the dialogues only A (only B) got right; *p*: the exact McNemar test on "
        'those; *verdict*: shown, borderline or not shown, by the rule of docs/metrics.md ("The '
        'verdict rule": the interval and the test together). Dialogues in one run only are left out '
        "(*unpaired*), and so are runs of two different benchmarks. Definitions: docs/metrics.md, "
        '"Intervals and paired comparisons", and `eval/stats.py`.',
    ]
    rows = []
    for a, b, by_mode in paired:
        for mode, d in by_mode.items():
            rows.append([f"{shown[a][0]} − {shown[b][0]}", mode, *_paired_cell(d)])
    if rows:
        headers = ["A − B", "mode", "n", "A Acc", "B Acc", "A − B [95% CI]", "A only / B only", "p"]
        parts.append(markdown_table([*headers, "verdict", "unpaired"], rows))
    else:
        parts.append("No two runs share a dialogue.")
    if missing:
        parts.append(
            "Not paired (no readable `transcripts.jsonl` beside `metrics.json`): " + ", ".join(missing) + "."
        )
    return parts


def _other_benchmarks(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Both runs name their benchmark and the names differ: their dialogue ids are not the same
    dialogues, so they are not paired."""
    return bool(a.get("benchmark")) and bool(b.get("benchmark")) and a["benchmark"] != b["benchmark"]


def _paired(
    entries: Sequence[tuple[str, Path, Mapping[str, Any]]],
) -> tuple[list[tuple[int, int, dict[str, PairedDifference]]], list[int]]:
    """Every pair of `paired_pairs` whose runs share dialogues (of the same benchmark, where both
    record one), and the runs without transcripts."""
    outcomes = [_positive_transcripts(path.parent / "transcripts.jsonl") for _, path, _ in entries]
    keyed = [None if ts is None else dialogue_outcomes(ts) for ts in outcomes]
    paired = []
    for a, b in paired_pairs([(label, data) for label, _, data in entries]):
        if keyed[a] is None or keyed[b] is None or _other_benchmarks(entries[a][2], entries[b][2]):
            continue
        by_mode = paired_by_mode(keyed[a], keyed[b])
        if by_mode:
            paired.append((a, b, by_mode))
    return paired, [i for i, k in enumerate(keyed) if k is None]


def _json_report(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    paired: Sequence[tuple[int, int, Mapping[str, PairedDifference]]],
) -> dict[str, Any]:
    """The ``--json`` report: each run's ``metrics.json`` with ``floor`` and ``policy``, and, for
    run A of a pair, ``paired[B][mode]``."""
    report = {
        label: {**data, "floor": floor_policy(data) is not None, "policy": floor_policy(data)}
        for label, data in rows
    }
    for a, b, by_mode in paired:
        report[rows[a][0]].setdefault("paired", {})[rows[b][0]] = {
            mode: d.as_dict() for mode, d in by_mode.items()
        }
    return report


def _comparison_md(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    shown: Sequence[tuple[str, Mapping[str, Any]]],
    paths: Sequence[Path],
    paired: Sequence[str] = (),
    pairs: Sequence[tuple[int, int, Mapping[str, PairedDifference]]] = (),
) -> str:
    """``comparison.md``: the paper's tables, the no-tool split, the anatomy, the decisions and
    clarification, malformed and truncated output, the floors, the paired differences, and the run
    folders."""
    parts = [f"# Comparison of {len(rows)} runs", INTERVAL_NOTE, *paper_tables(shown)]
    parts += no_tool_section(shown)
    parts += anatomy_section(shown)
    parts += decision_quality_section(shown)
    parts += ["## Malformed and truncated output", output_table(shown)]
    parts += floors_section(rows, pairs)
    parts += paired
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
    followed by the no-tool split's table when a run has that split (`diaforge.eval.no_tool`) and the
    paired differences of the runs that share dialogues (module docstring), and
    writes ``comparison.md`` (Table 1, then Tables 3-6 per mode, the no-tool split of the runs that
    ran it (`diaforge.eval.no_tool`), the anatomy of the dialogues per mode (`diaforge.eval.anatomy`), malformed and
    truncated output, the runs against the floors, the paired differences, then the
    run folders) and ``comparison.png`` (the trade-off plot,
    one point per run) into `out_dir`, by default ``outputs/compare`` under the current folder.

    Runs of a reference policy (``metrics.json``'s ``backend`` is one of `diaforge.eval.policies.POLICIES`)
    are the floors: they are listed after the models, marked "(ceiling)" for `reference` and
    "(floor)" for the others in the markdown and the plot (where they are squares), and in the JSON
    report each run's metrics carry ``"floor": true|false`` and ``"policy"``, and its anatomy as
    ``report[label]["anatomy"][mode]`` (recomputed from the run's ``transcripts.jsonl`` when its
    ``metrics.json`` predates the anatomy; absent when neither has it), its intervals (likewise),
    and, for a run A of a pair, ``report[A]["paired"][B][mode]``. Two runs with the same
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
    paired, unpaired = _paired(entries)
    pairs_md = paired_section(shown, paired, [shown[i][0] for i in unpaired])
    if pairs_md:
        table += "\n\nPaired differences (Acc, dialogue by dialogue):\n\n" + "\n\n".join(pairs_md[2:])
    out = Path(out_dir) if out_dir is not None else DEFAULT_COMPARE_DIR
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(
        out / "comparison.md", _comparison_md(rows, shown, [path for _, path, _ in entries], pairs_md, paired)
    )
    plot_tradeoff(
        shown,
        out / "comparison.png",
        floors={label for label, data in shown if floor_policy(data)},
    )
    if json_path is not None:  # {label: metrics.json of that run}, e.g. the demo's report.json
        write_atomic(Path(json_path), json.dumps(_json_report(rows, paired), indent=2) + "\n")
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
