"""Turn slicing: the trained tokens are exactly the target turn plus its end-of-turn token, and
everything before them is exactly the prompt as the chat template renders it for inference."""

from __future__ import annotations

import json

import pytest
from _train_support import TEMPLATE_SPECS

from diaforge.errors import InputError
from diaforge.format import render_assistant, system_prompt, tool_listing
from diaforge.train.slicing import (
    IGNORE_INDEX,
    SliceConfig,
    SlicingError,
    TurnSlicer,
    slice_dialogues,
    to_dataset,
)


def expected_target(turn, *, template: str, mode: str, include_thought: bool) -> str:
    """The text the target turn must decode to, written out per template by hand."""
    eot = TEMPLATE_SPECS[template]["eot"]
    if mode == "prompt":
        body = render_assistant(turn, include_thought=include_thought)
        return (body.strip() if TEMPLATE_SPECS[template]["trim"] else body) + eot
    if template == "chatml":  # the tiny model's ChatML template with tools and reasoning_content
        text = f"<think>\n{turn.thought}\n</think>\n" if include_thought and turn.thought else ""
        text += turn.content
        for call in turn.tool_calls or []:
            args = json.dumps(call.args, ensure_ascii=False)
            text += f'<tool_call>{{"name": "{call.name}", "arguments": {args}}}</tool_call>'
        return text + eot
    if template == "llama3":  # no reasoning rendered; calls as {"name", "parameters"}
        if turn.tool_calls:
            calls = [
                f'{{"name": "{c.name}", "parameters": {json.dumps(c.args, ensure_ascii=False)}}}'
                for c in turn.tool_calls
            ]
            return "\n".join(calls) + eot
        return turn.content.strip() + eot
    raise AssertionError(f"no native expectation for {template}")


def check_samples(samples, dialogues, tokenizer, slicer: TurnSlicer, *, template: str) -> None:
    config = slicer.config
    by_id = {d.id: d for d in dialogues}
    expected_keys = [(d.id, i) for d in dialogues for i in d.assistant_turns()]
    assert [(s["dialogue_id"], s["turn_index"]) for s in samples] == expected_keys
    eot = TEMPLATE_SPECS[template]["eot"]
    eot_id = tokenizer.convert_tokens_to_ids(eot)
    for sample in samples:
        d, i = by_id[sample["dialogue_id"]], sample["turn_index"]
        ids, labels, n = sample["input_ids"], sample["labels"], sample["num_prompt_tokens"]
        where = f"{d.id} turn {i}"
        assert len(ids) == len(labels), where
        assert labels[:n] == [IGNORE_INDEX] * n, where
        assert labels[n:] == ids[n:], where
        assert sample["num_target_tokens"] == len(ids) - n > 0, where

        # The trained tokens decode to the target turn and its end-of-turn token, nothing more.
        trained = tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab != IGNORE_INDEX])
        want = expected_target(
            d.turns[i],
            template=template,
            mode=config.prompt_format.prompt_mode,
            include_thought=config.prompt_format.target_reasoning == "keep",
        )
        assert trained == want, where
        assert ids[-1] == eot_id, where  # cut right after the end-of-turn token

        # Everything before is exactly the prompt the model gets at inference.
        prompt_text = tokenizer.apply_chat_template(
            slicer.prompt_messages(d, i), tools=slicer.tools(d), tokenize=False, add_generation_prompt=True
        )
        assert tokenizer.decode(ids[:n]) == prompt_text, where
        assert ids[:n] == tokenizer(prompt_text, add_special_tokens=False)["input_ids"], where

        # Earlier thoughts: absent from the prompt when stripped, present when kept.
        for turn in d.turns[:i]:
            if turn.role == "assistant" and turn.thought:
                assert (turn.thought in prompt_text) == (config.prompt_format.history_reasoning == "keep"), (
                    where
                )
        if config.prompt_format.target_reasoning == "drop":
            assert "<think>" not in trained and d.turns[i].thought not in trained, where


# SmolLM2's real tokenizer with its own ChatML template and with the Gemma-style one; the tiny
# tokenizer with all three. (SmolLM2's tokenizer under the Llama-3-style template merges the
# generation prompt's "\n\n" with the target's first characters: see the test further down.)
PROMPT_CASES = [
    (tok, template, history, target)
    for tok, template in (
        ("smollm2", "chatml"),
        ("smollm2", "gemma"),
        ("tiny", "chatml"),
        ("tiny", "llama3"),
        ("tiny", "gemma"),
    )
    for history in ("strip", "keep")
    for target in ("keep", "drop")
]


