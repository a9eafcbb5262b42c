"""`python -m diaforge.data_gen pairs` on a small generated corpus (with retrieval misses): every kind appears,
every rejected turn parses, and it differs from its chosen turn only in the decision its kind names."""

from __future__ import annotations

import json

import pytest
from _repo import ROOT
from _slow import slow_fixture

from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.data_gen.cli import main
from diaforge.data_gen.pairs import KINDS, PairOptions, apply_mix, make_pairs, parse_mix, rename_tool
from diaforge.format import PromptFormat, parse_assistant, record_turns
from diaforge.schema import Dialogue, load_dialogues
from diaforge.similarity import composite_matrix, get_encoder
from diaforge.text import humanise_param


@pytest.fixture(scope="module")
@slow_fixture("reads MiniLM from disk")
def run(tmp_path_factory):
    """A 24-dialogue corpus (a quarter retrieval misses, lookup reasoning) and its pairs."""
    base = tmp_path_factory.mktemp("pairs")
    corpus = base / "corpus"
    code = main(
        [
            "generate",
            "--catalogue",
            str(ROOT / "data_gen/assets/catalogue_train.json"),
            "--out",
            str(corpus),
            "--num-dialogues",
            "24",
            "--seed",
            "0",
            "--reasoning",
            "lookup",
            "--no-tool-share",
            "0.25",
            "--quiet",
            "--no-plots",
            "--no-export",
        ]
    )
    assert code == 0
    out = base / "pairs"
    assert main(["pairs", str(corpus / "dialogues.jsonl"), "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    rows = [json.loads(line) for line in (out / "preference.jsonl").read_text().splitlines()]
    stats = json.loads((out / "stats.json").read_text())
    return load_dialogues(corpus / "dialogues.jsonl"), records, rows, stats, out


def test_every_kind_appears_and_stats_count_them(run):
    dialogues, records, rows, stats, out = run
    assert len(records) == len(rows) == stats["pairs"] > 0
    for kind in KINDS:
        assert stats["by_kind"][kind] == sum(r["kind"] == kind for r in records) > 0, kind
    assert stats["retrieval_misses"] == sum(d.withheld_tool is not None for d in dialogues) > 0
    assert sum(stats["by_kind"].values()) == stats["pairs"]
    assert PromptFormat.load(out) == PromptFormat(
        system_prompt=PromptFormat.load(out).system_prompt
    )  # hf-prompt: the default options


def test_rows_are_trl_conversational_preference_rows(run):
    _, records, rows, _, _ = run
    for record, row in zip(records, rows, strict=True):
        assert row["id"] == record["id"]
        assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["role"] == "user"
        assert [m["role"] for m in row["chosen"]] == ["assistant"] == [m["role"] for m in row["rejected"]]
        assert row["chosen"] != row["rejected"]
        assert "tools" not in row  # prompt mode: the tools are in the system prompt


def _said(dialogue: Dialogue) -> str:
    return " ".join(t.content for t in dialogue.turns if t.role == "user")


def _closest(need, candidates):
    """The closest other candidate, recomputed from the composite matrix."""
    others = [c for c in candidates if c.name != need.name]
    scores = composite_matrix([need, *others], get_encoder("tfidf"))[0, 1:]
    return others[int(scores.argmax())].name


def test_each_rejected_turn_parses_and_differs_only_in_its_decision(run):
    _, records, rows, _, _ = run
    seen = set()
    for record, row in zip(records, rows, strict=True):
        dialogue, chosen, rejected = record_turns(record)
        kind, variant = record["kind"], record["variant"]
        seen.add((kind, variant))
        parsed_c = parse_assistant(row["chosen"][0]["content"])
        parsed_r = parse_assistant(row["rejected"][0]["content"])
        assert parsed_r.kind != "malformed", (record["id"], parsed_r.reason)
        assert parsed_c.kind != "malformed"
        assert parsed_r.thought == rejected.thought
        said = _said(dialogue)
        need = dialogue.gold_tool or dialogue.withheld_tool
        if kind == "premature_call":
            assert parsed_c.kind == "reply" and chosen.action == "request"
            (call,) = parsed_r.tool_calls
            assert call.name == dialogue.seed_tool and set(call.args) == set(need.required)
            invented = [k for k, v in call.args.items() if v != dialogue.gold_args[k]]
            assert invented  # at least one value the user has not given
        elif kind == "near_duplicate" and variant == "call":
            (c,), (r,) = parsed_c.tool_calls, parsed_r.tool_calls
            assert c.name == dialogue.seed_tool and r.name == _closest(need, dialogue.candidate_tools)
            assert r.args == c.args  # same values
            assert parsed_r.thought == rename_tool(parsed_c.thought, c.name, r.name)
        elif kind == "near_duplicate":
            assert variant == "option" and chosen.action == "request"
            assert _closest(need, dialogue.candidate_tools) in rejected.thought
            assert dialogue.seed_tool not in (rejected.thought or "")
        elif kind == "unsupported_value":
            (c,), (r,) = parsed_c.tool_calls, parsed_r.tool_calls
            assert r.name == c.name and set(r.args) == set(c.args)
            changed = [k for k in c.args if c.args[k] != r.args[k]]
            assert len(changed) == 1
            new = r.args[changed[0]]
            assert str(new).lower() not in said.lower()
        elif kind == "needless_question" and variant == "value":
            (c,) = parsed_c.tool_calls
            assert parsed_r.kind == "reply" and "?" in parsed_r.content
            assert any(humanise_param(k) in parsed_r.content for k in c.args)
        elif kind == "needless_question":
            assert variant == "tool" and rejected.action == "clarify" and "?" in parsed_r.content
            assert chosen.phase == "argument_completion"
            assert (
                need.name in rejected.thought and _closest(need, dialogue.candidate_tools) in rejected.thought
            )
        elif kind == "missed_refusal":
            assert dialogue.withheld_tool is not None and is_refusal(parsed_c.content)
            assert not is_refusal(parsed_r.content)
            if variant == "call":
                (r,) = parsed_r.tool_calls
                assert r.name == _closest(need, dialogue.candidate_tools)
            else:
                assert variant == "request" and "?" in parsed_r.content
        else:
            assert kind == "wrong_refusal" and is_refusal(parsed_r.content) and not parsed_r.tool_calls
            assert not is_refusal(parsed_c.content)
            assert (variant == "early") == (dialogue.withheld_tool is not None)
    assert len(seen) == 10  # every variant of every kind


def _upto_known(thought: str) -> str:
    """The thought up to the end of its ``Required: ...`` sentence."""
    return thought[: thought.index(".", thought.index("Required: "))]


def test_lookup_corpus_rejected_thoughts_use_the_lookup_template(run):
    """In a `lookup` corpus the premature call's thought opens as the chosen one does (the chosen
    option, the signature, the required keys), lists the invented values under Known with no
    quoted words and says nothing is missing; the needless question names the key it asks for as
    missing and leaves it out of Known."""
    _, records, _, _, _ = run
    checked = {"premature_call": 0, "needless_question": 0}
    for record in records:
        dialogue, chosen, rejected = record_turns(record)
        kind, variant = record["kind"], record["variant"]
        if kind == "premature_call":
            assert _upto_known(rejected.thought) == _upto_known(chosen.thought)
            assert rejected.thought.endswith("Nothing is missing, so I call it.")
            (call,) = rejected.tool_calls
            invented = {k: v for k, v in call.args.items() if v != dialogue.gold_args.get(k)}
            assert invented
            for key, value in invented.items():
                assert f"{key}: {json.dumps(value)}" in rejected.thought  # no quoted words before it
            checked[kind] += 1
        elif kind == "needless_question" and variant == "value":
            (call,) = chosen.tool_calls
            asked = rejected.thought.split(" Missing: ")[1].split(".")[0]
            assert asked in call.args and f"{asked}: " not in rejected.thought.split(" Missing: ")[0]
            assert rejected.thought.endswith(f"I ask for {asked}.")
            assert _upto_known(rejected.thought) == _upto_known(chosen.thought)
            checked[kind] += 1
    assert all(checked.values()), checked


def test_kinds_and_mix(run):
    dialogues, records, _, _, _ = run
    only = make_pairs(dialogues, PairOptions(kinds=("premature_call", "wrong_refusal")))
    assert {p.kind for p in only} == {"premature_call", "wrong_refusal"}
    n_pc = sum(p.kind == "premature_call" for p in only)
    n_wr = sum(p.kind == "wrong_refusal" for p in only)
    options = PairOptions(
        kinds=("premature_call", "wrong_refusal"), mix={"premature_call": 1, "wrong_refusal": 1}
    )
    mixed = apply_mix(only, options)
    # Equal weights: T = min(n_pc / .5, n_wr / .5); each keeps floor(T / 2) = min(n_pc, n_wr).
    assert sum(p.kind == "premature_call" for p in mixed) == min(n_pc, n_wr)
    assert sum(p.kind == "wrong_refusal" for p in mixed) == min(n_pc, n_wr)
    assert parse_mix("premature_call=2, near_duplicate=0.5") == {"premature_call": 2.0, "near_duplicate": 0.5}
    with pytest.raises(ValueError, match="not kind=weight"):
        parse_mix("premature_call")
    with pytest.raises(ValueError, match="unknown kind 'typo'"):
        PairOptions(kinds=("typo",))


def test_max_pairs_draws_across_the_corpus(run):
    dialogues, records, _, _, _ = run
    everything = make_pairs(dialogues)
    assert len(everything) == len(records)
    few = make_pairs(dialogues, PairOptions(max_pairs=10))
    again = make_pairs(dialogues, PairOptions(max_pairs=10))
    ids = [(p.dialogue.id, p.turn_index, p.kind, p.variant) for p in few]
    assert len(few) == 10 and ids == [(p.dialogue.id, p.turn_index, p.kind, p.variant) for p in again]
    order = [(p.dialogue.id, p.turn_index, p.kind, p.variant) for p in everything]
    assert ids == [k for k in order if k in set(ids)]  # a subset, in corpus order
    assert ids != order[:10]  # drawn, not the first ten
    assert make_pairs(dialogues, PairOptions(max_pairs=10_000)) == everything
    with pytest.raises(ValueError, match="max_pairs must be a positive integer"):
        PairOptions(max_pairs=0)


def test_bad_kind_is_one_line(run, tmp_path, capsys):
    *_, out = run
    code = main(
        [
            "pairs",
            str(ROOT / "tests/fixtures/dialogues_small.jsonl"),
            "--out",
            str(tmp_path / "p"),
            "--kinds",
            "nope",
        ]
    )
    assert code == 2
    assert "unknown kind 'nope'" in capsys.readouterr().err


def test_rename_tool_whole_names_only():
    assert rename_tool("a_b then a_b_c.", "a_b", "x") == "x then a_b_c."


def test_mix_leaves_out_a_kind_the_corpus_lacks():
    """The fixture's 6 dialogues have no retrieval miss: missed_refusal has no pair, so the mix's
    shares are over premature_call alone, and all 7 of its pairs are kept (stats of the fixture:
    tests/train/test_dpo.py)."""
    dialogues = load_dialogues(ROOT / "tests/fixtures/dialogues_small.jsonl")
    options = PairOptions(mix={"premature_call": 1, "missed_refusal": 1})
    kept = make_pairs(dialogues, options)
    assert [p.kind for p in kept] == ["premature_call"] * 7
    assert make_pairs(dialogues, PairOptions(mix={"missed_refusal": 1})) == []


def test_rows_in_native_mode_and_bad_records(tmp_path):
    """The same record in native mode: tools travel in ``tools`` and a rejected call as ``tool_calls``;
    a damaged pairs file is one line naming the file and the record."""
    from diaforge.errors import InputError
    from diaforge.format import export_format, load_pair_records, preference_row

    records = load_pair_records(ROOT / "tests/fixtures/pairs_small.jsonl")
    assert len(records) == 41
    record = next(r for r in records if r["kind"] == "premature_call")
    dialogue, chosen, rejected = record_turns(record)
    row = preference_row(record, export_format("hf"))
    assert [t["function"]["name"] for t in row["tools"]] == [t.name for t in dialogue.candidate_tools]
    assert row["prompt"] == export_format("hf").messages(dialogue, upto=record["turn_index"])
    (call,) = row["rejected"][0]["tool_calls"]
    assert call["function"]["name"] == dialogue.seed_tool and "tool_calls" not in row["chosen"][0]
    bad = tmp_path / "pairs.jsonl"
    bad.write_text(json.dumps(record) + "\n" + json.dumps({**record, "rejected": {"role": "user"}}) + "\n")
    with pytest.raises(InputError, match=r"pairs.jsonl.*2.*assistant turn"):
        load_pair_records(bad)


def test_the_diaforge_door_runs_it(tmp_path, capsys):
    """`diaforge data pairs` is `python -m diaforge.data_gen pairs`: on the fixture, 41 pairs of 5 kinds."""
    from diaforge.cli import main as diaforge_main

    out = tmp_path / "pairs"
    assert (
        diaforge_main(
            ["data", "pairs", str(ROOT / "tests/fixtures/dialogues_small.jsonl"), "--out", str(out)]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("41 preference pairs from 13 turns of 6 dialogues")
    stats = json.loads((out / "stats.json").read_text())
    assert stats["by_kind"]["missed_refusal"] == 0 and stats["pairs"] == 41
    assert (out / "pairs.jsonl").read_text() == (ROOT / "tests/fixtures/pairs_small.jsonl").read_text()
