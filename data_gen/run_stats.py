"""What a finished generation run reports about its corpus: `stats.json` (shapes, reject reasons,
naturalness, what every session cost), the paper's Figures 5-7 as plots, and the HF exports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.data_gen.agents import COMPLETION, SELECTION
from diaforge.data_gen.validators import broken_phrase_counts, naturalness_shares
from diaforge.llm.base import Usage
from diaforge.schema import Dialogue

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def usage_split(
    dialogues: Sequence[Dialogue], rejects: Sequence[dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """What the whole run cost (every session), from its records: the accepted dialogues, and the
    rejected attempts (failed requests included). `total` is their sum."""
    accepted, rejected = Usage(), Usage()
    for d in dialogues:
        accepted.add(Usage(**{k: v for k, v in (d.provenance.usage or {}).items() if k in _USAGE_KEYS}))
    for r in rejects:
        u = r.get("usage")
        if u is None and isinstance(r.get("dialogue"), dict):
            u = ((r["dialogue"].get("provenance") or {}).get("usage")) or {}
        rejected.add(Usage(**{k: v for k, v in (u or {}).items() if k in _USAGE_KEYS}))
    total = Usage()
    total.add(accepted)
    total.add(rejected)
    return {"total": total.as_dict(), "accepted": accepted.as_dict(), "rejected": rejected.as_dict()}


_USAGE_KEYS = set(Usage.__dataclass_fields__)


# --------------------------------------------------------------------------------------------
# Corpus statistics, plots and exports
# --------------------------------------------------------------------------------------------


def dialogue_shape(d: Dialogue) -> dict[str, Any]:
    """Per-dialogue counts used by the statistics and the plots."""
    assistant = [t for t in d.turns if t.role == "assistant"]
    selection = sum(1 for t in assistant if t.phase == SELECTION)
    completion = sum(1 for t in assistant if t.phase == COMPLETION and not t.tool_calls)
    gold = d.gold_tool
    return {
        "turns": len(assistant),
        "selection_turns": selection,
        "completion_turns": completion,
        "asks_disambiguation": any(t.action == "clarify" for t in assistant),
        "asks_arguments": any(t.action == "request" for t in assistant),
        "required_params": len(gold.required) if gold else 0,
        "params": len(gold.properties) if gold else 0,
    }


def reject_reason(record: dict[str, Any]) -> str:
    """`stage` or `stage:kind` for a reject record (the naturalness validator names its kind
    before a colon: `naturalness:tool_name_in_reply`)."""
    stage, reason = str(record.get("stage", "")), str(record.get("reason", ""))
    kind = reason.split(":", 1)[0] if ":" in reason else ""
    return f"{stage}:{kind}" if stage == "naturalness" and kind else stage


def corpus_stats(dialogues: Sequence[Dialogue], rejects: Sequence[dict], *, num_seeds: int) -> dict[str, Any]:
    shapes = [dialogue_shape(d) for d in dialogues]
    n = len(shapes)
    with_req = [s for s in shapes if s["required_params"] > 0]
    final_rejects = [r for r in rejects if r.get("final")]

    def hist(key: str) -> dict[str, int]:
        return {str(k): v for k, v in sorted(Counter(s[key] for s in shapes).items())}

    return {
        "num_seeds": num_seeds,
        "accepted": n,
        "rejected": len(final_rejects),
        "acceptance_rate": n / num_seeds if num_seeds else 0.0,
        "rejected_attempts": len(rejects),
        "reject_stages": dict(Counter(r["stage"] for r in rejects).most_common()),
        "final_reject_stages": dict(Counter(r["stage"] for r in final_rejects).most_common()),
        "reject_reasons": dict(Counter(reject_reason(r) for r in rejects).most_common()),
        "share_asking_disambiguation": sum(s["asks_disambiguation"] for s in shapes) / n if n else 0.0,
        "share_asking_arguments_when_required": (
            sum(s["asks_arguments"] for s in with_req) / len(with_req) if with_req else 0.0
        ),
        "mean_turns": sum(s["turns"] for s in shapes) / n if n else 0.0,
        "turns_per_dialogue": hist("turns"),
        "required_params_per_seed_tool": hist("required_params"),
        "selection_turns": hist("selection_turns"),
        "completion_turns": hist("completion_turns"),
        "distinct_seed_tools": len({d.seed_tool for d in dialogues}),
        "naturalness": naturalness_shares(dialogues),
        "broken_phrases": broken_phrase_counts(dialogues),
    }


def plot_corpus(dialogues: Sequence[Dialogue], folder: Path) -> list[Path]:
    """The paper's Figures 5-7: turns per dialogue, parameters per seed tool, and turns spent on
    tool selection vs argument completion."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    shapes = [dialogue_shape(d) for d in dialogues]
    paths = []

    def bar(ax: Axes, key: str, title: str, xlabel: str) -> None:
        """Every whole number from the least to the most (an empty one shows as 0, not as a gap
        closed up), each bar with its count; n in the title."""
        counts = Counter(s[key] for s in shapes)
        xs = list(range(min(counts), max(counts) + 1)) if counts else []
        drawn = ax.bar([str(x) for x in xs], [counts.get(x, 0) for x in xs], color="#4C72B0")
        ax.bar_label(drawn, fontsize=8, padding=2)
        ax.margins(y=0.12)  # room for the counts above the tallest bar
        ax.set_title(f"{title} (n = {len(shapes)})")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("dialogues")

    for key, title, xlabel, name in (
        ("turns", "Conversation length", "assistant turns per dialogue", "turns_per_dialogue.png"),
        ("required_params", "Parameters per seed tool", "required parameters", "params_per_seed_tool.png"),
    ):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        bar(ax, key, title, xlabel)
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        paths.append(folder / name)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    bar(axes[0], "selection_turns", "Tool disambiguation", "turns")
    bar(axes[1], "completion_turns", "Parameter specification", "turns")
    fig.tight_layout()
    fig.savefig(folder / "selection_vs_completion.png", dpi=110)
    plt.close(fig)
    paths.append(folder / "selection_vs_completion.png")
    return paths


def export_corpus(dialogues: Sequence[Dialogue], out: Path) -> None:
    """HF conversational JSONL (`messages` + `tools`), a `datasets` folder (save_to_disk) and the
    `prompt_format.json` they were rendered in: the paper's text format (`hf-prompt`), which every
    chat template renders; `python -m diaforge.data_gen export` writes other formats and checks them against
    a tokenizer's template."""
    from diaforge.data_gen.export import write_hf_export
    from diaforge.format import export_format

    write_hf_export(dialogues, out, export_format("hf-prompt"))