@pytest.mark.parametrize(("tok", "template", "history", "target"), PROMPT_CASES)
def test_prompt_mode_labels_are_exactly_the_target(tokenizer_for, dialogues, tok, template, history, target):
    tokenizer = tokenizer_for(tok, template)
    slicer = TurnSlicer(tokenizer, SliceConfig.of(history_reasoning=history, target_reasoning=target))
    samples, stats = slicer.slice_all(dialogues)
    assert stats.samples == len(samples) == sum(len(d.assistant_turns()) for d in dialogues) == 19
    assert stats.eot_tokens == {TEMPLATE_SPECS[template]["eot"]: 19}
    check_samples(samples, dialogues, tokenizer, slicer, template=template)


NATIVE_CASES = [
    ("tiny", "chatml", "strip", "keep"),
    ("tiny", "chatml", "keep", "keep"),
    ("tiny", "chatml", "strip", "drop"),
    ("tiny", "chatml", "keep", "drop"),
    ("tiny", "llama3", "strip", "drop"),
]


@pytest.mark.parametrize(("tok", "template", "history", "target"), NATIVE_CASES)
def test_native_mode_labels_are_exactly_the_target(tokenizer_for, dialogues, tok, template, history, target):
    tokenizer = tokenizer_for(tok, template)
    config = SliceConfig.of(prompt_mode="native", history_reasoning=history, target_reasoning=target)
    slicer = TurnSlicer(tokenizer, config)
    samples, _ = slicer.slice_all(dialogues)
    check_samples(samples, dialogues, tokenizer, slicer, template=template)
    # The tools travel through the template, not the system prompt.
    first = tokenizer.decode(samples[0]["input_ids"])
    assert "Available tools:" not in first
    assert all(t.name in first for t in dialogues[0].candidate_tools)


def test_native_mode_with_a_template_without_tools_fails(tokenizer_for, dialogues):
    slicer = TurnSlicer(tokenizer_for("tiny", "gemma"), SliceConfig.of(prompt_mode="native"))
    with pytest.raises(SlicingError, match=r"dialogue 'fx-001', turn 1: the chat template ignores tools="):
        slicer.slice_all(dialogues)


def test_native_mode_with_a_template_that_drops_reasoning_fails(tokenizer_for, dialogues):
    slicer = TurnSlicer(tokenizer_for("tiny", "llama3"), SliceConfig.of(prompt_mode="native"))
    with pytest.raises(SlicingError, match=r"turn 1: the target's thought .*target_reasoning: drop"):
        slicer.slice_all(dialogues)
    keep = SliceConfig.of(prompt_mode="native", history_reasoning="keep", target_reasoning="drop")
    with pytest.raises(SlicingError, match=r"turn 3: history_reasoning is 'keep'"):
        TurnSlicer(tokenizer_for("tiny", "llama3"), keep).slice_all(dialogues)


# ------------------------------------------------------------------------------------------
# Prefix checks
# ------------------------------------------------------------------------------------------


def test_history_rendered_differently_with_the_target_fails_naming_dialogue_and_turn(
    tiny_tokenizer, dialogues
):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    # A template whose system line depends on the number of messages: the prompt is not a prefix.
    tok.chat_template = (
        "{{- '<|im_start|>system\\n' + messages|length|string + ' messages<|im_end|>\\n' }}"
        "{%- for m in messages[1:] %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    with pytest.raises(
        SlicingError, match=r"dialogue 'fx-001', turn 1: the chat template renders the history"
    ):
        slice_dialogues(dialogues, tok)


def test_tokens_merging_across_the_prompt_boundary_fail(tiny_tokenizer, dialogues):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    # The generation prompt ends in a space, which byte-level BPE glues to the next word.
    tok.chat_template = (
        "{%- for m in messages %}{{- m.role + ': ' + m.content + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- 'assistant: ' }}{%- endif %}"
    )
    with pytest.raises(
        SlicingError, match=r"dialogue 'fx-\d+', turn \d+: the tokens of the prompt are not a prefix"
    ):
        slice_dialogues(dialogues, tok, SliceConfig.of(target_reasoning="drop"))


