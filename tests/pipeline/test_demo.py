"""`diaforge demo` / `demo-curve` (`diaforge.pipeline.demo`, `diaforge.pipeline.curve`): the gain test, the report,
the curve plot, bad input, and the whole demo on a tiny model from a folder outside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.errors import InputError
from diaforge.pipeline.curve import curve_figure, plot_curve, point_line, run_curve
from diaforge.pipeline.demo import (
    DemoConfig,
    benchmark_coverage,
    eval_args,
    gain_summary,
    render_gain,
    render_served,
    served_summary,
    unaided_count,
)


def _runs(tuned: float, base: float, floor: float, ftr_tuned: float, ftr_base: float) -> dict:
    def run(acc: float, ftr: float) -> dict:
        return {"static": {"Acc": acc, "FTR": ftr}, "dynamic": {"Acc": acc, "FTR": ftr}}

    return {"base": run(base, ftr_base), "tuned": run(tuned, ftr_tuned), "name-overlap": run(floor, 0.3)}


def test_gain_is_measured_against_the_base_and_the_name_overlap_floor():
    gain = gain_summary(_runs(tuned=0.55, base=0.05, floor=0.375, ftr_tuned=0.1, ftr_base=0.2))
    dyn = gain["dynamic"]
    assert dyn["tuned_Acc"] == 0.55
    assert dyn["over_base_pp"] == 50.0
    assert dyn["over_name_overlap_pp"] == 17.5
    assert dyn["FTR_not_above_base"] is True
    worse = gain_summary(_runs(tuned=0.2, base=0.0, floor=0.375, ftr_tuned=0.3, ftr_base=0.0))["static"]
    assert worse["over_name_overlap_pp"] == -17.5 and worse["FTR_not_above_base"] is False
    table = render_gain(gain)
    assert "+50.0 pp" in table and "+17.5 pp" in table


def _paired(diff: float, lo: float, hi: float, p: float = 0.04) -> dict:
    return {"n": 40, "diff": diff, "lo": lo, "hi": hi, "wins": 9, "losses": 2, "p_value": p,
            "excludes_zero": lo > 0 or hi < 0, "both": 3, "neither": 26}  # fmt: skip


def test_passes_needs_a_gain_over_the_floor_the_verdict_rule_shows():
    # Every point bar is met: +50 points over the base, +17.5 over the floor, FTR below the floor's.
    runs = _runs(tuned=0.55, base=0.05, floor=0.375, ftr_tuned=0.1, ftr_base=0.2)
    assert gain_summary(runs)["dynamic"]["passes"] is None  # not paired: no verdict
    runs["tuned"]["paired"] = {
        "base": {"dynamic": _paired(0.5, 0.33, 0.64, 1e-5)},
        "name-overlap": {"dynamic": _paired(0.175, 0.012, 0.33)},
    }
    dyn = gain_summary(runs)["dynamic"]
    assert dyn["passes"] is True and dyn["paired_over_name_overlap"]["verdict"] == "shown"
    assert dyn["paired_over_name_overlap"]["lo"] == 0.012 and dyn["paired_over_base"]["diff"] == 0.5
    assert "both" not in dyn["paired_over_base"]  # the summary keeps the keys a reader needs
    assert "tuned - base shown: +50.0 pp [+33.0, +64.0], McNemar p = 1e-05 (n=40)" in render_gain(
        gain_summary(runs)
    )
    # The same points, but the interval over the floor excludes 0 while p = 0.06: borderline, no.
    runs["tuned"]["paired"]["name-overlap"]["dynamic"] = _paired(0.175, 0.012, 0.33, 0.06)
    dyn = gain_summary(runs)["dynamic"]
    assert dyn["passes"] is False and dyn["paired_over_name_overlap"]["verdict"] == "borderline"
    # The interval reaches 0 (one dialogue's worth) and p = 0.06: not shown, no.
    runs["tuned"]["paired"]["name-overlap"]["dynamic"] = _paired(0.175, 0.0, 0.33, 0.06)
    assert gain_summary(runs)["dynamic"]["passes"] is False
    runs["tuned"]["paired"]["name-overlap"]["dynamic"] = _paired(0.175, -0.02, 0.33, 0.09)
    assert gain_summary(runs)["dynamic"]["passes"] is False
    assert gain_summary(runs)["dynamic"]["paired_over_name_overlap"]["verdict"] == "not shown"
    # A shown loss against the floor does not pass either.
    runs["tuned"]["paired"]["name-overlap"]["dynamic"] = _paired(-0.175, -0.33, -0.012, 0.01)
    assert gain_summary(runs)["dynamic"]["passes"] is False
    assert gain_summary(runs)["static"]["paired_over_base"] is None  # static was not paired
    assert "tuned - name-overlap n/a" in render_gain(gain_summary(runs))


def _demo_runs(folder: Path, a: int, b: int, c: int, d: int) -> list[Path]:
    """The demo's base, tuned and name-overlap runs on a + b + c + d dynamic dialogues: the base
    right on none, the tuned model and the floor as the paired table a, b, c, d says (right in
    both, only tuned, only the floor, neither); every wrong dialogue calls the wrong tool."""
    import json

    from diaforge.eval.report import write_run
    from diaforge.eval.transcripts import Transcript

    def transcript(i: int, right: int) -> Transcript:
        calls = [{"name": "open_ticket" if right else "open_case", "args": {"queue": "IT"}}]
        return Transcript.model_validate(
            {
                "id": f"h{i}",
                "mode": "dynamic",
                "seed_tool": "open_ticket",
                "gold_args": {"queue": "IT"},
                "candidate_tools": ["open_ticket", "open_case"],
                "turns": [
                    {"role": "user", "content": "a ticket for the IT queue"},
                    {
                        "role": "assistant",
                        "kind": "tool_calls",
                        "raw": json.dumps(calls),
                        "tool_calls": calls,
                    },
                ],
                "ended": "tool_call",
            }
        )

    cells = [(1, 1)] * a + [(1, 0)] * b + [(0, 1)] * c + [(0, 0)] * d
    columns = {
        "base": [0] * len(cells),
        "tuned": [x for x, _ in cells],
        "name-overlap": [y for _, y in cells],
    }
    for label, outcomes in columns.items():
        backend = "name-overlap" if label == "name-overlap" else "hf"
        ts = [transcript(i, o) for i, o in enumerate(outcomes)]
        write_run(folder / label, ts, model_label=label, extra={"benchmark": "b", "backend": backend})
    return [folder / label for label in columns]


@pytest.mark.parametrize(
    ("table", "verdict", "words", "passes"),
    [
        # `make demo`'s numbers: +15.0 points over the floor, 30 won, 18 lost of 80.
        ((13, 30, 18, 19), "not shown", "not shown: +15.0 pp [-1.8, +30.8], McNemar p = 0.111 (n=80)", False),
        # The CPU's 730-dialogue model: 27 won, 14 lost.
        (
            (17, 27, 14, 22),
            "borderline",
            "borderline: +16.2 pp [+0.8, +30.7] excludes 0, McNemar p = 0.0596 is not below 0.05 (n=80)",
            False,
        ),
        # 30 won, 8 lost: the one the rule shows.
        ((13, 30, 8, 29), "shown", "shown: +27.5 pp [+12.9, +40.5], McNemar p = 0.000472 (n=80)", True),
    ],
)
def test_the_demo_report_takes_its_words_from_the_verdict_rule(tmp_path, table, verdict, words, passes):
    """compare_runs writes the report the demo reads; `gain` and the console lines say what the
    verdict rule says, and `passes` needs a shown gain even where every point bar is met."""
    import json

    from diaforge.eval.compare import compare_runs

    compare_runs(_demo_runs(tmp_path, *table), out_dir=tmp_path / "cmp", json_path=tmp_path / "report.json")
    gain = gain_summary(json.loads((tmp_path / "report.json").read_text()))
    dyn = gain["dynamic"]
    assert (
        dyn["over_base_pp"] >= 30 and dyn["over_name_overlap_pp"] >= 10 and dyn["FTR_not_above_name_overlap"]
    )
    assert dyn["paired_over_name_overlap"]["verdict"] == verdict
    assert dyn["paired_over_base"]["verdict"] == "shown"
    assert dyn["passes"] is passes
    printed = render_gain(gain)
    assert f"tuned - name-overlap {words}" in printed
    assert "clears" not in printed


def test_a_missing_run_gives_no_number_rather_than_a_made_up_one():
    runs = _runs(tuned=0.5, base=0.0, floor=0.4, ftr_tuned=0.1, ftr_base=0.0)
    del runs["name-overlap"]
    gain = gain_summary(runs)["dynamic"]
    assert gain["over_name_overlap_pp"] is None and gain["over_base_pp"] == 50.0
    assert "n/a" in render_gain(gain_summary(runs))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"limit": 0}, "--limit"),
        ({"t_max": True}, "--t-max"),
        ({"recipe": Path("no/such/recipe.yaml")}, "--recipe"),
        ({"floors": ("reference", "oracle")}, "oracle"),
        ({"modes": "live"}, "--modes"),
        ({"modes": " , "}, "--modes"),
        ({"no_tool_limit": -1}, "--no-tool-limit"),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(tmp_path, change, message):
    """A value a field refuses is refused as the config is made, a missing file by `validate`; each
    is one line naming the flag."""
    with pytest.raises(InputError, match=message) as err:
        DemoConfig(out=tmp_path / "demo", **change).validate()
    assert "\n" not in str(err.value)
    assert not (tmp_path / "demo").exists()


def test_validate_checks_a_field_changed_after_the_config_was_made(tmp_path):
    cfg = DemoConfig(out=tmp_path / "demo")
    cfg.limit = 0
    with pytest.raises(InputError, match="^--limit must be at least 1, got 0$"):
        cfg.validate()


def test_the_demo_judges_on_the_whole_benchmark_in_the_dynamic_loop():
    """The defaults `make demo` runs: the 115 held-out dialogues, dynamic mode only, no no-tool
    split, speculation; the curve keeps the dynamic mode whatever the config says; None evaluates
    the whole split."""
    args = eval_args(DemoConfig())
    assert args[args.index("--limit") + 1] == "115" and benchmark_coverage(DemoConfig())["whole"]
    assert args[args.index("--speculate") + 1] == "8"
    assert args[args.index("--modes") + 1] == "dynamic"
    assert args[args.index("--no-tool-bench") + 1] == "none"
    args = eval_args(DemoConfig(modes="static,dynamic", no_tool_limit=None), "dynamic")
    assert args[args.index("--modes") + 1] == "dynamic"
    assert "--no-tool-bench" not in args and "--no-tool-limit" not in args
    args = eval_args(DemoConfig(modes="static,dynamic", no_tool_limit=5))
    assert args[args.index("--modes") + 1] == "static,dynamic"
    assert args[args.index("--no-tool-limit") + 1] == "5"
    assert args[args.index("--ground-values") + 1] == "on"  # the demo's default
    assert "--ground-values" not in eval_args(DemoConfig(ground_values=False))
    assert "--ground-values" not in eval_args(DemoConfig(constrain_calls=False))  # nothing to hold
    args = eval_args(DemoConfig(ground_values=True))
    assert (
        args[args.index("--ground-values") + 1] == "on" and args[args.index("--constrain-calls") + 1] == "on"
    )
    args = eval_args(DemoConfig())  # on by default, for every model alike
    assert args[args.index("--copy-thoughts") + 1] == "on"
    assert "--copy-thoughts" not in eval_args(DemoConfig(copy_thoughts=False))
    assert "--copy-thoughts" not in eval_args(DemoConfig(copy_thoughts=True, constrain_calls=False))
    # The floors get the same dialogues and loop but no decoding aid: a policy decodes nothing, and
    # `eval run` refuses an aid its backend cannot apply.
    floors = eval_args(DemoConfig(), decoding=False)
    assert not {"--constrain-calls", "--ground-values", "--copy-thoughts", "--speculate"} & set(floors)
    models = eval_args(DemoConfig())
    assert floors == [a for i, a in enumerate(models) if a not in ("--constrain-calls", "--ground-values",
                      "--copy-thoughts", "on", "--speculate") and models[i - 1] != "--speculate"]  # fmt: skip


def test_curve_sizes_must_fit_the_corpus(tmp_path):
    with pytest.raises(InputError, match="--sizes"):
        run_curve(DemoConfig(out=tmp_path, dialogues=50), [25, 100])
    with pytest.raises(InputError, match="--sizes"):
        run_curve(DemoConfig(out=tmp_path), [0, 10])


def test_curve_plot_is_written(tmp_path):
    result = {
        "points": [
            {"dialogues": 25, "samples": 70, "dynamic": {"Acc": 0.05, "FTR": 0.3}},
            {"dialogues": 50, "samples": 140, "dynamic": {"Acc": 0.1, "FTR": 0.25}},
        ],
        "references": {"base": {"Acc": 0.0}, "name-overlap": {"Acc": 0.375}},
    }
    path = tmp_path / "curve.png"
    plot_curve(result, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curve_plot_reads_at_a_glance():
    """Sizes written out as ticks, a base line at 0 inside the axes, each point named by its
    dialogues, n in the title, and the legend below the axes (not over the lower left)."""
    import matplotlib.pyplot as plt

    result = {
        "points": [
            {"dialogues": 12, "samples": 34, "dynamic": {"Acc": 0.0, "FTR": 0.0}},
            {"dialogues": 100, "samples": 297, "dynamic": {"Acc": 0.1, "FTR": 0.45}},
        ],
        "references": {"base": {"Acc": 0.0}, "name-overlap": {"Acc": 0.375}},
        "config": {"limit": 40},
    }
    fig = curve_figure(result)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["34", "297"]
    low, high = ax.get_ylim()
    assert low < 0 and high > 1
    assert "n = 40" in ax.get_title()
    assert sorted(t.get_text() for t in ax.texts) == ["100 dial.", "12 dial."]
    legend_box = ax.get_legend().get_window_extent()
    assert legend_box.y1 <= ax.get_window_extent().y0  # wholly below the axes
    plt.close(fig)


def test_a_curve_point_carries_its_interval():
    """The printed line and the plot: Acc 4 of 40 has the Wilson interval [0.040, 0.231]; a point
    whose run predates the intervals gets it from its rate and n."""
    point = {
        "dialogues": 100,
        "samples": 297,
        "dynamic": {"Acc": 0.1, "FTR": 0.45, "n": 40},
        "intervals": {
            "Acc": {"k": 4, "n": 40, "lo": 0.03958, "hi": 0.230518},
            "FTR": {"mean": 0.45, "n": 40, "lo": 0.275, "hi": 0.65},
        },  # fmt: skip
        "anatomy": {"n": 40, "asks_first_n": 16, "calls_n": 29, "right_tool_n": 11},
    }
    line = point_line(point)
    assert "dynamic Acc 0.100 [0.040, 0.231], FTR 0.450 [0.275, 0.650], n=40" in line
    assert "asks first 16/40, right tool 11/29" in line and "values grounded n/a" in line
    old = {**point, "intervals": {}, "dynamic": {"Acc": 0.0, "FTR": 0.0, "n": 40}}
    assert "dynamic Acc 0.000 [0.000, 0.088]" in point_line(old)
    fig = curve_figure({"points": [point, {**old, "samples": 34, "dialogues": 12}], "references": {}})
    import matplotlib.pyplot as plt

    bars = [c for c in fig.axes[0].collections if len(c.get_segments()) == 2]  # one bar per point
    old_bar, new_bar = sorted([seg[0][1], seg[1][1]] for seg in bars[0].get_segments())  # [low, high]
    assert old_bar == pytest.approx([0.0, 0.0876], abs=1e-4)
    assert new_bar == pytest.approx([0.0396, 0.2305], abs=1e-4)
    plt.close(fig)


@pytest.mark.slow(reason="runs the demo's commands (other processes) and trains")
def test_the_whole_demo_runs_on_a_tiny_model_writes_its_report_and_resumes(tmp_path, monkeypatch):
    """`run_demo` end to end with a tiny random model in place of SmolLM2, from a working folder
    outside the checkout: every stage runs the public command, the bundled catalogue, benchmark
    and accelerate config are found in their packages, the outputs land under the working folder,
    the report holds the runs, the gain, the timings and the commands, and a second call finds
    every result complete and only compares again."""
    import json

    from diaforge.pipeline.demo import run_demo
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_model

    bench = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
    texts = [t.content for d in load_dialogues(bench)[:20] for t in d.turns if t.content]
    model = build_tiny_model(tmp_path / "tiny-base", texts=texts, seed=0)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "\n".join(
            [
                f"model_name_or_path: {model}",
                "dtype: float32",
                "dataset_path: unused.jsonl",  # the demo points it at its own corpus
                "max_dialogues: 3",
                "tool_style: compact",
                f"system_prompt_file: {ROOT / 'recipes' / 'smollm2-135m' / 'system_prompt.txt'}",
                "slicing: prefix_shared",
                "max_length: 2048",
                "use_peft: true",
                "lora_r: 4",
                "lora_alpha: 8",
                "lora_target_modules: all-linear",
                "learning_rate: 1.0e-3",
                "num_train_epochs: 1",
                "per_device_train_batch_size: 1",
                "use_cpu: true",
                "save_strategy: 'no'",
                "report_to: none",
                "output_dir: unused",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    cfg = DemoConfig(
        out=Path("demo"),
        model_dir=model,
        recipe=recipe,
        dialogues=4,
        limit=2,
        modes="static,dynamic",
        no_tool_limit=2,
        t_max=2,
        batch_size=2,
        threads=1,
    )
    report = run_demo(cfg)
    saved = json.loads((work / "demo" / "report.json").read_text(encoding="utf-8"))
    assert saved == report
    assert {"base", "tuned", "reference", "name-overlap", "random"} <= set(report)
    assert report["reference"]["floor"] is True and report["tuned"]["floor"] is False
    # The base is prompted in the tuned model's recorded format (the recipe's compact listing).
    assert report["base"]["prompt_format"]["tool_style"] == "compact"
    assert report["tuned"]["prompt_format"]["tool_style"] == "compact"
    assert report["gain"]["dynamic"]["tuned_Acc"] == report["tuned"]["dynamic"]["Acc"]
    # The gain is also measured dialogue by dialogue, from the runs' transcripts (2 dialogues).
    assert report["gain"]["dynamic"]["paired_over_base"]["n"] == 2
    assert report["tuned"]["paired"]["name-overlap"]["dynamic"]["n"] == 2
    assert report["tuned"]["intervals"]["dynamic"]["Acc"]["n"] == 2
    # The no-tool split beside the positive one, for the models and the floors.
    for label in ("base", "tuned", "reference", "name-overlap", "random"):
        assert report[label]["no_tool"]["dynamic"]["n"] == 2
        row = report["splits"][label]["dynamic"]
        assert row["positive_Acc"] == report[label]["dynamic"]["Acc"]
        assert row["refusal_acc"] == report[label]["no_tool"]["dynamic"]["refusal_acc"]
    # The ceiling refuses every miss whose reference turns it is given (static), and never calls.
    assert report["splits"]["reference"]["static"]["refusal_acc"] == 1.0
    assert report["splits"]["reference"]["dynamic"]["wrong_call"] == 0.0
    # The tuned model served without any decoding aid, beside the aided number, paired.
    served = report["served"]["dynamic"]
    assert served["unaided_Acc"] == report["tuned-unaided"]["dynamic"]["Acc"]
    assert served["aided_Acc"] == report["tuned"]["dynamic"]["Acc"]
    assert served["paired_aided_over_unaided"]["n"] == 2 and report["served"]["sample"] is None
    assert report["tuned-unaided"]["decoding"]["constrain_calls"] is False
    stages = [
        "materialise",
        "generate",
        "train",
        "eval base",
        "eval tuned",
        "eval tuned unaided",
        "floors",
        "compare",
    ]
    assert list(report["timings"]) == stages
    assert report["resumed_stages"] == ["materialise"]  # the tiny model counts as materialised
    assert [c.split()[:2] for c in report["commands"]["train"]] == [["diaforge", "train"]]
    config_file = report["commands"]["train"][0].split()[3]  # diaforge train --config_file FILE
    assert Path(config_file).resolve() == ROOT / "accelerate_configs" / "cpu.yaml"
    assert report["commands"]["generate"][0].startswith("diaforge data generate --catalogue ")
    assert Path(report["config"]["bench"]).resolve() == bench
    assert (
        Path(report["config"]["catalogue"]).resolve() == ROOT / "data_gen" / "assets" / "catalogue_train.json"
    )
    assert report["wall_seconds"] >= sum(report["timings"].values()) * 0.99
    for name in ("comparison.md", "comparison.png"):
        assert (work / "demo" / name).is_file()
    assert sorted(p.name for p in work.iterdir()) == ["demo"]  # nothing written elsewhere
    again = run_demo(cfg)
    assert again["resumed_stages"] == stages[:-1]
    assert again["tuned"]["dynamic"] == report["tuned"]["dynamic"]


@pytest.mark.slow(reason="runs a child process that takes memory")
def test_a_stage_records_the_peak_memory_of_its_commands() -> None:
    """`run_measured` reports the largest resident memory of the command (the report's per-stage
    ``peak_rss_mb``): a child that holds 300 MiB reads at least that, one that holds little reads
    far less, and the exit code comes back. A child starts from its parent's size at the fork, so
    the measuring parent here is a small process, as the demo's runner is (pytest is not)."""
    import json
    import subprocess
    import sys

    big = "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096])"
    measure = (
        "import json, os, sys\n"
        "from diaforge.pipeline.demo import run_measured\n"
        f"big = run_measured([sys.executable, '-c', {big!r}], dict(os.environ))\n"
        "small = run_measured([sys.executable, '-c', 'raise SystemExit(3)'], dict(os.environ))\n"
        "print(json.dumps([big, small]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", measure], capture_output=True, text=True, check=True, timeout=120
    )
    (code, peak), (small_code, small) = json.loads(out.stdout.strip().splitlines()[-1])
    assert code == 0 and peak is not None and peak >= 300
    assert small_code == 3 and small is not None and small + 150 < peak


