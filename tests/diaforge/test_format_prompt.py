"""`PromptFormat`: one place for the options that change what a model sees, their allowed values
defined once, `prompt_format.json` written and read back, and how `eval` chooses the format."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from _repo import ROOT

from diaforge.errors import InputError
from diaforge.format import (
    HISTORY_REASONING,
    PROMPT_FORMAT_FILE,
    PROMPT_MODES,
    TARGET_REASONING,
    TOOL_STYLES,
    PromptFormat,
    native_system_prompt,
    render_assistant,
    system_prompt,
    tool_listing,
)
from diaforge.schema import load_dialogues

DIALOGUES = load_dialogues(ROOT / "tests" / "fixtures" / "dialogues_small.jsonl")


def test_each_options_allowed_values_are_defined_once() -> None:
    """`grep` for the value lists over the toolkit's code finds each one once, in diaforge/format/options.py."""
    sources = [
        p
        for d in ("diaforge", "data_gen", "train", "eval", "pipeline", "bench", "scripts")
        for p in (ROOT / d).rglob("*.py")
    ]
    for values in (PROMPT_MODES, TOOL_STYLES, HISTORY_REASONING, TARGET_REASONING):
        a, b = (re.escape(json.dumps(v)) for v in values)
        pattern = re.compile(rf"[(\[]\s*{a}\s*,\s*{b}\s*,?\s*[)\]]")
        found = [(p.relative_to(ROOT), len(pattern.findall(p.read_text(encoding="utf-8")))) for p in sources]
        found = [(str(p), n) for p, n in found if n]
        assert found == [("diaforge/format/options.py", 1)], (values, found)


def test_bad_values_name_the_option() -> None:
    for name, allowed in PromptFormat.CHOICES.items():
        with pytest.raises(ValueError, match=name):
            PromptFormat(**{name: "sideways"})
        for value in allowed:
            assert getattr(PromptFormat(**{name: value}), name) == value
    with pytest.raises(ValueError, match="system_prompt"):
        PromptFormat(system_prompt="  ")


def test_system_text_fills_the_tools_as_training_does() -> None:
    d = DIALOGUES[0]
    compact = tool_listing(d.candidate_tools, "compact")
    assert PromptFormat().system_text(d) == system_prompt(d.candidate_tools)
    assert PromptFormat(tool_style="compact").system_text(d) == system_prompt(
        d.candidate_tools, tool_style="compact"
    )
    slot = PromptFormat(tool_style="compact", system_prompt="Help.\nTools:\n{tools}\nBe brief.")
    assert slot.system_text(d) == f"Help.\nTools:\n{compact}\nBe brief."
    appended = PromptFormat(tool_style="compact", system_prompt="Help.")
    assert appended.system_text(d) == f"Help.\n\nAvailable tools:\n{compact}"
    native = PromptFormat(prompt_mode="native", system_prompt="Help with {tools}.")
    assert native.system_text(d) == "Help with {tools}." and native.tools(d)
    assert PromptFormat(prompt_mode="native").system_text(d) == native_system_prompt()
    messages = slot.messages(d, upto=2)
    assert messages[0]["content"] == slot.system_text(d) and len(messages) == 3


def test_prompt_format_json_round_trip_and_damage(tmp_path) -> None:
    fmt = PromptFormat(
        tool_style="compact", target_reasoning="drop", system_prompt="Hi {tools}", eot_token="<|im_end|>"
    )
    path = fmt.save(tmp_path)
    assert path == tmp_path / PROMPT_FORMAT_FILE
    data = json.loads(path.read_text())
    assert data["system_prompt"] == "Hi {tools}" and len(data["system_prompt_sha256"]) == 64
    assert PromptFormat.load(tmp_path) == fmt
    assert PromptFormat.load(tmp_path / "nowhere") is None
    path.write_text(json.dumps({**data, "tool_style": "yaml"}))
    with pytest.raises(InputError, match=rf"{PROMPT_FORMAT_FILE}: tool_style must be one of"):
        PromptFormat.load(tmp_path)
    path.write_text(json.dumps({**data, "system_prompt": "edited"}))
    with pytest.raises(InputError, match="system_prompt_sha256 does not match"):
        PromptFormat.load(tmp_path)
    path.write_text(json.dumps({**data, "colour": "blue"}))
    with pytest.raises(InputError, match="unknown key 'colour'"):
        PromptFormat.load(tmp_path)
    path.write_text("{")
    with pytest.raises(InputError, match="invalid JSON"):
        PromptFormat.load(tmp_path)