def test_real_tokenizer_merging_the_generation_prompt_with_the_target_fails(tokenizer_for, dialogues):
    # SmolLM2's tokenizer encodes "\n\n<think>" differently from "\n\n" + "<think>": under a
    # template whose generation prompt ends in "\n\n" the prompt tokens would differ from what
    # the model sees at inference, so slicing refuses instead of training on a different prefix.
    tok = tokenizer_for("smollm2", "llama3")
    with pytest.raises(
        SlicingError, match=r"dialogue 'fx-001', turn 1: the tokens of the prompt are not a prefix"
    ):
        slice_dialogues(dialogues, tok)


def test_explicit_and_missing_end_of_turn_token(tokenizer_for, dialogues):
    tok = tokenizer_for("tiny", "chatml")
    samples, stats = slice_dialogues(dialogues[:1], tok, SliceConfig.of(eot_token="<|im_end|>"))
    assert stats.eot_tokens == {"<|im_end|>": 3}
    with pytest.raises(SlicingError, match=r"no end-of-turn token after the target .*<end_of_turn>"):
        slice_dialogues(dialogues[:1], tok, SliceConfig.of(eot_token="<end_of_turn>"))


def test_trailing_newline_after_the_end_of_turn_token_is_not_kept(tokenizer_for, dialogues):
    tok = tokenizer_for("tiny", "chatml")
    samples, _ = slice_dialogues(dialogues[:1], tok)
    full = tok.apply_chat_template(
        TurnSlicer(tok).prompt_messages(dialogues[0], 1)
        + [TurnSlicer(tok).target_message(dialogues[0].turns[1])],
        tokenize=False,
    )
    assert full.endswith("<|im_end|>\n")
    assert tok.decode(samples[0]["input_ids"]) == full[:-1]


# ------------------------------------------------------------------------------------------
# Over-long samples
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("template", ["chatml", "gemma", "llama3"])
def test_truncate_history_keeps_system_last_user_turn_and_whole_target(tokenizer_for, dialogues, template):
    tok = tokenizer_for("tiny", template)
    d = next(x for x in dialogues if x.id == "fx-005")  # five assistant turns
    i = d.assistant_turns()[-1]
    slicer = TurnSlicer(tok, SliceConfig())
    starts = slicer.history_starts(d, i)
    full = slicer.encode(d, i, 0)
    shortest = slicer.encode(d, i, starts[-1])
    limit = (len(full["input_ids"]) + len(shortest["input_ids"])) // 2

    samples, stats = slice_dialogues([d], tok, SliceConfig.of(max_length=limit))
    last = samples[-1]
    assert last["turn_index"] == i and last["history_start"] > 0
    assert len(last["input_ids"]) <= limit
    assert stats.truncated_history >= 1 and stats.turns_removed >= 2 and stats.dropped_overlong == 0
    # The target is untouched; the system prompt and the last user turn are still there.
    n_full, n_last = full["num_prompt_tokens"], last["num_prompt_tokens"]
    assert last["input_ids"][n_last:] == full["input_ids"][n_full:]
    prompt = tok.decode(last["input_ids"][:n_last])
    assert d.turns[i - 1].content.strip() in prompt
    assert d.turns[1].content not in prompt  # the first exchange went first
    assert system_prompt(d.candidate_tools).strip().splitlines()[0] in prompt

    # 'drop' drops what does not fit; samples + dropped = assistant turns.
    kept, dropped = slice_dialogues([d], tok, SliceConfig.of(max_length=limit, overflow="drop"))
    assert dropped.dropped_overlong >= 1 and dropped.truncated_history == 0
    assert dropped.samples + dropped.dropped_overlong == dropped.assistant_turns == 5
    assert all(len(s["input_ids"]) <= limit for s in kept)

    # Too long even with the shortest history: dropped under both policies, never cut.
    tiny_limit = len(shortest["input_ids"]) - 1
    _, stats = slice_dialogues([d], tok, SliceConfig.of(max_length=tiny_limit))
    assert stats.samples + stats.dropped_overlong == 5
    assert all(length <= tiny_limit for length in stats.lengths)