def test_the_served_numbers_stand_side_by_side_with_their_paired_difference() -> None:
    """The report's ``served`` block: the tuned model's Acc with the aids and with none, the paired
    difference `eval compare` stored for tuned minus tuned-unaided, and a line saying when the
    unaided run took a smaller sample."""
    pair = {"n": 40, "diff": 0.2, "lo": 0.05, "hi": 0.34, "wins": 10, "losses": 2, "p_value": 0.04}
    runs = {
        "tuned": {"dynamic": {"Acc": 0.55}, "paired": {"tuned-unaided": {"dynamic": pair}}},
        "tuned-unaided": {"dynamic": {"Acc": 0.3}},
    }
    served = served_summary(runs, 40, 80)
    assert served["dynamic"]["aided_Acc"] == 0.55 and served["dynamic"]["unaided_Acc"] == 0.3
    assert served["dynamic"]["paired_aided_over_unaided"]["diff"] == 0.2
    assert served["dynamic"]["paired_aided_over_unaided"]["verdict"] == "shown"
    assert "static" not in served
    text = render_served(served)
    assert "with the decoding aids 0.550, with none (a stock server) 0.300" in text
    assert "first 40 of the 80 dialogues" in text
    assert served_summary(runs, 0, 80) is None
    assert served_summary({"tuned": runs["tuned"]}, 40, 80) is None