def test_recipe_builds_the_same_format(tmp_path) -> None:
    from diaforge.train.recipe_fields import DiaforgeArguments

    (tmp_path / "system.txt").write_text("Help.\n{tools}\n")
    args = DiaforgeArguments(
        dataset_path=["x"],
        tool_style="compact",
        target_reasoning="drop",
        system_prompt_file=str(tmp_path / "system.txt"),
    )
    assert args.prompt_format() == PromptFormat(
        tool_style="compact", target_reasoning="drop", system_prompt="Help.\n{tools}"
    )
    # The recipe's defaults are the format's, with the built-in prompt written out as its template
    # (so prompt_format.json records its text and hash).
    from diaforge.format import reference_prompt_template

    defaults = DiaforgeArguments(dataset_path=["x"]).prompt_format()
    assert defaults == PromptFormat(system_prompt=reference_prompt_template("prompt"))


def test_choose_prompt_format(tmp_path) -> None:
    from diaforge.eval.models import choose_prompt_format

    none = choose_prompt_format(tmp_path)
    assert none.prompt_format == PromptFormat() and none.source == "defaults" and not none.warnings()
    given = choose_prompt_format(tmp_path, {"tool_style": "compact", "prompt_mode": None})
    assert given.prompt_format == PromptFormat(tool_style="compact") and given.source == "options"
    recorded = PromptFormat(tool_style="compact", target_reasoning="drop", system_prompt="Be brief.")
    recorded.save(tmp_path)
    read = choose_prompt_format(tmp_path, {"tool_style": None})
    assert read.prompt_format == recorded and read.source == PROMPT_FORMAT_FILE and read.overridden == {}
    same = choose_prompt_format(tmp_path, {"tool_style": "compact"})
    assert same.prompt_format == recorded and not same.warnings()
    other = choose_prompt_format(tmp_path, {"tool_style": "json", "system_prompt": "Be long."})
    assert other.prompt_format == dataclasses.replace(recorded, tool_style="json", system_prompt="Be long.")
    assert set(other.overridden) == {"tool_style", "system_prompt"}
    lines = other.warnings()
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert lines[0].startswith("warning: --tool-style 'json' overrides tool_style 'compact' recorded in")
    assert lines[1].startswith("warning: --system-prompt-file a custom prompt (sha256 ")
    assert other.as_dict()["overridden"]["tool_style"] == {"recorded": "compact", "given": "json"}


def test_auto_budget_counts_turns_as_the_format_has_them_written() -> None:
    from diaforge.eval.budget import AUTO_MIN_MARGIN, auto_max_new_tokens, reference_turn_texts

    bench = DIALOGUES
    keep = auto_max_new_tokens(bench, len, "characters")
    drop = auto_max_new_tokens(bench, len, "characters", PromptFormat(target_reasoning="drop"))
    turns = [t for d in bench for t in d.turns if t.role == "assistant"]
    assert reference_turn_texts(bench, PromptFormat(target_reasoning="drop")) == [
        render_assistant(t, include_thought=False) for t in turns
    ]
    assert keep.longest_reference_turn == max(len(render_assistant(t)) for t in turns)
    assert drop.longest_reference_turn == max(len(render_assistant(t, include_thought=False)) for t in turns)
    assert drop.longest_reference_turn < keep.longest_reference_turn
    assert drop.max_new_tokens == drop.longest_reference_turn + max(
        AUTO_MIN_MARGIN, -(-drop.longest_reference_turn // 4)
    )
    assert (keep.with_thoughts, drop.with_thoughts) == (True, False)
    assert "no thought" in drop.describe()


def test_prompt_format_file_prompts_a_base_model_in_its_tuned_format(tmp_path) -> None:
    from diaforge.eval.models import choose_prompt_format

    tuned, base = tmp_path / "tuned", tmp_path / "base"
    base.mkdir()
    fmt = PromptFormat(tool_style="compact", system_prompt="Short {tools}")
    fmt.save(tuned)
    chosen = choose_prompt_format(base, {}, tuned / PROMPT_FORMAT_FILE)
    assert chosen.prompt_format == fmt and chosen.source == "--prompt-format" and not chosen.warnings()
    assert choose_prompt_format(base, {}, tuned).prompt_format == fmt  # the folder works too
    # A model with its own, different file: the named file wins, with a warning saying what changed;
    # an option over the named file warns as over any recorded format.
    PromptFormat(tool_style="json").save(base)
    chosen = choose_prompt_format(base, {"history_reasoning": "keep"}, tuned)
    assert chosen.prompt_format == dataclasses.replace(fmt, history_reasoning="keep")
    line, option = chosen.warnings()
    assert option.startswith("warning: --history-reasoning 'keep' overrides history_reasoning 'strip'")
    assert line.startswith(f"warning: --prompt-format {tuned / PROMPT_FORMAT_FILE} replaces the model's own")
    assert "tool_style 'json' -> 'compact'" in line
    with pytest.raises(InputError, match="no prompt_format.json there"):
        choose_prompt_format(base, {}, tmp_path / "nowhere")