def test_no_samples_is_an_error(tokenizer_for, dialogues):
    samples, stats = slice_dialogues(
        dialogues, tokenizer_for("tiny", "chatml"), SliceConfig.of(max_length=10)
    )
    assert samples == [] and stats.dropped_overlong == 19
    with pytest.raises(SlicingError, match="no samples"):
        to_dataset(samples)


# ------------------------------------------------------------------------------------------
# System prompt file, statistics, dataset
# ------------------------------------------------------------------------------------------


def test_system_prompt_file_fills_in_the_tools(tmp_path, tokenizer_for, dialogues):
    from diaforge.train.recipe_fields import DiaforgeArguments

    tok = tokenizer_for("tiny", "chatml")
    d = dialogues[0]
    with_slot = tmp_path / "with_slot.txt"
    with_slot.write_text("You are the ACME helper.\nTools:\n{tools}\nBe brief.\n")
    without_slot = tmp_path / "without_slot.txt"
    without_slot.write_text("You are the ACME helper.\n")
    for path, marker in (
        (with_slot, "Tools:\n" + tool_listing(d.candidate_tools) + "\nBe brief."),
        (without_slot, "Available tools:\n{"),
    ):
        args = DiaforgeArguments(dataset_path=["x"], system_prompt_file=str(path))
        slicer = TurnSlicer(tok, SliceConfig.from_args(args, max_length=None))
        system = slicer.prompt_messages(d, 1)[0]["content"]
        assert system.startswith("You are the ACME helper.") and marker in system
        assert system.endswith(tool_listing(d.candidate_tools)) or system.endswith("Be brief.")
        assert "{tools}" not in system
    args = DiaforgeArguments(dataset_path=["x"], system_prompt_file=str(tmp_path / "missing.txt"))
    with pytest.raises(InputError, match="missing.txt: system prompt file not found"):
        SliceConfig.from_args(args, max_length=None)


def test_stats_and_dataset(tokenizer_for, dialogues):
    samples, stats = slice_dialogues(dialogues, tokenizer_for("tiny", "chatml"), SliceConfig())
    s = stats.as_dict()
    assert s["dialogues"] == 6 and s["samples"] == s["assistant_turns"] == 19
    assert s["total_tokens"] == sum(len(x["input_ids"]) for x in samples)
    assert s["trained_tokens"] == sum(x["num_target_tokens"] for x in samples)
    assert 0 < s["trained_token_share"] < 0.5
    assert s["max_tokens"] == max(len(x["input_ids"]) for x in samples)
    assert "19 samples from 6 dialogues" in stats.summary()
    ds = to_dataset(samples)
    assert len(ds) == 19
    assert {
        "input_ids",
        "labels",
        "dialogue_id",
        "turn_index",
        "num_prompt_tokens",
        "num_target_tokens",
    } <= set(ds.column_names)
    assert ds[0]["labels"] == samples[0]["labels"]


def test_slicing_is_deterministic(tokenizer_for, dialogues):
    tok = tokenizer_for("tiny", "llama3")
    a, _ = slice_dialogues(dialogues, tok, SliceConfig.of(history_reasoning="keep"))
    b, _ = slice_dialogues(dialogues, tok, SliceConfig.of(history_reasoning="keep"))
    assert a == b


@pytest.mark.parametrize("history", ["strip", "keep"])
def test_compact_tool_style_labels_and_prompt(tokenizer_for, dialogues, history):
    tokenizer = tokenizer_for("smollm2", "chatml")
    compact = TurnSlicer(tokenizer, SliceConfig.of(history_reasoning=history, tool_style="compact"))
    samples, _ = compact.slice_all(dialogues)
    check_samples(samples, dialogues, tokenizer, compact, template="chatml")
    full, _ = TurnSlicer(tokenizer, SliceConfig.of(history_reasoning=history)).slice_all(dialogues)
    owners = [d for d in dialogues for _ in d.assistant_turns()]
    for s_compact, s_full, d in zip(samples, full, owners, strict=True):
        prompt = tokenizer.decode(s_compact["input_ids"][: s_compact["num_prompt_tokens"]])
        assert tool_listing(d.candidate_tools, "compact") in prompt
        assert s_compact["num_prompt_tokens"] < s_full["num_prompt_tokens"]
        assert (
            s_compact["labels"][s_compact["num_prompt_tokens"] :]
            == s_full["labels"][s_full["num_prompt_tokens"] :]
        )
