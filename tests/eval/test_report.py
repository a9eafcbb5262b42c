"""diaforge.eval.report: run folders, rescoring, markdown tables, the trade-off plot, comparisons, W&B offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diaforge.errors import InputError
from diaforge.eval.compare import compare_runs
from diaforge.eval.metrics import METRIC_KEYS, compute_breakdowns, metrics_by_mode
from diaforge.eval.report import (
    flatten_metrics,
    log_to_wandb,
    plot_tradeoff,
    score_transcripts,
    summarise,
    wandb_mode,
    write_run,
)
from diaforge.eval.transcripts import Transcript, read_transcripts

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _t(id: str, mode: str, turns: list[dict], **kw) -> Transcript:
    record = {
        "id": id,
        "mode": mode,
        "model": "tiny",
        "seed_tool": "open_ticket",
        "gold_args": {"queue": "IT"},
        "candidate_tools": ["open_ticket", "open_case"],
        "required_params": 1,
        "has_near_duplicate": True,
        "turns": turns,
        "convrel": None,
        "ended": "tool_call",
    }
    record.update(kw)
    return Transcript.model_validate(record)


def _call(name: str, args: dict) -> dict:
    calls = [{"name": name, "args": args}]
    return {
        "role": "assistant",
        "kind": "tool_calls",
        "content": "",
        "raw": json.dumps(calls),
        "tool_calls": calls,
    }


def _reply(text: str) -> dict:
    return {"role": "assistant", "kind": "reply", "content": text, "raw": text, "thought": "private"}


USER = {"role": "user", "content": "I need a ticket"}


def transcripts(correct: int = 2) -> list[Transcript]:
    """Static: `correct` right calls, one wrong tool, one abstention. Dynamic: one right, one malformed."""
    out = [
        _t(f"s{i}", "static", [USER, _reply("Which queue?"), USER, _call("open_ticket", {"queue": "it"})])
        for i in range(correct)
    ]
    out.append(_t("s-wrong", "static", [USER, _call("open_case", {"queue": "IT"})], has_near_duplicate=False))
    out.append(_t("s-none", "static", [USER, _reply("Can you say more?")], ended="t_max", required_params=3))
    out.append(_t("d0", "dynamic", [USER, _call("open_ticket", {"queue": "IT"})], convrel=[3]))
    out.append(
        _t(
            "d-bad",
            "dynamic",
            [
                USER,
                {
                    "role": "assistant",
                    "kind": "malformed",
                    "content": "",
                    "raw": "[{",
                    "reason": "invalid JSON",
                },
            ],
            ended="error",
            error="backend timed out",
            convrel=[1],
        )
    )
    return out


def test_write_run_then_score_gives_identical_metrics(tmp_path):
    ts = transcripts()
    stored = write_run(tmp_path / "run", ts, model_label="tiny-lora", extra={"benchmark": "heldout-v1"})
    on_disk = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert on_disk == stored
    rescored = score_transcripts(tmp_path / "run" / "transcripts.jsonl")
    for key in ("static", "dynamic", "breakdowns", "ended"):
        assert rescored[key] == on_disk[key], key
    # A run folder works too, and the recomputation matches the library functions.
    assert score_transcripts(tmp_path / "run") == rescored
    assert {m: rescored[m] for m in ("static", "dynamic")} == metrics_by_mode(ts)
    assert rescored["breakdowns"]["static"] == compute_breakdowns([t for t in ts if t.mode == "static"])
    # The transcripts round-trip unchanged.
    assert read_transcripts(tmp_path / "run" / "transcripts.jsonl") == ts


def test_metrics_json_keys_and_values(tmp_path):
    stored = write_run(tmp_path / "run", transcripts(), model_label="tiny-lora", extra={"benchmark": "b"})
    assert stored["model"] == "tiny-lora" and stored["benchmark"] == "b"
    for mode in ("static", "dynamic"):
        assert tuple(stored[mode]) == METRIC_KEYS
    assert set(stored["breakdowns"]) == {"static", "dynamic"}
    # Static: 4 dialogues, Acc 2/4, FTR 1/4, TAR 1/4. Dynamic: Acc 1/2, TAR 1/2, all of it malformed.
    assert (stored["static"]["Acc"], stored["static"]["FTR"], stored["static"]["TAR"]) == (0.5, 0.25, 0.25)
    assert (stored["dynamic"]["Acc"], stored["dynamic"]["TAR"], stored["dynamic"]["TAR_malformed"]) == (
        0.5,
        0.5,
        0.5,
    )
    # ConvRel: static not computed; dynamic (g(3) + g(1)) / 2 = 0.5.
    assert stored["static"]["ConvRel"] is None and stored["dynamic"]["ConvRel"] == 0.5
    assert stored["ended"]["dynamic"] == {
        "tool_call": 1,
        "t_max": 0,
        "reference_end": 0,
        "truncated": 0,
        "error": 1,
    }


def test_metrics_json_carries_the_intervals_beside_the_values(tmp_path):
    stored = write_run(tmp_path / "run", transcripts(), model_label="m")
    iv = stored["intervals"]
    # Static Acc 2 of 4: Wilson centre 0.5, half 0.349961; TAR 1 of 4; FTR values 0, 0, 1, 0.
    assert iv["static"]["Acc"] == {"k": 2, "n": 4, "lo": 0.150039, "hi": 0.849961}
    assert iv["static"]["TAR"] == {"k": 1, "n": 4, "lo": 0.045587, "hi": 0.699358}
    assert iv["static"]["FTR"] == {"mean": 0.25, "n": 4, "lo": 0.0, "hi": 0.75}
    # TCP: 2 gold names among the 3 names called (s0, s1: open_ticket; s-wrong: open_case).
    assert (iv["static"]["TCP"]["k"], iv["static"]["TCP"]["n"]) == (2, 3)
    # Malformed: dynamic 1 of 2 assistant turns; ConvRel: the bootstrap of 1.0 and 0.0.
    assert (iv["dynamic"]["malformed"]["k"], iv["dynamic"]["malformed"]["n"]) == (1, 2)
    assert iv["dynamic"]["ConvRel"] == {"mean": 0.5, "n": 2, "lo": 0.0, "hi": 1.0}
    assert iv["static"]["ConvRel"] is None  # not computed, no interval
    # A breakdown slice: static near-duplicate dialogues s0, s1, s-none, Acc 2 of 3.
    assert iv["breakdowns"]["static"]["by_near_duplicate"]["near_duplicate"]["Acc"]["k"] == 2
    assert iv["breakdowns"]["static"]["by_near_duplicate"]["near_duplicate"]["Acc"]["n"] == 3
    # The anatomy's shares from their stored counts: asks first in s0, s1 and s-none (3 of 4).
    assert iv["anatomy"]["static"]["asks_first"] == {"k": 3, "n": 4, "lo": 0.300642, "hi": 0.954413}
    assert "no_tool" not in iv  # the split did not run
    # The point values are what they were; rescoring gives the same intervals.
    assert stored["static"]["Acc"] == 0.5 and score_transcripts(tmp_path / "run")["intervals"] == iv
    with pytest.raises(ValueError, match="reserved"):
        write_run(tmp_path / "x", transcripts(), model_label="m", extra={"intervals": {}})


def _paired_runs(tmp_path: Path) -> list[Path]:
    """Two runs on 20 dialogues: 3 right in both, 1 only in A (the earlier, "base"), 8 only in B
    ("tuned"), 8 in neither; B also ran one dialogue A did not."""
    right = _call("open_ticket", {"queue": "IT"})
    wrong = _call("open_case", {"queue": "IT"})
    outcomes = [(1, 1)] * 3 + [(1, 0)] + [(0, 1)] * 8 + [(0, 0)] * 8
    for name, column in (("base", 0), ("tuned", 1)):
        ts = [_t(f"h{i}", "dynamic", [USER, right if o[column] else wrong]) for i, o in enumerate(outcomes)]
        if name == "tuned":
            ts.append(_t("extra", "dynamic", [USER, right]))
        write_run(tmp_path / name, ts, model_label=name, extra={"benchmark": "b"})
    return [tmp_path / "base", tmp_path / "tuned"]


def test_compare_pairs_the_runs_dialogue_by_dialogue(tmp_path):
    table = compare_runs(_paired_runs(tmp_path), out_dir=tmp_path / "cmp", json_path=tmp_path / "r.json")
    # tuned − base over the 20 common dialogues: (8 − 1)/20 = +0.35, Newcombe [0.06, 0.57] (the
    # mirror of tests/eval/test_stats.py's A − B), McNemar p = 2 · 10 / 2^9 = 0.0390625.
    row = "| tuned − base | dynamic | 20 | 0.55 | 0.20 | +0.35 [+0.06, +0.57] | 8 / 1 | 0.0391 | shown | 1 |"
    assert row in table
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "## Paired differences (Acc, dialogue by dialogue)" in md and row in md
    report = json.loads((tmp_path / "r.json").read_text())
    pair = report["tuned"]["paired"]["base"]["dynamic"]
    assert (pair["n"], pair["wins"], pair["losses"], pair["diff"]) == (20, 8, 1, 0.35)
    assert (pair["lo"], pair["hi"], pair["p_value"]) == (0.061693, 0.568128, 0.039062)
    assert pair["excludes_zero"] is True and (pair["unpaired_a"], pair["unpaired_b"]) == (1, 0)
    assert pair["verdict"] == "shown"  # the interval excludes 0 and p < 0.05
    assert "paired" not in report["base"]
    # The intervals of each run travel in the JSON report too (tuned: Acc 12 of 21).
    assert report["tuned"]["intervals"]["dynamic"]["Acc"]["k"] == 12


def test_compare_without_transcripts_or_on_other_benchmarks_does_not_pair(tmp_path):
    base, tuned = _paired_runs(tmp_path)
    (tuned / "transcripts.jsonl").unlink()
    md_table = compare_runs([base, tuned], out_dir=tmp_path / "cmp")
    assert "Not paired (no readable `transcripts.jsonl` beside `metrics.json`): tuned." in md_table
    assert "| tuned − base |" not in md_table
    # An old run folder (no intervals in metrics.json) still shows the intervals of its shares.
    old = json.loads((base / "metrics.json").read_text())
    del old["intervals"]
    (base / "metrics.json").write_text(json.dumps(old))
    (base / "transcripts.jsonl").unlink()
    table = compare_runs([base], out_dir=tmp_path / "cmp2")
    assert "| base | – | – | – | – | 20 | 0.20 [0.08, 0.42] | 0.80 |" in table  # FTR: no interval
    # Runs of different benchmarks are not paired even where their dialogue ids agree.
    write_run(tmp_path / "x", transcripts(), model_label="x", extra={"benchmark": "one"})
    write_run(tmp_path / "y", transcripts(), model_label="y", extra={"benchmark": "two"})
    assert "Paired" not in compare_runs([tmp_path / "x", tmp_path / "y"], out_dir=tmp_path / "cmp3")


def test_only_modes_that_ran_are_present(tmp_path):
    static_only = [t for t in transcripts() if t.mode == "static"]
    stored = write_run(tmp_path / "run", static_only, model_label="m")
    assert "static" in stored and "dynamic" not in stored
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Dynamic evaluation: tool-calling" not in report
    # Acc 2/4: Wilson [0.15, 0.85]; TAR 1/4: [0.05, 0.70]; FTR values 0, 0, 1, 0: the bootstrap
    # keeps 0 (all four drawn 0 has probability 0.32) and 0.75 (three or four 1s: 0.051 > 0.025).
    assert "| m | 4 | 0.50 [0.15, 0.85] | 0.25 [0.00, 0.75] | 0.25 [0.05, 0.70] | – | – | – | – |" in report


def test_extra_may_not_overwrite_reserved_keys(tmp_path):
    with pytest.raises(ValueError, match="reserved"):
        write_run(tmp_path / "run", transcripts(), model_label="m", extra={"static": {}})
    with pytest.raises(ValueError, match="at least one"):
        write_run(tmp_path / "run", [], model_label="m")


def test_report_md_has_paper_tables(tmp_path):
    write_run(tmp_path / "run", transcripts(), model_label="tiny-lora")
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.startswith("# Evaluation report: tiny-lora")
    header = (
        "| Model | Static n | Static Acc (↑) | Static FTR (↓) | Static TAR (↓) | "
        "Dynamic n | Dynamic Acc (↑) | Dynamic FTR (↓) | Dynamic TAR (↓) |"
    )
    assert header in report
    assert ROW in report
    assert "| Model | n | TCP (↑) | TCR (↑) | PKP (↑) | PKR (↑) | Acc (↑) | FTR (↓) | TAR (↓) |" in report
    # Static TCP: 2 gold names among 3 called (Wilson [0.21, 0.94]); TCR 2 of 4 gold names.
    assert "| tiny-lora | 4 | 0.67 [0.21, 0.94] (2/3) | 0.50 [0.15, 0.85] (2/4) |" in report
    assert "| Model | n | ConvRel (↑) | TTR (↑) | NGD3 (↑) | NGD2 (↑) | NGD4 (↑) |" in report
    # Dynamic ConvRel: per-dialogue means 1.0 and 0.0; the bootstrap of two values spans [0, 1].
    assert "| tiny-lora | 2 | 0.50 [0.00, 1.00] | 0.00 | 0.00 | 0.00 | 0.00 |" in report
    assert "Table 3 layout" in report and "Table 6 layout" in report
    assert "| tiny-lora | 4 | n/c |" in report  # static ConvRel not computed
    assert "## Malformed and truncated output" in report and "of assistant turns malformed" in report
    assert "of dialogues ended on a reply cut off by the token budget" in report
    assert "## Breakdowns" in report and "near-duplicate among candidates" in report
    assert "3+ required args" in report
    # One data row in the Table 1 block.
    table1 = report.split("## Tool-call accuracy")[1].split("##")[0]
    rows = [
        line
        for line in table1.splitlines()
        if line.startswith("| ") and "Model" not in line and "---" not in line
    ]
    assert rows == [ROW]
    assert "Brackets: the 95 % interval" in report
    # Malformed output: dynamic 1 of 2 assistant turns, Wilson [9.5%, 90.5%].
    assert "- Dynamic: 50.0% [9.5%, 90.5%] (1/2) of assistant turns malformed" in report
    # A breakdown slice carries its own intervals: static near-duplicate, Acc 2 of 3.
    assert "| near-duplicate among candidates | 3 | 0.67 [0.21, 0.94] | 0.00 [0.00, 0.00] |" in report


ROW = (
    "| tiny-lora | 4 | 0.50 [0.15, 0.85] | 0.25 [0.00, 0.75] | 0.25 [0.05, 0.70] "
    "| 2 | 0.50 [0.09, 0.91] | 0.00 [0.00, 0.00] | 0.50 [0.09, 0.91] |"
)
"""Table 1 of `transcripts()`: static Acc 2/4, FTR values 0, 0, 1, 0, TAR 1/4; dynamic Acc 1/2
(Wilson [0.0945, 0.9055]), FTR 0, TAR 1/2."""


def test_tradeoff_png(tmp_path):
    write_run(tmp_path / "run", transcripts(), model_label="m")
    png = tmp_path / "run" / "tradeoff.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    # Flat metrics and several points work as well.
    flat = summarise(transcripts())["static"]
    out = plot_tradeoff(
        [("a", flat), ("b", {"static": flat}), ("c", {**summarise(transcripts())})], tmp_path / "p.png"
    )
    assert out.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="neither"):
        plot_tradeoff([("x", {"model": "x"})], tmp_path / "q.png")


def test_compare_runs(tmp_path):
    write_run(tmp_path / "base", transcripts(correct=1), model_label="base")
    write_run(tmp_path / "tuned", transcripts(correct=3), model_label="tuned")
    table = compare_runs([tmp_path / "base", tmp_path / "tuned" / "metrics.json"], out_dir=tmp_path / "cmp")
    lines = table.split("\n\n")[0].splitlines()
    assert lines[0].startswith("| Model | Static n | Static Acc (↑)")
    # base static: Acc 1/3 (Wilson [0.06, 0.79]), FTR 1/3, TAR 1/3; tuned static: Acc 3/5
    # ([0.23, 0.88]), FTR 1/5, TAR 1/5 ([0.04, 0.62]).
    assert lines[2].startswith("| base | 3 | 0.33 [0.06, 0.79] | 0.33 [0.00, 1.00] | 0.33 [0.06, 0.79] | 2 |")
    assert lines[3].startswith(
        "| tuned | 5 | 0.60 [0.23, 0.88] | 0.20 [0.00, 0.60] | 0.20 [0.04, 0.62] | 2 |"
    )
    assert len(lines) == 4
    # The runs share s0, s-wrong, s-none, d0 and d-bad; tuned also has s1, s2, base nothing more.
    # Static: base right on s0 only, tuned on s0 too: no discordant pair, difference 0 of 3.
    assert (
        "| tuned − base | static | 3 | 0.33 | 0.33 | +0.00 [-0.47, +0.47] | 0 / 0 | 1 | not shown | 2 |"
        in table
    )
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert table.split("\n\n")[0] in md and "Table 5 layout" in md
    assert "## Paired differences (Acc, dialogue by dialogue)" in md
    assert (tmp_path / "cmp" / "comparison.png").read_bytes()[:8] == PNG_MAGIC


def test_compare_runs_marks_floors_and_sets_models_beside_them(tmp_path):
    bench = {"benchmark": "heldout-v1"}
    write_run(
        tmp_path / "random",
        transcripts(correct=0),
        model_label="random",
        extra={**bench, "backend": "random"},
    )
    write_run(
        tmp_path / "tuned", transcripts(correct=3), model_label="tuned", extra={**bench, "backend": "hf"}
    )
    write_run(
        tmp_path / "overlap",
        transcripts(correct=1),
        model_label="name-overlap",
        extra={**bench, "backend": "name-overlap"},
    )
    write_run(
        tmp_path / "reference",
        transcripts(correct=9),
        model_label="reference",
        extra={**bench, "backend": "reference", "max_new_tokens": None},
    )
    # A model evaluated on other dialogues (a different benchmark) is flagged, not silently compared.
    write_run(tmp_path / "base", transcripts(correct=1), model_label="base", extra={"benchmark": "other"})
    runs = [tmp_path / r for r in ("random", "tuned", "overlap", "reference", "base")]
    table = compare_runs(runs, out_dir=tmp_path / "cmp", json_path=tmp_path / "cmp" / "report.json")
    labels = [line.split(" | ")[0][2:] for line in table.split("\n\n")[0].splitlines()[2:]]
    # Models first, in the given order; then the policies, ceiling first.
    assert labels == ["tuned", "base", "reference (ceiling)", "name-overlap (floor)", "random (floor)"]
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "## Against the floors" in md and "is not a gain" in md
    # Dynamic: the same two dialogues everywhere (same benchmark and n), so no flag.
    assert (
        "- tuned, dynamic: Acc 0.50 vs name-overlap 0.50 (+0.00), reference 0.50 (+0.00); paired over 2 "
        "dialogues, not shown: +0.00 [-0.57, +0.57], McNemar p = 1; not shown to clear the heuristic floor."
        in md
    )
    # Static: tuned Acc 3/5 vs name-overlap 1/3 over a different number of dialogues: flagged. The
    # points differ by +0.27, but on the 3 dialogues both ran the two agree: not shown, never "clears".
    tuned_static = md.split("- tuned, static: ")[1].split("\n")[0]
    assert tuned_static.startswith("Acc 0.60 vs name-overlap 0.33 (+0.27) [not the same dialogues")
    assert tuned_static.endswith(
        "; paired over 3 dialogues, not shown: +0.00 [-0.47, +0.47], McNemar p = 1; "
        "not shown to clear the heuristic floor."
    )
    base_dynamic = md.split("- base, dynamic: ")[1].split("\n")[0]  # another benchmark: flagged
    assert "[not the same dialogues" in base_dynamic
    assert base_dynamic.endswith(
        "; not paired dialogue by dialogue, so not shown to clear the heuristic floor."
    )
    floor_lines = [
        ln for ln in md.split("## Against the floors")[1].split("## ")[0].splitlines() if ln[:2] == "- "
    ]
    assert len(floor_lines) == 4 and not any("clears" in ln for ln in floor_lines)
    assert "## Malformed and truncated output" in md and "| Static truncated (↓) |" in md
    report = json.loads((tmp_path / "cmp" / "report.json").read_text())
    assert set(report) == {"tuned", "base", "reference", "name-overlap", "random"}
    assert [k for k, v in report.items() if v["floor"]] == ["reference", "name-overlap", "random"]
    assert report["random"]["policy"] == "random" and report["tuned"]["policy"] is None
    assert report["tuned"]["static"]["Acc"] == 0.6
    assert (tmp_path / "cmp" / "comparison.png").read_bytes()[:8] == PNG_MAGIC


def test_compare_runs_same_label_and_default_dir(tmp_path, monkeypatch):
    write_run(tmp_path / "r1", transcripts(), model_label="same")
    write_run(tmp_path / "r2", transcripts(), model_label="same")
    monkeypatch.chdir(tmp_path)
    table = compare_runs([tmp_path / "r1", tmp_path / "r2"])
    assert "| same (r1) |" in table and "| same (r2) |" in table
    assert (tmp_path / "outputs" / "compare" / "comparison.md").is_file()


def test_compare_runs_names_missing_file(tmp_path):
    with pytest.raises(InputError, match="metrics.json not found"):
        compare_runs([tmp_path / "nowhere"], out_dir=tmp_path / "cmp")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "metrics.json").write_text("{")
    with pytest.raises(InputError, match="invalid JSON"):
        compare_runs([tmp_path / "broken"], out_dir=tmp_path / "cmp")


def test_score_transcripts_names_bad_line(tmp_path):
    path = tmp_path / "t.jsonl"
    good = transcripts()[0].model_dump_json()
    path.write_text(good + "\n" + '{"id": "x", "mode": "sideways"}\n')
    with pytest.raises(InputError, match="line 2"):
        score_transcripts(path)


def test_flatten_metrics():
    flat = flatten_metrics(
        {"model": "m", "static": {"Acc": 0.5, "ConvRel": None}, "breakdowns": {"static": {"x": {"n": 1}}}}
    )
    assert flat == {"model": "m", "static/Acc": 0.5, "breakdowns/static/x/n": 1}


@pytest.fixture
def wandb_env(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb_data"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc credentials
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    (tmp_path / "wandb_dir").mkdir()
    return tmp_path


def test_wandb_mode_offline_without_credentials(wandb_env, monkeypatch):
    assert wandb_mode() is None  # WANDB_MODE is set: wandb reads it
    monkeypatch.delenv("WANDB_MODE")
    assert wandb_mode() == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert wandb_mode() is None


@pytest.mark.slow(reason="starts W&B's service process")
def test_wandb_offline_logging_creates_run_folder(wandb_env):
    run_dir = wandb_env / "run"
    ts = transcripts()
    metrics = write_run(
        run_dir,
        ts,
        model_label="tiny-lora",
        wandb_cfg={"project": "diaforge-test", "run_name": None, "tags": None},
    )
    offline = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert len(offline) == 1 and offline[0].is_dir()
    assert any(offline[0].glob("*.wandb"))
    # Logging again directly returns the new run's folder.
    folder = log_to_wandb(run_dir, metrics, ts, project="diaforge-test", run_name="again", tags=["eval"])
    assert Path(folder).is_dir() and Path(folder).name.startswith("offline-run-")
    assert len(list((run_dir / "wandb").glob("offline-run-*"))) == 2
