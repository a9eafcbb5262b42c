"""Turn slicing with inference-faithful history (DiaFORGE §3.2, Appendix B).

Every assistant turn of a dialogue becomes one training sample:

* the **prompt** is the system prompt (with the candidate tools, as the model sees them at
  inference) and the dialogue up to that turn, rendered by the model's own chat template with
  ``add_generation_prompt=True``. Earlier turns' thoughts are left out by default
  (``history_reasoning="strip"``): at inference the model never sees its own past reasoning.
* the **target** is the turn itself (its thought, unless ``target_reasoning="drop"``, then its
  reply or its tool calls) followed by the end-of-turn token. Only these tokens are trained:
  every other label is -100.

The samples are tokenized here (``input_ids``, ``labels``) and handed to TRL as they are. Each one
is checked: the prompt's tokens must be a prefix of the tokens of prompt + target, and the target's
parts must appear in the trained span; a failure raises `SlicingError` naming the dialogue and the
turn. Samples longer than ``max_length`` lose whole earlier exchanges (``overflow=
"truncate_history"``) or are dropped (``overflow="drop"``); the target is never cut.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.errors import UserError
from diaforge.format import PromptFormat, openai_tools, render_assistant, system_prompt
from diaforge.schema import Dialogue, Turn

# Looked for after the target when `eot_token` is not set (auto); the earliest one wins.
EOT_CANDIDATES = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|end|>", "</s>")

IGNORE_INDEX = -100


class SlicingError(UserError):
    """A dialogue turn that cannot be sliced faithfully; the message names dialogue and turn."""


@dataclass(frozen=True)
class SliceConfig:
    """What a sample is made of: the prompt format (what the model sees and writes, recorded in
    ``prompt_format.json``) and the training-only length handling. See
    `diaforge.train.recipe_fields.DiaforgeArguments` for the meaning of each."""

    prompt_format: PromptFormat = PromptFormat()
    overflow: str = "truncate_history"
    max_length: int | None = None

    @classmethod
    def of(cls, **options: Any) -> SliceConfig:
        """`SliceConfig.of(history_reasoning="keep", max_length=2048)`: `PromptFormat` fields and
        the others in one call."""
        names = {f.name for f in dataclasses.fields(PromptFormat)}
        fmt = PromptFormat(**{k: v for k, v in options.items() if k in names})
        return cls(prompt_format=fmt, **{k: v for k, v in options.items() if k not in names})

    @classmethod
    def from_args(cls, args: Any, *, max_length: int | None) -> SliceConfig:
        return cls(prompt_format=args.prompt_format(), overflow=args.overflow, max_length=max_length)


@dataclass
class SliceStats:
    """What slicing produced; logged by `train/sft.py` and printed by `python -m diaforge.train.preview`."""

    dialogues: int = 0
    assistant_turns: int = 0
    samples: int = 0
    dropped_overlong: int = 0
    """Samples left out because even the shortest history did not fit in max_length."""
    truncated_history: int = 0
    """Samples kept after removing earlier exchanges (overflow=truncate_history)."""
    turns_removed: int = 0
    """Earlier turns removed from those samples, in total."""
    eot_tokens: Counter = field(default_factory=Counter)
    lengths: list[int] = field(default_factory=list, repr=False)
    target_lengths: list[int] = field(default_factory=list, repr=False)

    @property
    def total_tokens(self) -> int:
        return sum(self.lengths)

    @property
    def trained_tokens(self) -> int:
        return sum(self.target_lengths)

    def as_dict(self) -> dict[str, Any]:
        n = len(self.lengths)
        return {
            "dialogues": self.dialogues,
            "assistant_turns": self.assistant_turns,
            "samples": self.samples,
            "dropped_overlong": self.dropped_overlong,
            "truncated_history": self.truncated_history,
            "turns_removed": self.turns_removed,
            "total_tokens": self.total_tokens,
            "trained_tokens": self.trained_tokens,
            "trained_token_share": round(self.trained_tokens / self.total_tokens, 4) if n else 0.0,
            "mean_tokens": round(statistics.fmean(self.lengths), 1) if n else 0.0,
            "max_tokens": max(self.lengths) if n else 0,
            "mean_target_tokens": round(statistics.fmean(self.target_lengths), 1) if n else 0.0,
            "max_target_tokens": max(self.target_lengths) if n else 0,
            "eot_tokens": dict(self.eot_tokens),
        }

    def summary(self) -> str:
        s = self.as_dict()
        return (
            f"{s['samples']} samples from {s['dialogues']} dialogues ({s['assistant_turns']} assistant turns); "
            f"dropped over-long: {s['dropped_overlong']}, history truncated: {s['truncated_history']} "
            f"({s['turns_removed']} turns removed); tokens per sample: mean {s['mean_tokens']}, max "
            f"{s['max_tokens']}; trained tokens: {s['trained_tokens']} of {s['total_tokens']} "
            f"({100 * s['trained_token_share']:.1f}%); end of turn: "
            + (", ".join(f"{k} x{v}" for k, v in s["eot_tokens"].items()) or "-")
        )


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


class TurnSlicer:
    """Turns dialogues into pre-tokenized samples with loss on the target turn only.

    >>> slicer = TurnSlicer(tokenizer, SliceConfig(max_length=2048))
    >>> samples, stats = slicer.slice_all(dialogues)
    >>> samples[0].keys()
    dict_keys(['input_ids', 'labels', 'dialogue_id', 'turn_index', 'num_prompt_tokens', 'num_target_tokens',
               'eot_token', 'history_start'])
    """

    def __init__(self, tokenizer: Any, config: SliceConfig | None = None) -> None:
        self.tokenizer = tokenizer
        self.config = config or SliceConfig()
        if self.format.eot_token is not None:
            self.eot_candidates: tuple[str, ...] = (self.format.eot_token,)
        else:
            vocab = tokenizer.get_vocab()
            names = [tokenizer.eos_token, *EOT_CANDIDATES]
            self.eot_candidates = tuple(dict.fromkeys(t for t in names if t and t in vocab))
            if not self.eot_candidates:
                raise SlicingError(
                    "no end-of-turn token found in the tokenizer (none of the eos token, "
                    + ", ".join(EOT_CANDIDATES)
                    + "); set eot_token in the recipe"
                )

    # ---------------------------------------------------------------------------------------
    # rendering
    # ---------------------------------------------------------------------------------------

    @property
    def format(self) -> PromptFormat:
        return self.config.prompt_format

    def tools(self, dialogue: Dialogue) -> list[dict[str, Any]] | None:
        return self.format.tools(dialogue)

    def prompt_messages(self, dialogue: Dialogue, turn_index: int) -> list[dict[str, Any]]:
        return self.format.messages(dialogue, upto=turn_index)

    def target_message(self, turn: Turn) -> dict[str, Any]:
        return self.format.target_message(turn)

    def render(self, dialogue: Dialogue, turn_index: int, *, where: str | None = None) -> tuple[str, str]:
        """(prompt text, full text) of one turn: the template applied to the prefix with the
        generation prompt, and to the prefix plus the target message."""
        where = where or f"dialogue {dialogue.id!r}, turn {turn_index}"
        messages = self.prompt_messages(dialogue, turn_index)
        tools = self.tools(dialogue)
        try:
            prompt = self.tokenizer.apply_chat_template(
                messages, tools=tools, tokenize=False, add_generation_prompt=True
            )
            full = self.tokenizer.apply_chat_template(
                [*messages, self.target_message(dialogue.turns[turn_index])], tools=tools, tokenize=False
            )
        except Exception as exc:  # jinja errors, raise_exception() in templates
            raise SlicingError(f"{where}: the chat template failed: {exc}") from exc
        return prompt, full

    # ---------------------------------------------------------------------------------------
    # one sample
    # ---------------------------------------------------------------------------------------

    def _ids(self, text: str) -> list[int]:
        # The templates write BOS themselves; adding special tokens again would double it.
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _find_eot(self, rest: str, where: str) -> tuple[int, str]:
        best: tuple[int, str] | None = None
        for token in self.eot_candidates:
            pos = rest.find(token)
            if pos >= 0 and (best is None or pos < best[0] or (pos == best[0] and len(token) > len(best[1]))):
                best = (pos, token)
        if best is None:
            raise SlicingError(
                f"{where}: no end-of-turn token after the target (looked for "
                + ", ".join(self.eot_candidates)
                + "); set eot_token in the recipe"
            )
        return best

    def _check_target(self, dialogue: Dialogue, turn_index: int, trained: str, where: str) -> None:
        turn = dialogue.turns[turn_index]
        native = self.format.prompt_mode == "native"
        if self.format.target_reasoning == "keep" and turn.thought and turn.thought.strip() not in trained:
            hint = (
                "the chat template does not render reasoning_content; set target_reasoning: drop or "
                "prompt_mode: prompt"
                if native
                else "the chat template drops the think block of the final turn"
            )
            raise SlicingError(f"{where}: the target's thought is not in the trained span ({hint})")
        if native:
            wanted = [call.name for call in turn.tool_calls or []]
            if not turn.tool_calls and turn.content.strip():
                wanted.append(turn.content.strip())
        else:
            wanted = [render_assistant(turn, include_thought=False).strip()]
        for part in wanted:
            if part and part not in trained:
                raise SlicingError(
                    f"{where}: the chat template changes the target turn (its text {part[:60]!r} is not in the "
                    "trained span)"
                )

    def _check_prompt(self, dialogue: Dialogue, turn_index: int, start: int, prompt: str, where: str) -> None:
        if self.format.prompt_mode == "native":
            for tool in dialogue.candidate_tools:
                if tool.name not in prompt:
                    raise SlicingError(
                        f"{where}: the chat template ignores tools= (tool {tool.name!r} is not in the prompt); "
                        "use prompt_mode: prompt or a template that renders tools"
                    )
        if self.format.history_reasoning == "keep":
            for turn in dialogue.turns[start:turn_index]:
                if turn.role == "assistant" and turn.thought and turn.thought.strip() not in prompt:
                    raise SlicingError(
                        f"{where}: history_reasoning is 'keep' but the chat template leaves out the thoughts "
                        "of earlier turns; use history_reasoning: strip"
                    )

    def encode(self, dialogue: Dialogue, turn_index: int, start: int = 0) -> dict[str, Any]:
        """One sample for `dialogue.turns[turn_index]`, with the turns before `start` removed
        (`start` must be 0 or the index of a user turn). Raises `SlicingError` when the rendering
        is not faithful. No length limit is applied here."""
        where = f"dialogue {dialogue.id!r}, turn {turn_index}"
        if dialogue.turns[turn_index].role != "assistant":
            raise SlicingError(f"{where}: not an assistant turn")
        view = dialogue if start == 0 else dialogue.model_copy(update={"turns": dialogue.turns[start:]})
        prompt, full = self.render(view, turn_index - start, where=where)
        if not full.startswith(prompt):
            at = _first_difference(prompt, full)
            raise SlicingError(
                f"{where}: the chat template renders the history differently once the target follows "
                f"(first difference at character {at}: prompt {prompt[at : at + 30]!r}, "
                f"with target {full[at : at + 30]!r})"
            )
        self._check_prompt(dialogue, turn_index, start, prompt, where)
        pos, eot = self._find_eot(full[len(prompt) :], where)
        end = len(prompt) + pos + len(eot)
        prompt_ids = self._ids(prompt)
        full_ids = self._ids(full)
        cut_ids = self._ids(full[:end])
        n = len(prompt_ids)
        if full_ids[:n] != prompt_ids or full_ids[: len(cut_ids)] != cut_ids:
            bad = prompt_ids if full_ids[:n] != prompt_ids else cut_ids
            at = _first_difference(bad, full_ids)
            what = "the prompt" if bad is prompt_ids else "the target up to its end-of-turn token"
            raise SlicingError(
                f"{where}: the tokens of {what} are not a prefix of the tokens of prompt + target (first "
                f"difference at token {at}: {self.tokenizer.decode(bad[at : at + 3])!r} vs "
                f"{self.tokenizer.decode(full_ids[at : at + 3])!r}); the tokenizer merges across the boundary"
            )
        if len(cut_ids) <= n:
            raise SlicingError(f"{where}: the target renders to no tokens")
        self._check_target(dialogue, turn_index, full[len(prompt) : end], where)
        return {
            "input_ids": cut_ids,
            "labels": [IGNORE_INDEX] * n + cut_ids[n:],
            "dialogue_id": dialogue.id,
            "turn_index": turn_index,
            "num_prompt_tokens": n,
            "num_target_tokens": len(cut_ids) - n,
            "eot_token": eot,
            "history_start": start,
        }

    @staticmethod
    def history_starts(dialogue: Dialogue, turn_index: int) -> list[int]:
        """Where the kept history may begin: 0, then every user turn that follows an assistant turn
        (whole exchanges go, oldest first), up to the last user turn before the target."""
        turns = dialogue.turns
        starts = [0]
        for j in range(1, turn_index):
            if turns[j].role == "user" and turns[j - 1].role == "assistant":
                starts.append(j)
        return starts

    def slice_turn(self, dialogue: Dialogue, turn_index: int, stats: SliceStats | None = None):
        """The sample of one assistant turn, or None when it is dropped as over-long."""
        stats = stats if stats is not None else SliceStats()
        limit = self.config.max_length
        starts = self.history_starts(dialogue, turn_index)
        if self.config.overflow == "drop":
            starts = starts[:1]
        for start in starts:
            sample = self.encode(dialogue, turn_index, start)
            if limit is None or len(sample["input_ids"]) <= limit:
                if start > 0:
                    stats.truncated_history += 1
                    stats.turns_removed += start
                stats.samples += 1
                stats.lengths.append(len(sample["input_ids"]))
                stats.target_lengths.append(sample["num_target_tokens"])
                stats.eot_tokens[sample["eot_token"]] += 1
                return sample
        stats.dropped_overlong += 1
        return None

    def slice_dialogue(self, dialogue: Dialogue, stats: SliceStats | None = None) -> list[dict[str, Any]]:
        stats = stats if stats is not None else SliceStats()
        stats.dialogues += 1
        out = []
        for i in dialogue.trained_turns():  # a turn marked history only is never a target
            stats.assistant_turns += 1
            sample = self.slice_turn(dialogue, i, stats)
            if sample is not None:
                out.append(sample)
        return out

    def slice_all(
        self, dialogues: Iterable[Dialogue], *, progress: bool | None = False
    ) -> tuple[list[dict[str, Any]], SliceStats]:
        """Slice every dialogue; with `progress`, a bar on stderr (about 3 minutes per 5,000
        dialogues; `None`: on a terminal only)."""
        from diaforge.console import progress as progress_bar

        dialogues = list(dialogues)
        stats = SliceStats()
        samples: list[dict[str, Any]] = []
        for dialogue in progress_bar(dialogues, desc="turn slicing", unit="dialogue", enabled=progress):
            samples.extend(self.slice_dialogue(dialogue, stats))
        return samples, stats


def check_training_dialogues(dialogues: Iterable[Dialogue], path: str | Path) -> list[Dialogue]:
    """Refuse a training dialogue whose assistant calls a tool it was never offered: the model
    would learn to call tools outside its candidate list. `InputError` names the file, the
    dialogue and the field."""
    from diaforge.errors import InputError

    out = list(dialogues)
    for d in out:
        offered = {t.name for t in d.candidate_tools}
        for i, turn in enumerate(d.turns):
            for j, call in enumerate(turn.tool_calls or []):
                if call.name not in offered:
                    raise InputError(
                        f"calls tool {call.name!r}, which is not among its candidate_tools",
                        path=path,
                        record=d.id,
                        field=f"turns[{i}].tool_calls[{j}].name",
                    )
    return out


def slice_dialogues(
    dialogues: Iterable[Dialogue], tokenizer: Any, config: SliceConfig | None = None
) -> tuple[list[dict[str, Any]], SliceStats]:
    """Slice every assistant turn of `dialogues`; returns the samples and their statistics."""
    return TurnSlicer(tokenizer, config).slice_all(dialogues)


def to_dataset(samples: list[dict[str, Any]]):
    """A `datasets.Dataset` of the samples (all columns; the trainer keeps input_ids and labels)."""
    from datasets import Dataset

    if not samples:
        raise SlicingError("slicing produced no samples (every turn was dropped as over-long?)")
    return Dataset.from_list(samples)


def dialogue_texts(dialogues: Iterable[Dialogue]) -> list[str]:
    """Plain text of dialogues as a model sees them (system prompt with tools, turns with thoughts,
    tool specs as JSON): the corpus the tiny test tokenizer is trained on."""
    texts: list[str] = []
    for d in dialogues:
        texts.append(system_prompt(d.candidate_tools))
        texts.append(json.dumps(openai_tools(d.candidate_tools), ensure_ascii=False))
        for turn in d.turns:
            texts.append(render_assistant(turn) if turn.role == "assistant" else turn.content)
    return texts
