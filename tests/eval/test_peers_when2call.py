"""When2Call (NVIDIA/When2Call at ecc8d42388e91ab37e7e737d48e16e8ecea3d1dc): the importer on seven
records copied byte for byte from its ``data/test/when2call_test_llm_judge.jsonl`` (lines 14, 77,
94, 124, 129, 231, 271; tests/fixtures/peers/when2call/README.md), and its metrics on prediction
records written here around those records in the exact layout of its two prediction files: an
lm-eval-harness ``samples_*.jsonl`` log and ``run_openai_judge.py``'s output.

No published number is reproduced: the repository releases no prediction file of any model (no
samples log, no judge output), and its MCQ test file is a Git LFS object absent from the snapshot.
The metric values below are counted by hand from the tables in the comments.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _repo import FIXTURES

from diaforge.data_gen.corpus import label_violations
from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.peers.when2call import load_when2call, read_when2call
from diaforge.eval.peers.when2call_scores import (
    macro_f1,
    per_category,
    read_predictions,
    score_when2call,
    tool_hallucination_rate,
)
from diaforge.schema import load_dialogues

FIXTURE = FIXTURES / "peers" / "when2call"
TEST_FILE = FIXTURE / "when2call_test_llm_judge.jsonl"
RECORDS = [json.loads(line) for line in TEST_FILE.read_text(encoding="utf-8").splitlines()]
CA, TC, RFI, DIRECT = "cannot_answer", "tool_call", "request_for_info", "direct"

# Per record (file order): gold, tools shown, the four choices' lengths in characters (direct,
# tool_call, request_for_info, cannot_answer), hand-chosen log-likelihoods, and the choice each
# argmax picks: raw ll, then ll / length.
#   1e333361 CA 1 tool   len 67 83 94 137   ll -40 -30 -30 -20      raw CA      norm CA
#   e73b8b21 CA 0 tools  len 66 51 102 156  ll -30 -10 -30 -12      raw TC (!)  norm CA (-12/156)
#   4f02bfd1 CA 0 tools  len 41 63 116 149  ll -30 -30 -30 -10      raw CA      norm CA
#   c3ce199a RFI         len 29 69 70 110   ll -20 -8 -8.05 -30     raw TC      norm RFI (-8.05/70 > -8/69)
#   b0bedcc1 RFI         len 149 47 115 121 ll -14 -30 -12 -40      raw RFI     norm DIRECT (-14/149 > -12/115)
#   c8d83563 TC          len 28 51 138 86   ll -20 -5 -30 -30       raw TC      norm TC
#   2f167186 TC          len 34 65 92 256   ll -10 -12 -40 -60      raw DIRECT  norm TC (-12/65)
LLS = [
    [-40, -30, -30, -20],
    [-30, -10, -30, -12],
    [-30, -30, -30, -10],
    [-20, -8, -8.05, -30],
    [-14, -30, -12, -40],
    [-20, -5, -30, -30],
    [-10, -12, -40, -60],
]
RAW = [CA, TC, CA, TC, RFI, TC, DIRECT]
NORM = [CA, CA, CA, RFI, DIRECT, TC, TC]
ORDER = [DIRECT, TC, RFI, CA]


def test_the_fixture_is_the_copied_excerpt() -> None:
    """The seven lines as copied (README); any edit to them shows here."""
    digest = hashlib.sha256(TEST_FILE.read_bytes()).hexdigest()
    assert digest == "89f8f25bd49042a969dc0481c713eb08815dd148429e208d2092dc6cb27c8821"
    assert [len(list(r["answers"].values())[0]) for r in RECORDS] == [67, 66, 41, 29, 149, 28, 34]


def test_records_import_with_counts() -> None:
    result = load_when2call(TEST_FILE)
    assert result.report.loaded == 7
    assert result.report.counts == {
        "items": 7,
        "behaviours": {TC: 2, RFI: 2, CA: 3},
        "sources": {"BFCL v2 Live Multiple": 1, "BFCL v2 Live Simple": 6},
        "tools_shown": {"0": 2, "1": 5, "2+": 0},
        "no_tool_cannot_answer": 2,
        "held_out_params": 2,
    }
    assert load_when2call(FIXTURE).report.loaded == 7  # a folder holding the file
    by_id = {d.id.removeprefix("when2call-")[:8]: d for d in result.dialogues}
    call = by_id["c8d83563"]
    assert call.seed_tool == "multiply" and call.gold_args == {"a": 3, "b": 2}
    assert call.turns[0].content == "What is the multiplication of 3 and 2"
    assert call.turns[1].action == "call" and call.turns[1].tool_calls[0].args == {"a": 3, "b": 2}
    ask = by_id["c3ce199a"]
    assert ask.seed_tool == "sum_numbers" and ask.gold_args == {}
    assert (ask.turns[1].action, ask.turns[1].act) == ("request", "seek_info")
    assert ask.turns[1].content == "To provide you with the sum, could you please specify the two numbers?"
    assert ask.provenance.model_extra["when2call"]["held_out_param"] == "numbers_list"
    refuse = by_id["e73b8b21"]
    assert refuse.seed_tool is None and refuse.candidate_tools == []
    assert (refuse.turns[1].action, refuse.turns[1].act) == ("response_fail", "reject")
    options = refuse.provenance.model_extra["when2call"]["answers"]
    assert list(options) == ORDER and options[TC] == '{"name": "set_volume", "arguments": {"volume": 30}}'
    # BFCL's "dict" parameter type is read as an object schema
    assert by_id["1e333361"].candidate_tools[0].required == ["alarm_time"]
    assert all(label_violations(d) == [] for d in result.dialogues)


def _broken(tmp_path: Path, line: int, edit) -> Path:
    records = [json.loads(json.dumps(r)) for r in RECORDS]
    edit(records[line])
    path = tmp_path / "when2call_test_llm_judge.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "edit", "needle"),
    [
        (0, lambda r: r.update(correct_answer="maybe"), "correct_answer 'maybe'"),
        (1, lambda r: r["answers"].pop("direct"), "'answers' must hold"),
        (2, lambda r: r.update(tools=["{not json"]), "tools[0] is not JSON"),
        (3, lambda r: r.update(uuid=RECORDS[0]["uuid"]), "appears twice"),
        (5, lambda r: r["answers"].update(tool_call="multiply(3, 2)"), "answers.tool_call is not JSON"),
        (6, lambda r: r.update(tools=[r["tools"][0], r["tools"][0]]), "duplicate names"),
        (4, lambda r: r.update(tools=['{"name": "f", "parameters": {"type": "array"}}']), "tool parameters"),
    ],
)
def test_a_malformed_record_is_one_line(tmp_path: Path, line: int, edit, needle: str) -> None:
    path = _broken(tmp_path, line, edit)
    with pytest.raises(InputError) as err:
        load_when2call(path)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and path.name in msg and f"line {line + 1}" in msg and needle in msg


# --------------------------------------------------------------------------------------------
# lm-eval samples log
# --------------------------------------------------------------------------------------------


def _sample(k: int, lls: list[float], *, pair: list[int] | None = None) -> dict[str, Any]:
    """One line of ``samples_when2call_*.jsonl`` as lm-eval writes it: the mapped doc, one
    [ll, is_greedy] per choice as strings (`sanitize_list`), the per-sample metrics."""
    record = RECORDS[k]
    names = list(record["answers"])
    gold = names.index(record["correct_answer"])
    doc = {
        **record,
        "choices": [record["answers"][n] for n in names],
        "target_index": gold,
        "prompt": "(the task's prompt)",
    }
    sample = {
        "doc_id": k,
        "doc": doc,
        "target": str(gold),
        "arguments": {
            f"gen_args_{j}": {"arg_0": doc["prompt"], "arg_1": c} for j, c in enumerate(doc["choices"])
        },
        "resps": [[[str(float(ll)), "False"]] for ll in lls],
        "filtered_resps": [[str(float(ll)), "False"] for ll in lls],
        "filter": "none",
        "metrics": ["acc", "acc_norm"] + (["macro_f1"] if pair else []),
        "doc_hash": "0" * 64,
        "prompt_hash": "0" * 64,
        "target_hash": "0" * 64,
        "acc": float(RAW[k] == record["correct_answer"]),
        "acc_norm": float(NORM[k] == record["correct_answer"]),
    }
    if pair:
        sample["macro_f1"] = pair
    return sample


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _samples(tmp_path: Path, *, pairs: list[str] | None = None) -> Path:
    rows = [
        _sample(k, LLS[k], pair=[ORDER.index(r["correct_answer"]), ORDER.index(pairs[k])] if pairs else None)
        for k, r in enumerate(RECORDS)
    ]
    return _write_lines(tmp_path / "samples_when2call-qwen2_5_2025-04-28.jsonl", rows)


def test_lm_eval_samples_metrics_by_hand(tmp_path: Path) -> None:
    form, items = read_predictions(_samples(tmp_path))
    assert form == "lm_eval_samples"
    assert [s.pred for s in items] == RAW and [s.pred_norm for s in items] == NORM
    m = score_when2call(items, form)
    # raw argmax: right on records 1, 3, 5, 6 -> acc 4/7
    assert m["accuracy"] == round(4 / 7, 6) == 0.571429
    # direct:  TP 0, predicted 1, gold 0                         F1 0
    # tool_call: TP 1 (c8d83563), predicted 3, gold 2 -> P 1/3, R 1/2, F1 0.4
    # request_for_info: TP 1, predicted 1, gold 2 -> P 1, R 1/2, F1 2/3
    # cannot_answer: TP 2, predicted 2, gold 3 -> P 1, R 2/3, F1 0.8
    assert m["per_category"] == {
        DIRECT: {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "predicted": 1},
        TC: {"precision": 0.333333, "recall": 0.5, "f1": 0.4, "support": 2, "predicted": 3},
        RFI: {"precision": 1.0, "recall": 0.5, "f1": 0.666667, "support": 2, "predicted": 1},
        CA: {"precision": 1.0, "recall": 0.666667, "f1": 0.8, "support": 3, "predicted": 2},
    }
    assert m["f1_labels"] == ORDER
    assert m["macro_f1"] == round((0 + 0.4 + 2 / 3 + 0.8) / 4, 6) == 0.466667
    # the two no-tool cannot_answer items: e73b8b21 picks the tool call -> 1/2 (per item: the
    # items that show tools, whatever their gold behaviour, are not in it)
    assert (m["tool_hallucination_rate"], m["hallucinated_calls"], m["no_tool_cannot_answer"]) == (0.5, 1, 2)
    no_tool = [s for s in items if s.gold == CA and s.no_tools]
    assert m["tool_hallucination_rate"] == tool_hallucination_rate([s.pred == TC for s in no_tool])
    # normalised: only b0bedcc1 is wrong -> 6/7; F1 direct 0, tool_call 1, rfi 2/3, cannot_answer 1
    assert m["acc_norm"] == 0.857143
    assert m["macro_f1_norm"] == round((0 + 1 + 2 / 3 + 1) / 4, 6) == 0.666667
    assert m["confusion"][CA] == {DIRECT: 0, TC: 1, RFI: 0, CA: 2}
    assert m["confusion"][RFI] == {DIRECT: 0, TC: 1, RFI: 1, CA: 0}
    assert m["confusion"][TC] == {DIRECT: 1, TC: 1, RFI: 0, CA: 0}
    assert sum(m["confusion"][DIRECT].values()) == 0
    assert m["logged_disagreements"] == {"acc": 0, "acc_norm": 0}


def test_logged_macro_f1_pairs_are_read_as_logged(tmp_path: Path) -> None:
    """A samples log with ``macro_f1`` pairs (as additional_metrics.py reads them): the F1, the
    confusion and the hallucination rate follow the pairs; acc and acc_norm stay the argmaxes."""
    m = score_when2call(*reversed(read_predictions(_samples(tmp_path, pairs=NORM))))
    assert m["macro_f1"] == m["macro_f1_norm"] == 0.666667
    assert m["tool_hallucination_rate"] == 0.0
    assert (m["accuracy"], m["acc_norm"]) == (0.571429, 0.857143)
    assert m["logged_disagreements"] == {"acc": 0, "acc_norm": 0}
    same = score_when2call(*reversed(read_predictions(_samples(tmp_path, pairs=RAW))))
    assert same["macro_f1"] == 0.466667


def test_a_logged_acc_that_differs_is_counted(tmp_path: Path) -> None:
    rows = [_sample(k, LLS[k]) for k in range(7)]
    rows[6]["acc_norm"] = 0.0  # lm-eval would have logged 1.0 (norm picks the tool call)
    m = score_when2call(*reversed(read_predictions(_write_lines(tmp_path / "s.jsonl", rows))))
    assert m["logged_disagreements"] == {"acc": 0, "acc_norm": 1}


def test_macro_f1_against_scikit_learn() -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    gold = [r["correct_answer"] for r in RECORDS]
    cases = [(gold, RAW), (gold, NORM), ([CA, CA, TC], [CA, CA, TC]), ([CA, RFI], [DIRECT, DIRECT])]
    for g, p in cases:
        assert macro_f1(g, p) == pytest.approx(sklearn_metrics.f1_score(g, p, average="macro"), abs=1e-6)
    assert per_category([CA], [CA]) == {
        CA: {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1, "predicted": 1}
    }


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda s: s.update(filtered_resps=s["filtered_resps"][:3]), "one log-likelihood per choice (4)"),
        (lambda s: s["filtered_resps"][0].__setitem__(0, "high"), "'high' is not a number"),
        (lambda s: s.update(macro_f1=[0, 1]), "does not fit correct_answer"),
        (lambda s: s["doc"].update(correct_answer="perhaps"), "correct_answer 'perhaps'"),
    ],
)
def test_a_malformed_sample_is_one_line(tmp_path: Path, edit, needle: str) -> None:
    rows = [_sample(k, LLS[k]) for k in range(7)]
    edit(rows[2])
    path = _write_lines(tmp_path / "samples.jsonl", rows)
    with pytest.raises(InputError) as err:
        read_predictions(path)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and "samples.jsonl, line 3" in msg and needle in msg


# --------------------------------------------------------------------------------------------
# LLM-as-a-judge output
# --------------------------------------------------------------------------------------------

JUDGED = [CA, TC, "direct_answer", RFI, TC, TC, TC]


def _judge_rows() -> list[dict[str, Any]]:
    """``run_openai_judge.py``'s ``item_to_dump``: the record with its tools and target tool
    decoded and the model's response added, and the judge's classification."""
    rows = []
    for record, label in zip(RECORDS, JUDGED, strict=True):
        question = {**record, "model_response": "(the model's reply)"}
        question["tools"] = [json.loads(t) for t in record["tools"]]
        if record["target_tool"] is not None:
            question["target_tool"] = json.loads(record["target_tool"])
        rows.append(
            {
                "judge_prompt": "(the judge prompt)",
                "judge_response": {"classification": label},
                "model_response": question["model_response"],
                "question": question,
            }
        )
    return rows


def test_judge_output_metrics_by_hand(tmp_path: Path) -> None:
    form, items = read_predictions(_write_lines(tmp_path / "judged.jsonl", _judge_rows()))
    assert form == "llm_judge"
    m = score_when2call(items, form)
    # aggregate_llm_as_a_judge_results.py: per gold behaviour, the share judged as it
    assert m["categories"] == {
        TC: {"score": 1.0, "response_distribution": {TC: 2}},
        RFI: {"score": 0.5, "response_distribution": {RFI: 1, TC: 1}},
        CA: {"score": 0.333333, "response_distribution": {CA: 1, TC: 1, "direct_answer": 1}},
    }
    # direct_answer read as direct; tool_call: TP 2, predicted 4, gold 2 -> F1 2/3;
    # rfi: TP 1, predicted 1, gold 2 -> 2/3; cannot_answer: TP 1, predicted 1, gold 3 -> 1/2; direct 0
    assert m["macro_f1"] == round((2 / 3 + 2 / 3 + 0.5 + 0) / 4, 6) == 0.458333
    assert m["accuracy"] == 0.571429
    assert (m["tool_hallucination_rate"], m["hallucinated_calls"], m["no_tool_cannot_answer"]) == (0.5, 1, 2)
    assert m["cannot_answer_tool_call_rate"] == 0.333333
    assert "acc_norm" not in m


def test_judge_output_without_a_classification_is_one_line(tmp_path: Path) -> None:
    rows = _judge_rows()
    rows[4]["judge_response"] = "tool_call"
    with pytest.raises(InputError) as err:
        read_predictions(_write_lines(tmp_path / "judged.jsonl", rows))
    assert "judged.jsonl, line 5" in str(err.value) and "classification" in str(err.value)


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


def test_cli_import_and_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "when2call.jsonl"
    assert eval_main(["import", "when2call", str(TEST_FILE), "--out", str(out)]) == 0
    assert [d.seed_tool for d in load_dialogues(out)] == [
        None,
        None,
        None,
        "sum_numbers",
        "fetchPerson",
        "multiply",
        "reverse_input",
    ]
    capsys.readouterr()
    assert eval_main(["when2call", "score", "--pred", str(_samples(tmp_path)), "--json"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(
        "When2Call (lm-eval samples, 7 items): macro F1 46.7, acc 0.571, acc-norm 0.857 "
        "(its macro F1 66.7), tool hallucination 50.0% (1/2 no-tool cannot_answer items)"
    )
    metrics = json.loads(printed[printed.index("{") :])
    assert metrics["macro_f1"] == 0.466667 and metrics["form"] == "lm_eval_samples"


def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_main(["when2call", "score", "--pred", str(TEST_FILE)]) == 2  # a test file, not predictions
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "neither an lm-eval samples log" in err and "line 1" in err
    assert eval_main(["when2call", "score", "--pred", str(tmp_path / "missing.jsonl")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert eval_main(["import", "when2call", str(tmp_path), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "no when2call_test_mcq.jsonl or when2call_test_llm_judge.jsonl" in capsys.readouterr().err
    with pytest.raises(InputError):
        read_when2call(_write_lines(tmp_path / "empty.jsonl", []))
