"""What an evaluation run leaves behind.

`write_run` fills a run folder with (through `diaforge.eval.run_files.write_run_files`, as the other eval
commands do):

* ``transcripts.jsonl``: one `Transcript` per benchmark dialogue and mode (the raw material:
  ``python -m diaforge.eval score transcripts.jsonl`` recomputes everything below from it with no model);
* ``metrics.json``::

      {"model": "<label>",
       "static":  {"Acc": ..., "FTR": ..., ..., "n": ...},      # present when static mode ran
       "dynamic": {...},                                        # present when dynamic mode ran
       "breakdowns": {"static": {"by_near_duplicate": {...}, "by_required_args": {...}}, "dynamic": ...},
       "ended": {"static": {"tool_call": 80, "t_max": 30, "reference_end": 9, "truncated": 0, "error": 0}, ...},
       "anatomy": {"static": {"n": ..., "calls_n": ..., "right_tool": ..., "right_tool_n": ..., ...}, ...},
       "anatomy_breakdowns": {"static": {"by_near_duplicate": {...}, "by_required_args": {...}}, ...},
       "no_tool": {"static": {"refusal_acc": ..., "wrong_call": ..., ...}, ..., "ended": {...}},
                                                                # when the no-tool split ran
       "pass_k": {"dynamic": {"n": ..., "trials": 3, "pass^1": ..., "pass^2": ..., "pass^3": ...,
                              "wording_sensitive": ..., ...}},  # with --repeats k > 1 (diaforge.eval.passk)
       "intervals": {"static": {"Acc": {"k": .., "n": .., "lo": .., "hi": ..}, ...}, "dynamic": ...,
                     "breakdowns": ..., "anatomy": ..., "no_tool": ...},  # `diaforge.eval.intervals`
       "decisions": {"static": {"matrix": {...}, "agree": ..., "unsupported_calls": ..., ...}, ...},
       "clarification": {"static": {"option_recall": ..., "option_precision": ..., ...}, ...},
                                                                # null without tool specs
       ...extra}                                                # whatever the caller adds

  with the metric keys of `diaforge.eval.metrics.METRIC_KEYS`, computed over the positive split only; the
  no-tool split's transcripts (``split: "no_tool"``) are scored apart (`diaforge.eval.no_tool`). Every
  key but ``pass_k`` is computed on repeat 0 alone (`diaforge.eval.transcripts.first_trials`), so a run
  with ``--repeats`` keeps every number of a run without; ``pass_k`` reads every repeat;
  the when-to-call matrix and the calls the conversation does not support (`diaforge.eval.decisions`,
  both splits) and clarification quality (`diaforge.eval.clarification`) need the candidate tool
  specs and are null without them;
* ``tools.json``: those specs (`diaforge.eval.tool_specs`), when the caller gives them (`eval run` does),
  so that ``eval score`` recomputes the decisions with no benchmark;
* ``report.md``: the paper's tables for this run (Table 1: Acc/FTR/TAR static | dynamic; Tables
  3 and 5: TCP TCR PKP PKR Acc FTR TAR per mode; Tables 4 and 6: ConvRel TTR NGD3 plus NGD2 and
  NGD4), the anatomy of the dialogues (`diaforge.eval.anatomy`: asks first, right tool, right keys, right
  values, values grounded in the user's words, values invented, each with its counts), the
  decisions and clarification quality, the malformed-output and truncated shares, how dialogues
  ended, and the breakdowns (C.1 metrics and anatomy per slice);
* ``tradeoff.png``: the Figure 3 trade-off plot (x = 1 − TAR, y = Acc, marker size and colour
  ∝ FTR; `diaforge.eval.tradeoff_plot`), one point for the run;
* optionally a W&B run (`log_to_wandb`), offline into the run folder when there is no API key.

Comparing runs is `diaforge.eval.compare`; the markdown tables are `diaforge.eval.tables`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.errors import InputError
from diaforge.eval.anatomy import anatomy_breakdowns, compute_anatomy
from diaforge.eval.clarification import CLARIFICATION_SHARES, clarification_section, compute_clarification
from diaforge.eval.decisions import compute_decisions, decisions_section, replay_all
from diaforge.eval.intervals import interval_summary
from diaforge.eval.metrics import (
    compute_breakdowns,
    compute_metrics,
    first_call,
    score_dialogue,
    split_by_mode,
)
from diaforge.eval.no_tool import no_tool_section, summarise_no_tool
from diaforge.eval.passk import summarise_pass_k
from diaforge.eval.run_files import write_atomic, write_run_files
from diaforge.eval.stats import share_interval
from diaforge.eval.tables import render_report
from diaforge.eval.tool_specs import (
    TOOLS_FILE,
    ToolSpecs,
    read_tool_specs,
    specs_from_dialogues,
    write_tool_specs,
)
from diaforge.eval.tradeoff_plot import plot_tradeoff
from diaforge.eval.transcripts import MODES, POSITIVE_ENDINGS, Transcript, first_trials, read_transcripts
from diaforge.lineage import lineage_config

if TYPE_CHECKING:
    from diaforge.similarity import Encoder

__all__ = [
    "decisions_and_clarification",
    "eval_settings",
    "flatten_metrics",
    "log_folder_to_wandb",
    "log_to_wandb",
    "plot_tradeoff",
    "run_tool_specs",
    "score_transcripts",
    "summarise",
    "wandb_mode",
    "write_atomic",
    "write_run",
]

RESERVED_KEYS = (
    "model",
    *MODES,
    "breakdowns",
    "ended",
    "anatomy",
    "anatomy_breakdowns",
    "no_tool",
    "intervals",
    "pass_k",
    "decisions",
    "clarification",
)
DEFAULT_WANDB_PROJECT = "diaforge-eval"


# --------------------------------------------------------------------------------------------
# Metrics of a set of transcripts
# --------------------------------------------------------------------------------------------


def summarise(
    transcripts: Iterable[Transcript], tools: ToolSpecs | None = None, encoder: Encoder | None = None
) -> dict[str, Any]:
    """Per-mode metrics, breakdowns, endings and anatomy (`diaforge.eval.anatomy`) of the positive split,
    the no-tool split's metrics (`diaforge.eval.no_tool`) when it ran, the intervals of all their rates
    (`diaforge.eval.intervals`), and the decisions and clarification quality
    (`decisions_and_clarification`; None without `tools`): everything of ``metrics.json`` but the
    label and the caller's extras. `write_run` stores it and `score_transcripts` recomputes it.
    Everything is of repeat 0 (`first_trials`) but ``pass_k`` (`diaforge.eval.passk`), there only when a
    mode was repeated."""
    transcripts = list(transcripts)
    every_positive = [t for t in transcripts if t.split == "positive"]
    positive = first_trials(every_positive)
    no_tool = first_trials(t for t in transcripts if t.split == "no_tool")
    groups = split_by_mode(positive)
    out: dict[str, Any] = {mode: compute_metrics(ts) for mode, ts in groups.items()}
    out["breakdowns"] = {mode: compute_breakdowns(ts) for mode, ts in groups.items()}
    out["ended"] = {
        mode: {ending: sum(1 for t in ts if t.ended == ending) for ending in POSITIVE_ENDINGS}
        for mode, ts in groups.items()
    }
    out["anatomy"] = {mode: compute_anatomy(ts) for mode, ts in groups.items()}
    out["anatomy_breakdowns"] = {mode: anatomy_breakdowns(ts) for mode, ts in groups.items()}
    if no_tool:
        out["no_tool"] = summarise_no_tool(no_tool, positive)
    pass_k = summarise_pass_k(every_positive)
    if pass_k:
        out["pass_k"] = pass_k
    out["intervals"] = interval_summary(out, positive)  # every rate above with its 95 % interval
    out["decisions"], out["clarification"] = decisions_and_clarification(
        first_trials(transcripts), tools, encoder
    )
    out["intervals"].update(decision_intervals(out["decisions"], out["clarification"]))
    return out


def decision_intervals(
    decisions: Mapping[str, Any] | None, clarification: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``metrics.json`` -> ``intervals`` -> ``decisions`` and ``clarification``: the Wilson 95 %
    interval (`diaforge.eval.stats.share_interval`, ``{"k", "n", "lo", "hi"}``) of every share of the
    when-to-call matrix (agreement over all decision points and per split, the calls not supported
    by the conversation) and of clarification quality
    (`diaforge.eval.clarification.CLARIFICATION_SHARES`), per mode. The units are decision points,
    calls and questions, several to a dialogue, so like the C.1 ratios of sums these intervals are
    narrower than the dialogue-level ones (`diaforge.eval.intervals`)."""
    out: dict[str, Any] = {}
    if decisions:
        out["decisions"] = {
            mode: {
                "agree": share_interval(d["agree_n"], d["points_n"]),
                "unsupported_calls": share_interval(d["unsupported_calls_n"], d["calls_n"]),
                **{
                    f"agree_{split}": share_interval(d[split]["agree_n"], d[split]["points_n"])
                    for split in ("positive", "no_tool")
                    if isinstance(d.get(split), Mapping)
                },
            }
            for mode, d in decisions.items()
            if isinstance(d, Mapping)
        }
    if clarification:
        out["clarification"] = {
            mode: {share: share_interval(c[num], c[den]) for share, num, den in CLARIFICATION_SHARES}
            for mode, c in clarification.items()
            if isinstance(c, Mapping)
        }
    return out


