"""The teacher's `lookup` reasoning style: the signature is copied from the listing, each value is
quoted from the user's own words, and the dialogue is otherwise the `summary` style's."""

from __future__ import annotations

import json

import pytest

from diaforge.data_gen.agents.lookup import chosen_option, completion_thought, selection_thought, value_quote
from diaforge.format import compact_tool, tool_signature
from diaforge.schema import Tool


def _tool() -> Tool:
    return Tool(
        name="get_gl_account_balance",
        description="Returns the balance of a general ledger account.",
        parameters={
            "type": "object",
            "properties": {
                "gl_account": {"type": "string"},
                "quantity": {"type": "number"},
                "file_format": {"type": "string", "enum": ["xlsx", "csv"]},
            },
            "required": ["gl_account", "quantity"],
        },
    )


def test_the_signature_is_the_head_of_the_compact_listing_line() -> None:
    tool = _tool()
    assert (
        tool_signature(tool)
        == 'get_gl_account_balance(gl_account*: string, quantity*: number, file_format: "xlsx"|"csv")'
    )
    assert compact_tool(tool).startswith(f"- {tool_signature(tool)}: ")


@pytest.mark.parametrize(
    ("turns", "key", "value", "quote"),
    [
        (["Sure, the GL account is 292134."], "gl_account", "292134", "GL account is 292134"),
        (["Go with LM-001993 as the matter ID."], "matter_id", "LM-001993", "LM-001993 as the matter ID"),
        (["set the plant to QX63", "quantity: 6. Thanks!"], "quantity", 6.0, "quantity: 6"),
        # "6" inside "QX63" is not the value; the latest turn that holds it as a word is quoted.
        (["quantity: 6", "set the plant to QX63"], "quantity", 6, "quantity: 6"),
        (["The ids are A-1, B-2 and C-3."], "ids", ["A-1", "B-2", "C-3"], "ids are A-1, B-2 and C-3"),
        (["It is 2026-01-05, nothing else."], "due_date", "2026-01-05", "2026-01-05"),
        (["I said nothing of it."], "gl_account", "292134", None),
        (["yes, it is urgent"], "is_urgent", True, None),
    ],
)
def test_value_quote(turns, key, value, quote) -> None:
    assert value_quote(turns, key, value) == quote


def test_completion_thought_asks_then_calls() -> None:
    tool = _tool()
    asking = completion_thought(tool, {}, ["gl_account", "quantity"], ["gl_account", "quantity"], ["Hi"])
    assert asking == (
        f"The tool is {tool_signature(tool)}. Required: gl_account, quantity. Nothing is known yet. "
        "Missing: gl_account, quantity. I ask for gl_account, quantity."
    )
    users = ["the GL account is 292134", "quantity: 6"]
    calling = completion_thought(tool, {"gl_account": "292134", "quantity": 6.0}, [], [], users)
    assert calling.endswith(
        'Known: gl_account: `GL account is 292134` gives "292134"; quantity: `quantity: 6` gives 6.0. '
        "Nothing is missing, so I call it."
    )


@pytest.mark.slow(reason="generates a corpus end to end")
def test_generated_lookup_dialogues_copy_what_they_claim(tmp_path) -> None:
    """Every lookup thought of a generated corpus holds the gold tool's signature exactly as the
    listing shows it, and every quote is words the user said; the turns other than thoughts are
    those of the summary style for the same seeds."""
    import asyncio

    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import GenerationConfig

    runs = {}
    for style in ("summary", "lookup"):
        cfg = GenerationConfig(
            catalogue="data_gen/assets/catalogue_train.json",
            out=str(tmp_path / style),
            num_dialogues=12,
            seed=4,
            reasoning=style,
            plots=False,
            export=False,
            progress=False,
            encoder="tfidf",
        )
        asyncio.run(generate(cfg))
        runs[style] = [
            json.loads(line) for line in (tmp_path / style / "dialogues.jsonl").read_text().splitlines()
        ]
    assert len(runs["lookup"]) == len(runs["summary"]) > 0
    checked = 0
    for a, b in zip(runs["summary"], runs["lookup"], strict=True):
        assert [(t["role"], t.get("content"), t.get("tool_calls")) for t in a["turns"]] == [
            (t["role"], t.get("content"), t.get("tool_calls")) for t in b["turns"]
        ]
        gold = next(Tool.model_validate(c) for c in b["candidate_tools"] if c["name"] == b["seed_tool"])
        said = " ".join(t["content"] for t in b["turns"] if t["role"] == "user")
        for t in b["turns"]:
            if t["role"] == "assistant" and t.get("phase") == "argument_completion":
                assert f"The tool is {tool_signature(gold)}. " in t["thought"]
                if t["thought"].startswith("The user chose "):
                    assert t["thought"].split(". The tool is ")[0].endswith(f"({gold.name})")
                for quote in t["thought"].split("`")[1::2]:
                    checked += 1
                    assert quote in said
    assert checked > 10