@pytest.mark.parametrize(
    ("limit", "whole", "words"), [(115, True, "whole"), (500, True, "whole"), (80, False, "80 of")]
)
def test_the_report_says_whether_the_whole_benchmark_was_evaluated(limit, whole, words) -> None:
    cfg = DemoConfig(limit=limit)
    total = sum(1 for line in cfg.bench.read_text(encoding="utf-8").splitlines() if line.strip())
    coverage = benchmark_coverage(cfg)
    assert coverage["whole"] is whole and coverage["of"] == total == 115
    assert coverage["dialogues"] == min(limit, total) and words in coverage["note"]


@pytest.mark.parametrize(
    ("unaided", "limit", "count"), [(40, 80, 40), (None, 80, 80), (0, 80, 0), (90, 80, 80)]
)
def test_the_unaided_run_takes_at_most_the_aided_runs_dialogues(unaided, limit, count) -> None:
    cfg = DemoConfig(unaided_limit=unaided, limit=limit)
    assert unaided_count(cfg) == count
    if count:
        args = eval_args(cfg, aids=False, limit=count)
        assert args[args.index("--limit") + 1] == str(count)
        assert not any(a.startswith(("--constrain", "--ground", "--copy")) for a in args)


def test_speculation_reaches_eval_run_as_a_number_with_the_aids_and_without_them() -> None:
    """A numeric decoding setting is passed as its number (``--speculate 8``, not ``on``), to the
    aided runs and to the unaided one (it changes a reply's cost, not its words); never to the floors."""
    from diaforge.eval.cli import build_parser

    cfg = DemoConfig(decoding={"constrain_calls": True, "copy_thoughts": True, "speculate": 8})
    for args in (eval_args(cfg), eval_args(cfg, aids=False)):
        assert args[args.index("--speculate") + 1] == "8"
    assert "--speculate" not in eval_args(cfg, decoding=False)
    assert "--copy-thoughts" not in eval_args(cfg, aids=False)
    assert "--speculate" not in eval_args(DemoConfig(speculate=0))  # eval run's default
    for args in (eval_args(cfg), eval_args(cfg, aids=False)):  # eval run reads every flag the demo writes
        assert build_parser().parse_args(["run", "--model", "m", *args]).speculate == 8