def decisions_and_clarification(
    transcripts: Sequence[Transcript], tools: ToolSpecs | None, encoder: Encoder | None = None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``metrics.json`` -> ``decisions`` and ``clarification`` (`diaforge.eval.decisions`,
    `diaforge.eval.clarification`), one replay per mode shared by both; (None, None) without tool specs.
    Questions are read with `encoder`, by default the sentence encoder the user-proxy of `eval run`
    reads them with (`diaforge.similarity.get_encoder`)."""
    if tools is None:
        return None, None
    if encoder is None:
        from diaforge.similarity import get_encoder

        encoder = get_encoder()
    decisions: dict[str, Any] = {}
    clarification: dict[str, Any] = {}
    for mode, ts in split_by_mode(transcripts).items():
        points = replay_all(ts, tools, encoder)
        decisions[mode] = compute_decisions(ts, tools, encoder, points)
        clarification[mode] = compute_clarification(ts, points=points)
    return decisions, clarification


def score_transcripts(path: str | Path, bench: str | Path | None = None) -> dict[str, Any]:
    """Recompute, with no model, what `write_run` stored from a ``transcripts.jsonl`` (or a run
    folder holding one): ``{"static": ..., "dynamic": ..., "breakdowns": ..., "ended": ...,
    "anatomy": ..., "anatomy_breakdowns": ..., "decisions": ..., "clarification": ...}``, and
    ``"no_tool"`` when it holds that split. The decisions and clarification need the candidate
    tool specs: the ``tools.json`` beside the transcripts, else those of `bench` (and of its
    no-tool split beside it), else they are None (not computed). A bad file raises `InputError`
    naming the file, the line and the field."""
    p = Path(path)
    if p.is_dir():
        p = p / "transcripts.jsonl"
    transcripts = read_transcripts(p)
    try:
        return summarise(transcripts, tools=run_tool_specs(p.parent, bench))
    except InputError as exc:  # e.g. one trial twice (`diaforge.eval.passk.trial_outcomes`): name the file
        if exc.path is not None:
            raise
        raise InputError(exc.message, path=p, record=exc.record, field=exc.field) from None


def run_tool_specs(run_dir: str | Path, bench: str | Path | None = None) -> ToolSpecs | None:
    """The candidate tool specs of a run (`diaforge.eval.tool_specs`): its ``tools.json``, else the specs
    of `bench` and of the no-tool split beside it, else None."""
    found = Path(run_dir) / TOOLS_FILE
    if found.is_file():
        return read_tool_specs(found)
    if bench is None:
        return None
    from diaforge.eval.no_tool import load_no_tool_split, no_tool_bench_for
    from diaforge.schema import load_dialogues

    records = load_dialogues(bench)
    split = no_tool_bench_for(bench, "auto")
    if split is not None:
        records += load_no_tool_split(split)
    return specs_from_dialogues(records, source=str(bench))


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


def write_run(
    run_dir: str | Path,
    transcripts: Sequence[Transcript],
    *,
    model_label: str,
    extra: Mapping[str, Any] | None = None,
    wandb_cfg: Mapping[str, Any] | None = None,
    tools: ToolSpecs | None = None,
    encoder: Encoder | None = None,
) -> dict[str, Any]:
    """Write ``transcripts.jsonl``, ``metrics.json``, ``report.md`` and ``tradeoff.png`` into
    `run_dir` and return the ``metrics.json`` dict. `tools`, the candidate tool specs of the
    dialogues (`diaforge.eval.tool_specs`), go to ``tools.json`` and let ``metrics.json`` hold the
    decisions and clarification quality (read with `encoder`); without them those are None.

    `extra` adds top-level keys to ``metrics.json`` (benchmark, checkpoint, settings, ...); it
    may not replace ``model``, ``static``, ``dynamic``, ``breakdowns``, ``ended``, ``anatomy``,
    ``anatomy_breakdowns``, ``no_tool`` or ``intervals``. `wandb_cfg`,
    when given, logs the run to W&B with `log_to_wandb`: keys ``project`` (default
    ``diaforge-eval``), ``run_name`` (default the label), ``tags``, ``entity``; a key set to
    None takes its default.
    """
    if not any(t.split == "positive" for t in transcripts):
        raise ValueError("write_run needs at least one transcript of the positive split")
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(RESERVED_KEYS))
    if clash:
        raise ValueError(f"extra may not set reserved metrics.json keys: {', '.join(clash)}")
    metrics: dict[str, Any] = {"model": model_label, **summarise(transcripts, tools, encoder), **extra}
    out = write_run_files(
        run_dir,
        metrics=metrics,
        records=transcripts,
        records_name="transcripts",
        report=render_report(
            metrics,
            model_label,
            no_tool_section([(model_label, metrics)]),
            [*decisions_section(metrics), *clarification_section(metrics)],
        ),
    )
    if tools is not None:
        write_tool_specs(out / TOOLS_FILE, tools)
    plot_tradeoff([(model_label, metrics)], out / "tradeoff.png")
    if wandb_cfg is not None:
        given = {k: v for k, v in dict(wandb_cfg).items() if v is not None}
        cfg = {"project": DEFAULT_WANDB_PROJECT, "run_name": model_label, **given}
        log_to_wandb(out, metrics, transcripts, **cfg)
    return metrics


# --------------------------------------------------------------------------------------------
# Weights & Biases
# --------------------------------------------------------------------------------------------


def wandb_mode() -> str | None:
    """The ``mode`` passed to `wandb.init`: None (wandb decides) when ``WANDB_MODE`` is set or
    there are credentials (``WANDB_API_KEY`` or a netrc entry), else ``"offline"``, so a run with
    no key lands in the run folder and ``wandb sync`` can upload it later."""
    from diaforge.wandb_offline import has_wandb_credentials

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


def _wandb_run(
    run_dir: Path,
    *,
    project: str,
    run_name: str,
    tags: Iterable[str] | None,
    entity: str | None,
    job_type: str,
    config: Mapping[str, Any],
    group: str | None = None,
):
    import wandb

    run_dir.mkdir(parents=True, exist_ok=True)
    return wandb.init(
        project=project,
        entity=entity,
        name=run_name,
        tags=list(tags or ()),
        dir=str(run_dir),
        mode=wandb_mode(),
        job_type=job_type,
        config=dict(config),
        group=group,
        reinit="create_new",
    )


def use_model_artifact(run: Any, lineage: Mapping[str, Any] | None) -> str | None:
    """Mark the training run's ``model`` artifact as an input of `run` (W&B's lineage graph then
    shows eval <- model <- training run); returns the artifact used, or None. Online only: W&B
    keeps no artifact use in an offline run, which names the training run in its config instead
    (`diaforge.lineage.lineage_config`). An artifact that was never uploaded (its training ran
    offline and was not synced) is one warning, not a failed evaluation."""
    import wandb

    ref = ((lineage or {}).get("model_artifact") or {}).get("ref")
    if not ref or run.offline:
        return None
    try:
        run.use_artifact(ref, type="model")
    except (wandb.errors.Error, ValueError, TypeError) as exc:
        print(
            f"warning: W&B has no model artifact {ref} ({exc}); the eval run names its training run only",
            file=sys.stderr,
        )
        return None
    return ref


def _log_files(run: Any, kind: str, files: Iterable[Path], metadata: Mapping[str, Any] | None = None) -> None:
    """The files that exist among `files` as one artifact of type `kind`, named after the run."""
    import wandb

    artifact = wandb.Artifact(f"{kind}-{run.id}", type=kind, metadata=dict(metadata or {}))
    for path in files:
        if path.is_file():
            artifact.add_file(str(path), name=path.name)
    run.log_artifact(artifact)


_RUN_STATS = ("seconds", "wall_seconds")


def eval_settings(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The W&B config of an evaluation run: every setting ``metrics.json`` records (benchmark,
    backend, budget, user proxy, checkpoint, ...), with the prompt-format options also at the top
    level so runs group by them."""
    config: dict[str, Any] = {"model": metrics.get("model"), "modes": [m for m in MODES if m in metrics]}
    for key, value in metrics.items():
        if key not in RESERVED_KEYS and key not in _RUN_STATS:
            config[key] = value
    fmt = metrics.get("prompt_format")
    if isinstance(fmt, Mapping):
        for key in (
            "prompt_mode",
            "tool_style",
            "history_reasoning",
            "target_reasoning",
            "system_prompt_sha256",
        ):
            config[key] = fmt.get(key)
        config["prompt_format_source"] = fmt.get("source")
    return config


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
    """Log one evaluation run to W&B: its settings as the run config (`eval_settings`), the
    flattened metrics (``static/Acc``, ..., ``breakdowns/dynamic/by_required_args/3+/Acc``) as the
    run summary, a ``transcripts`` table (id, mode, seed_tool, ended, acc, first call as JSON,
    dialogue as text, repeat), and ``metrics.json``, ``report.md``, ``tradeoff.png`` and
    ``transcripts.jsonl`` as an ``eval-run`` artifact. A trained model's lineage (``metrics["training"]``,
    `diaforge.lineage`) names its training run and data fingerprint in the config, puts the eval
    run in the training run's group and, online, uses its model artifact (`use_model_artifact`).
    Runs offline into `run_dir` when there are no credentials (see `wandb_mode`); the run is
    always finished. Returns the run's folder
    (``run_dir/wandb/offline-run-...`` when offline)."""
    import wandb

    out = Path(run_dir)
    lineage = metrics.get("training")
    run = _wandb_run(
        out,
        project=project,
        run_name=run_name,
        tags=tags,
        entity=entity,
        job_type="eval",
        config={**eval_settings(metrics), **lineage_config(lineage)},
        group=lineage_config(lineage).get("training_group"),
    )
    try:
        use_model_artifact(run, lineage)
        run.summary.update(flatten_metrics(metrics))
        table = wandb.Table(
            columns=["id", "mode", "split", "seed_tool", "ended", "acc", "first_call", "dialogue", "repeat"]
        )
        for t in transcripts:
            table.add_data(
                t.id,
                t.mode,
                t.split,
                t.seed_tool or "",
                t.ended,
                score_dialogue(t).acc,
                _call_json(t),
                t.render(),
                t.repeat,
            )
        run.log({"transcripts": table})
        files = [out / n for n in ("metrics.json", "report.md", "tradeoff.png", "transcripts.jsonl")]
        _log_files(run, "eval-run", files, {"model": metrics.get("model")})
        run_folder = Path(run.dir).parent
    finally:
        run.finish()
    return run_folder


def log_folder_to_wandb(
    run_dir: str | Path,
    metrics: Mapping[str, Any],
    *,
    job_type: str,
    settings: Mapping[str, Any],
    project: str,
    run_name: str,
    tags: Iterable[str] | None = (),
    entity: str | None = None,
) -> Path:
    """Log the run folder of another eval command (compare, bfcl, next-action, turn-level):
    `settings` as the config, the flattened `metrics` as the summary, and every file of the folder
    as an artifact of type `job_type`. Offline without credentials, like `log_to_wandb`."""
    out = Path(run_dir)
    run = _wandb_run(
        out,
        project=project,
        run_name=run_name,
        tags=tags,
        entity=entity,
        job_type=job_type,
        config=settings,
    )
    try:
        run.summary.update(flatten_metrics(metrics))
        _log_files(run, job_type, sorted(p for p in out.iterdir() if p.is_file()))
        run_folder = Path(run.dir).parent
    finally:
        run.finish()
    return run_folder