def test_the_chosen_option_is_copied_from_the_selection_thought() -> None:
    tool = _tool()
    asked = selection_thought(
        ["export_trial_balance", "get_gl_account_balance"],
        {
            "export_trial_balance": "export the trial balance",
            "get_gl_account_balance": "the balance of one account",
        },
    )
    assert asked.startswith(
        "Candidates that match the request: export_trial_balance, get_gl_account_balance. "
    )
    assert (
        "What each does: export the trial balance (export_trial_balance); the balance of one account "
        in asked
    )
    chosen = chosen_option(tool, ["an older thought", asked])
    assert chosen == "the balance of one account (get_gl_account_balance)"
    assert chosen_option(tool, ["Candidates that match the request: get_gl_account_balance."]) is None
    thought = completion_thought(tool, {}, ["gl_account"], ["gl_account"], ["the second"], chosen)
    assert thought.startswith(f"The user chose {chosen}. The tool is {tool_signature(tool)}.")


def test_the_copy_rule_reads_every_lookup_thought_the_teacher_writes(tmp_path) -> None:
    """Writer and reader of the lookup template, tied (both import `diaforge.format.lookup_thought`):
    on a corpus generated from the bundled training catalogue, the rule finds the option the user
    chose and the settled tool of every teacher thought, both the gold tool, and the settled tool's
    signature span exactly as the rule holds it. The names after the options are judged by the
    rule's word-overlap score (`name_matches`), which is a heuristic: it accepts the teacher's
    name for at least 99 % of the thoughts (measured 585 of 586 and 832 of 839 on two larger
    corpora; the misses are vague options such as "look up the leads")."""
    import asyncio

    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import GenerationConfig
    from diaforge.format.lookup_thought import CHOSE, TOOL_IS, WHAT_EACH_DOES, lookup_tail
    from diaforge.llm.thought_copy import ThoughtCopy

    cfg = GenerationConfig(
        catalogue="data_gen/assets/catalogue_train.json",
        out=str(tmp_path / "lookup"),
        num_dialogues=60,
        seed=7,
        reasoning="lookup",
        plots=False,
        export=False,
        progress=False,
        encoder="tfidf",
    )
    asyncio.run(generate(cfg))
    records = [
        json.loads(line) for line in (tmp_path / "lookup" / "dialogues.jsonl").read_text().splitlines()
    ]
    seen = {WHAT_EACH_DOES: 0, CHOSE: 0, TOOL_IS: 0}
    thoughts, refused = 0, []
    for record in records:
        candidates = [Tool.model_validate(c) for c in record["candidate_tools"]]
        gold = next(t for t in candidates if t.name == record["seed_tool"])
        reader = ThoughtCopy(candidates)
        for turn in record["turns"]:
            thought = turn.get("thought") if turn["role"] == "assistant" else None
            if not thought:
                continue
            thoughts += 1
            seen.update({k: v + (k in thought) for k, v in seen.items()})
            if reader.broken(thought) is not None:
                refused.append(thought)
            if CHOSE in thought:
                assert reader.chosen(thought) == gold.name, thought
            if TOOL_IS in thought:
                tail = thought[thought.rfind(TOOL_IS) + len(TOOL_IS) :]
                assert tail.startswith(lookup_tail(gold)) and reader.by_name[gold.name].lookup == lookup_tail(
                    gold
                )
    assert all(n >= 5 for n in seen.values()), seen
    assert len(refused) <= thoughts // 100, refused
