"""BFCL: the importer on the installed wheel, our AST checker against bfcl-eval's own, and the
parity runner (fake models for the rules, a tiny model end to end)."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import shutil
import sys
import types
from pathlib import Path

import pytest

from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import Reply
from diaforge.eval.peers import read_json_lines
from diaforge.eval.peers.bfcl.categories import CATEGORIES, DOCUMENTED_COUNTS, bfcl_data_dir
from diaforge.eval.peers.bfcl.checker import check_call, check_calls, standardize_string
from diaforge.eval.peers.bfcl.entries import gold_args
from diaforge.eval.peers.bfcl.importer import load_bfcl, load_bfcl_categories
from diaforge.eval.peers.bfcl.multi_turn import MISS_PARAM_REPLY
from diaforge.eval.peers.bfcl.runner import compare_bfcl, run_bfcl
from diaforge.format import parse_assistant, render_calls
from diaforge.schema import Dialogue, Tool, ToolCall, load_dialogues

pytest.importorskip("bfcl_eval", reason="install bfcl-eval==2026.3.23 with --no-deps")


class ScriptedModel:
    """Stands for `diaforge.eval.models.ModelUnderTest`: answers each prefix with ``answer(prefix, messages)``."""

    label = "scripted"

    def __init__(self, answer) -> None:
        self.answer = answer
        self.prompts: list[list[dict]] = []

    def messages(self, d: Dialogue) -> list[dict]:
        return [
            {"role": "system", "content": "tools"},
            *({"role": t.role, "content": t.content} for t in d.turns),
        ]

    async def respond(
        self, dialogues: list[Dialogue], messages: list[list[dict]] | None = None
    ) -> list[Reply]:
        out = []
        for i, d in enumerate(dialogues):
            msgs = messages[i] if messages is not None else self.messages(d)
            self.prompts.append(msgs)
            text = self.answer(d, msgs)
            out.append(Reply(parse_assistant(text), text))
        return out


@pytest.fixture(scope="module")
def bfcl() -> dict:
    return load_bfcl_categories()


# --------------------------------------------------------------------------------------------
# Importer
# --------------------------------------------------------------------------------------------


def test_five_categories_load_from_the_installed_wheel_with_their_documented_counts(bfcl: dict) -> None:
    assert set(bfcl) == set(CATEGORIES)
    for cat, result in bfcl.items():
        assert result.report.loaded == len(result.dialogues) == DOCUMENTED_COUNTS[cat], cat
        assert not result.report.skipped
    assert {c: DOCUMENTED_COUNTS[c] for c in CATEGORIES} == {
        "multiple": 200,
        "live_multiple": 1053,
        "irrelevance": 240,
        "live_irrelevance": 884,
        "multi_turn_miss_param": 200,
    }
    miss = bfcl["multi_turn_miss_param"].report.counts
    assert miss["no_call_turns"] == 203 and miss["turns"] == 934


def test_imported_entries_map_onto_our_schema(bfcl: dict, tmp_path: Path) -> None:
    d = bfcl["multiple"].dialogues[0]
    assert d.id == "multiple_0" and d.seed_tool == "triangle_properties.get"
    gold = d.turns[-1]
    assert (gold.act, gold.action) == ("function_calling", "call")
    assert gold.tool_calls[0].name == d.seed_tool and gold.metadata["acceptable"]
    assert d.gold_args == gold.tool_calls[0].args
    assert all(
        d.seed_tool is None and not any(t.tool_calls for t in d.turns) for d in bfcl["irrelevance"].dialogues
    )
    miss = bfcl["multi_turn_miss_param"].dialogues[0]
    expect = [t for t in miss.turns if t.metadata.get("bfcl_expect") == "no_call"]
    assert expect and all(
        t.content == MISS_PARAM_REPLY and (t.act, t.action) == ("seek_info", "request") for t in expect
    )
    assert "cp" not in {t.name for t in miss.candidate_tools}  # excluded_function
    sort_call = next(c for t in miss.turns for c in t.tool_calls or [] if c.name == "sort")
    assert sort_call.args == {"file_name": "final_report.pdf"}  # positional argument named from the docs
    with_system = next(
        d for d in bfcl["live_multiple"].dialogues if d.provenance.model_extra["bfcl"]["system"]
    )
    assert all(t.role in ("user", "assistant") for t in with_system.turns)
    # every imported record round-trips through our JSONL
    out = tmp_path / "bfcl.jsonl"
    assert (
        eval_main(
            [
                "import",
                "bfcl",
                "--category",
                "multiple,multi_turn_miss_param",
                "--limit",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert len(load_dialogues(out)) == 10


def _copy_category(tmp_path: Path, category: str) -> Path:
    src = bfcl_data_dir()
    (tmp_path / "possible_answer").mkdir()
    name = f"BFCL_v4_{category}.json"
    shutil.copy(src / name, tmp_path / name)
    if (src / "possible_answer" / name).exists():
        shutil.copy(src / "possible_answer" / name, tmp_path / "possible_answer" / name)
    return tmp_path / name


def _rewrite_line(path: Path, lineno: int, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[lineno - 1])
    edit(obj)
    lines[lineno - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("category", "where", "edit", "needle"),
    [
        ("multiple", "question", lambda o: o.update(question="hello"), "question"),
        (
            "multiple",
            "question",
            lambda o: o.update(
                function=[{"name": "f", "parameters": {"type": "dict", "properties": {}, "required": ["x"]}}]
            ),
            "required",
        ),
        ("multiple", "answer", lambda o: o.update(ground_truth=[{"nope": {"a": [1]}}]), "gold function"),
        (
            "irrelevance",
            "question",
            lambda o: o["question"][0].append({"role": "robot", "content": "x"}),
            "role",
        ),
        (
            "multi_turn_miss_param",
            "answer",
            lambda o: o["ground_truth"][0].append("rm(file_name=some_variable)"),
            "literal",
        ),
    ],
)
def test_a_malformed_record_is_rejected_with_one_line_naming_file_and_record(
    tmp_path: Path, category: str, where: str, edit, needle: str
) -> None:
    file = _copy_category(tmp_path, category)
    target = file if where == "question" else tmp_path / "possible_answer" / file.name
    _rewrite_line(target, 3, edit)
    if category == "multi_turn_miss_param":  # the class docs live beside the data
        shutil.copytree(bfcl_data_dir() / "multi_turn_func_doc", tmp_path / "multi_turn_func_doc")
    with pytest.raises(InputError) as err:
        load_bfcl(category, path=file)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    assert file.name in msg and needle in msg
    assert "line 3" in msg or (where == "answer" and category == "multiple" and "line" in msg)


def test_import_cli_reports_errors_as_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = _copy_category(tmp_path, "multiple")
    _rewrite_line(file, 2, lambda o: o.pop("question"))
    assert eval_main(["import", "bfcl", str(file), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "BFCL_v4_multiple.json" in err and "line 2" in err


# --------------------------------------------------------------------------------------------
# AST checker rules
# --------------------------------------------------------------------------------------------

TOOL = Tool(
    name="book.room",
    parameters={
        "type": "dict",
        "properties": {
            "city": {"type": "string"},
            "nights": {"type": "integer"},
            "price": {"type": "float"},
            "pets": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
        "required": ["city", "nights"],
    },
)
ANSWER = {
    "city": ["New York, NY", "NYC"],
    "nights": [2],
    "price": [100.0, ""],
    "pets": [False, ""],
    "tags": [["quiet", "high floor"], ""],
    "note": [""],
}


@pytest.mark.parametrize(
    ("name", "args", "valid", "error_type"),
    [
        ("book.room", {"city": "new york ny", "nights": 2}, True, ""),
        ("book.room", {"city": "NYC", "nights": 2, "price": 100}, True, ""),  # int accepted for float
        ("book.room", {"city": "nyc", "nights": 2, "tags": ["Quiet", "high-floor"]}, True, ""),
        ("book_room", {"city": "NYC", "nights": 2}, False, "simple_function_checker:wrong_func_name"),
        ("book.room", {"city": "NYC"}, False, "simple_function_checker:missing_required"),
        (
            "book.room",
            {"city": "NYC", "nights": 2, "view": "sea"},
            False,
            "simple_function_checker:unexpected_param",
        ),
        ("book.room", {"city": "NYC", "nights": 2.0}, False, "type_error:simple"),
        ("book.room", {"city": "NYC", "nights": True}, False, "type_error:simple"),
        ("book.room", {"city": "Boston", "nights": 2}, False, "value_error:string"),
        ("book.room", {"city": "NYC", "nights": 3}, False, "value_error:others"),
        (
            "book.room",
            {"city": "NYC", "nights": 2, "tags": ["high floor", "quiet"]},
            False,
            "value_error:list/tuple",
        ),
        ("book.room", {"city": "NYC", "nights": 2, "note": "late"}, False, "value_error:string"),
    ],
)
def test_check_call_follows_bfcl_rules(name: str, args: dict, valid: bool, error_type: str) -> None:
    verdict = check_call(TOOL, name, args, ANSWER)
    assert verdict.valid is valid, verdict
    assert verdict.error_type == error_type


def test_missing_optional_and_string_standardisation() -> None:
    answer = {"city": ["NYC"], "nights": [2], "pets": [True]}
    assert (
        check_call(TOOL, "book.room", {"city": "NYC", "nights": 2}, answer).error_type
        == "simple_function_checker:missing_optional"
    )
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024")
    assert standardize_string("it's") == 'it"s'


def test_categories_decide_how_many_calls_and_their_order() -> None:
    other = Tool(
        name="other", parameters={"type": "dict", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    )
    answers = [{"book.room": {"city": ["NYC"], "nights": [2]}}, {"other": {"x": [1]}}]
    calls = [
        ToolCall(name="other", args={"x": 1}),
        ToolCall(name="book.room", args={"city": "nyc", "nights": 2}),
    ]
    assert check_calls([TOOL, other], calls, answers, "parallel_multiple").valid
    assert check_calls([TOOL, other], calls[:1], answers, "parallel").error_type.endswith("wrong_count")
    single = [{"book.room": {"city": ["NYC"], "nights": [2]}}]
    assert check_calls([other, TOOL], calls[1:], single, "multiple").valid
    assert (
        check_calls([other, TOOL], calls, single, "multiple").error_type
        == "multiple_function_checker:wrong_count"
    )
    assert check_calls([TOOL], [{"book.room": {"city": "NYC", "nights": 2}}], single, "simple").valid


# --------------------------------------------------------------------------------------------
# Parity with bfcl-eval's checker
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bfcl_checker():
    """bfcl-eval's `ast_checker`. Its module imports `bfcl_eval.constants.model_config`, which
    imports every API handler (anthropic, cohere, google-genai, ...); the checker only reads
    ``MODEL_CONFIG_MAPPING[model].underscore_to_dot`` (for dotted names), so a stand-in module
    answering False for every model is put in its place while the checker is imported."""
    name = "bfcl_eval.constants.model_config"
    saved = sys.modules.get(name)
    stub = types.ModuleType(name)

    class _Config:
        underscore_to_dot = False

    class _Mapping(dict):
        def __missing__(self, key: str) -> _Config:
            return _Config()

    stub.MODEL_CONFIG_MAPPING = _Mapping()
    sys.modules[name] = stub
    try:
        module = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
        from bfcl_eval.constants.enums import Language
    finally:
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved
    return lambda funcs, out, gt, cat: module.ast_checker(
        funcs, out, gt, Language.PYTHON, cat, "parity-model"
    )["valid"]


def _variants(name: str, args: dict, required: list[str]) -> list[list[dict]]:
    """Fixed model outputs for one entry: the gold call, a wrong name, a missing required
    parameter, an unexpected one, and per argument a wrong value, a wrong type and (strings) a
    case/punctuation variant; then two calls."""
    outs = [
        [{name: args}],
        [{name + "_v2": args}],
        [{name: {**args, "unexpected_param": 1}}],
        [{name: args}, {name: args}],
    ]
    if required:
        outs.append([{name: {k: v for k, v in args.items() if k != required[0]}}])
    for key, value in args.items():
        if isinstance(value, bool):
            alts = [not value, str(value).lower()]
        elif isinstance(value, (int, float)):
            alts = [value + 1, str(value), float(value) if isinstance(value, int) else int(value)]
        elif isinstance(value, str):
            alts = [value.upper() + " ,.", value + " extra", 7]
        elif isinstance(value, list):
            alts = [list(reversed(value)), [str(v).upper() for v in value], "x"]
        else:
            alts = [{**value, "extra_key": 1} if isinstance(value, dict) else None]
        outs.extend([{name: {**args, key: alt}}] for alt in alts)
    return outs


def test_verdicts_agree_with_bfcl_eval_checker(bfcl: dict, bfcl_checker) -> None:
    data = bfcl_data_dir()
    total = agree = valid = 0
    disagreements = []
    for cat, take in (("multiple", 200), ("live_multiple", 150)):
        raw = {o["id"]: o for _, o in read_json_lines(data / f"BFCL_v4_{cat}.json")}
        answers = {
            o["id"]: o["ground_truth"]
            for _, o in read_json_lines(data / "possible_answer" / f"BFCL_v4_{cat}.json")
        }
        for d in bfcl[cat].dialogues[:take]:
            gt = answers[d.id]
            name = next(iter(gt[0]))
            tool = next(t for t in d.candidate_tools if t.name == name)
            for out in _variants(name, gold_args(gt[0][name], tool), tool.required):
                theirs = bfcl_checker(
                    copy.deepcopy(raw[d.id]["function"]), copy.deepcopy(out), copy.deepcopy(gt), cat
                )
                ours = check_calls(d.candidate_tools, out, gt, cat).valid
                total += 1
                valid += theirs
                if theirs == ours:
                    agree += 1
                else:
                    disagreements.append((d.id, out, theirs, ours))
    rate = agree / total
    assert total >= 3000 and 0.1 < valid / total < 0.9  # a real mix of passing and failing outputs
    assert rate >= 0.99, f"agreement {rate:.4f} on {total} outputs; first disagreements: {disagreements[:3]}"


# --------------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------------


def _entries(bfcl: dict, n: int = 4) -> dict[str, list[Dialogue]]:
    return {cat: r.dialogues[:n] for cat, r in bfcl.items()}


def _oracle(entries: dict[str, list[Dialogue]]):
    by_id = {d.id: d for ds in entries.values() for d in ds}

    def answer(prefix: Dialogue, messages: list[dict]) -> str:
        full = by_id[prefix.id]
        if len(prefix.turns) == len(full.turns):  # irrelevance: nothing to call
            return "I cannot help with that using these tools."
        gold = full.turns[len(prefix.turns)]
        return render_calls(gold.tool_calls) if gold.tool_calls else gold.content

    return answer


def test_runner_scores_an_oracle_perfectly_and_a_chatterbox_by_the_rules(bfcl: dict) -> None:
    entries = _entries(bfcl)
    metrics, records = asyncio.run(run_bfcl(ScriptedModel(_oracle(entries)), entries, progress=False))
    assert {c: m["accuracy"] for c, m in metrics["categories"].items()} == dict.fromkeys(CATEGORIES, 1.0)
    assert metrics["overall"]["accuracy"] == 1.0 and metrics["overall"]["n"] == 20
    assert len(records) == 16 + sum(
        len([t for t in d.turns if t.role == "assistant"]) for d in entries["multi_turn_miss_param"]
    )

    chat = ScriptedModel(lambda d, m: "Could you tell me more?")
    metrics, _ = asyncio.run(run_bfcl(chat, entries, progress=False))
    acc = {c: m["accuracy"] for c, m in metrics["categories"].items()}
    assert acc["irrelevance"] == acc["live_irrelevance"] == 1.0
    assert acc["multiple"] == acc["live_multiple"] == acc["multi_turn_miss_param"] == 0.0
    assert metrics["categories"]["multiple"]["errors"] == {"no_call": 4}

    garbage = ScriptedModel(lambda d, m: '[{"name": ')
    metrics, _ = asyncio.run(run_bfcl(garbage, entries, progress=False))
    assert metrics["categories"]["irrelevance"]["malformed"] == 4  # passes, but counted apart
    assert metrics["categories"]["multiple"]["errors"] == {"malformed": 4}


def test_runner_penalises_a_call_on_a_missing_parameter_turn(bfcl: dict) -> None:
    entries = {"multi_turn_miss_param": bfcl["multi_turn_miss_param"].dialogues[:3]}
    oracle = _oracle(entries)
    eager = ScriptedModel(
        lambda d, m: render_calls([ToolCall(name="ls")]) if not oracle(d, m).startswith("[") else oracle(d, m)
    )
    metrics, records = asyncio.run(run_bfcl(eager, entries, progress=False))
    assert metrics["categories"]["multi_turn_miss_param"]["accuracy"] == 0.0
    assert any(r["error_type"] == "multi_turn:premature_call" for r in records)
    assert 0.0 < metrics["categories"]["multi_turn_miss_param"]["turn_accuracy"] < 1.0


def test_entry_system_messages_reach_the_model(bfcl: dict) -> None:
    d = next(d for d in bfcl["live_multiple"].dialogues if d.provenance.model_extra["bfcl"]["system"])
    model = ScriptedModel(lambda d, m: "ok")
    asyncio.run(run_bfcl(model, {"live_multiple": [d]}, progress=False))
    assert d.provenance.model_extra["bfcl"]["system"][0] in model.prompts[0][0]["content"]


def test_compare_flags_regressions() -> None:
    base = {"categories": {"multiple": {"accuracy": 0.8}, "irrelevance": {"accuracy": 0.7}}}
    tuned = {"categories": {"multiple": {"accuracy": 0.79}, "irrelevance": {"accuracy": 0.6}}}
    cmp = compare_bfcl(base, tuned, tolerance=0.02)
    assert cmp["regressions"] == ["irrelevance"]
    assert cmp["categories"]["multiple"]["delta"] == pytest.approx(-0.01)


def test_bfcl_cli_runs_a_tiny_model_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_bfcl("multiple", limit=3).dialogues for t in d.turns if t.content]
    model = build_tiny_model(tmp_path / "tiny", texts=texts, seed=0)
    out = tmp_path / "run"
    args = ["bfcl", "--model", str(model), "--categories", "multiple,irrelevance", "--limit", "1",
            "--max-new-tokens", "4", "--out", str(out), "--quiet"]  # fmt: skip
    assert eval_main(args) == 0
    metrics = json.loads((out / "bfcl_metrics.json").read_text())
    assert set(metrics["categories"]) == {"multiple", "irrelevance"}
    for m in metrics["categories"].values():
        assert m["n"] == 1 and 0.0 <= m["accuracy"] <= 1.0
    assert len((out / "bfcl_transcripts.jsonl").read_text().splitlines()) == 2
    assert "BFCL parity check" in (out / "bfcl_report.md").read_text()
    # the same run as its own baseline: no regression
    assert (
        eval_main(
            [
                *args[:-3],
                "--out",
                str(tmp_path / "again"),
                "--baseline",
                str(out),
                "--fail-on-regression",
                "--quiet",
            ]
        )
        == 0
    )
    assert "no category regressed" in capsys.readouterr().out
    assert eval_main(["bfcl", "--model", str(model), "--categories", "simple_cobol", "--quiet"]) == 2
