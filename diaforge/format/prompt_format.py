"""`PromptFormat`: every option that changes what a model sees or is trained to write, recorded as
``prompt_format.json`` with every checkpoint and every export."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from diaforge.format.messages import assistant_message, to_chat_messages
from diaforge.format.options import (
    HISTORY_REASONING,
    PROMPT_MODES,
    TARGET_REASONING,
    TOOL_STYLES,
    check_choice,
)
from diaforge.format.prompt import fill_system_prompt, native_system_prompt, openai_tools, system_prompt
from diaforge.format.rendering import render_assistant
from diaforge.schema import Dialogue, Turn

PROMPT_FORMAT_FILE = "prompt_format.json"
"""Written by training beside every adapter, checkpoint and merged model; read by evaluation."""
PROMPT_FORMAT_VERSION = 1


@dataclass(frozen=True)
class PromptFormat:
    """Every option that changes what a model sees or is trained to write, in one place.

    Training builds it from the recipe (`train.recipe_fields.DiaforgeArguments.prompt_format`), slices
    with it, and saves it as ``prompt_format.json`` beside the adapter, every checkpoint and the
    merged model; ``eval run`` loads it from the model folder, so the model is prompted exactly as
    it was trained. The allowed values are the module constants `PROMPT_MODES`, `TOOL_STYLES`,
    `HISTORY_REASONING` and `TARGET_REASONING` (`CHOICES`).
    """

    prompt_mode: str = "prompt"
    """'prompt' (default, the paper's format): the candidate tools are listed in the system prompt
    and a turn is plain text, '<think>..</think>' then a reply or a JSON call list. 'native': the
    tools go to the chat template's ``tools=`` and calls are ``tool_calls``."""
    tool_style: str = "json"
    """How prompt mode lists the tools: 'json' (default, one JSON spec per line) or 'compact' (one
    signature line per tool, about a quarter of the tokens; for small models and CPU budgets)."""
    history_reasoning: str = "strip"
    """Thoughts of earlier assistant turns in the prompt: 'strip' (default; the model never sees
    its own past reasoning at inference) or 'keep'."""
    target_reasoning: str = "keep"
    """'keep' (default, the paper's format): the model writes a thought before each reply or call.
    'drop': it writes the reply or call alone (the 'without thinking traces' ablation). Evaluation
    uses it to size the ``auto`` token budget."""
    system_prompt: str | None = None
    """A custom system prompt (the text of a recipe's ``system_prompt_file``); in prompt mode
    ``{tools}`` in it is filled per dialogue (see `fill_system_prompt`). Default None: the reference
    prompt of `system_prompt` / `native_system_prompt`."""
    eot_token: str | None = None
    """The end-of-turn token trained after each target. Default None: the chat template's own."""

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "prompt_mode": PROMPT_MODES,
        "tool_style": TOOL_STYLES,
        "history_reasoning": HISTORY_REASONING,
        "target_reasoning": TARGET_REASONING,
    }

    def __post_init__(self) -> None:
        for name, allowed in self.CHOICES.items():
            check_choice(name, getattr(self, name), allowed)
        for name in ("system_prompt", "eot_token"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")

    # -- what the model sees ------------------------------------------------------------------

    def system_text(self, dialogue: Dialogue) -> str:
        """The system message of `dialogue`: the custom prompt filled with its candidate tools, or
        the reference prompt of this prompt mode."""
        if self.system_prompt is None:
            if self.prompt_mode == "native":
                return native_system_prompt()
            return system_prompt(dialogue.candidate_tools, tool_style=self.tool_style)
        return fill_system_prompt(
            self.system_prompt,
            dialogue.candidate_tools,
            prompt_mode=self.prompt_mode,
            tool_style=self.tool_style,
        )

    def tools(self, dialogue: Dialogue) -> list[dict[str, Any]] | None:
        """The chat template's ``tools=``: the candidate tools in native mode, None in prompt mode."""
        return openai_tools(dialogue.candidate_tools) if self.prompt_mode == "native" else None

    def messages(
        self, dialogue: Dialogue, *, upto: int | None = None, arguments_as: str = "dict"
    ) -> list[dict[str, Any]]:
        """The system message and ``dialogue.turns[:upto]`` as the model sees them (see
        `to_chat_messages`)."""
        return to_chat_messages(
            dialogue,
            upto=upto,
            prompt_mode=self.prompt_mode,
            history_reasoning=self.history_reasoning,
            system=self.system_text(dialogue),
            arguments_as=arguments_as,
            tool_style=self.tool_style,
        )

    def target_message(self, turn: Turn) -> dict[str, Any]:
        """An assistant turn as the model is trained to write it."""
        return assistant_message(
            turn,
            prompt_mode=self.prompt_mode,
            include_thought=self.target_reasoning == "keep",
        )

    def target_text(self, turn: Turn) -> str:
        """An assistant turn as prompt-mode text the model writes (with its thought unless
        `target_reasoning` is 'drop')."""
        return render_assistant(turn, include_thought=self.target_reasoning == "keep")

    # -- prompt_format.json ---------------------------------------------------------------------

    @property
    def system_prompt_sha256(self) -> str | None:
        if self.system_prompt is None:
            return None
        return hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        """The options, the system prompt text and its hash: the content of ``prompt_format.json``
        and of ``metrics.json``'s ``prompt_format``."""
        return {
            "version": PROMPT_FORMAT_VERSION,
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
            "system_prompt_sha256": self.system_prompt_sha256,
        }

    @classmethod
    def from_dict(cls, data: Any) -> PromptFormat:
        """The inverse of `as_dict`; a missing option takes its default. Raises ValueError naming
        the field that is wrong (unknown key, bad value, or a hash that does not match the text)."""
        if not isinstance(data, dict):
            raise ValueError("a prompt format must be a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names - {"version", "system_prompt_sha256"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}")
        fmt = cls(**{k: v for k, v in data.items() if k in names})
        recorded = data.get("system_prompt_sha256")
        if recorded is not None and recorded != fmt.system_prompt_sha256:
            raise ValueError("system_prompt_sha256 does not match the system_prompt text")
        return fmt

    def save(self, folder: str | Path) -> Path:
        """Write ``prompt_format.json`` into `folder` (created if needed); returns its path."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        path = out / PROMPT_FORMAT_FILE
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, folder: str | Path) -> PromptFormat | None:
        """The ``prompt_format.json`` of a model folder (or that file itself), or None when there
        is none (a base model, or a checkpoint trained before the file existed). A damaged file is
        an `InputError` that names it and the field."""
        from diaforge.errors import InputError

        path = Path(folder)
        if not path.is_file():
            path = path / PROMPT_FORMAT_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"invalid JSON ({exc})", path=path) from None
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), path=path) from None

    def differences(self, other: PromptFormat) -> dict[str, tuple[Any, Any]]:
        """``{option: (this value, other value)}`` for every option that differs."""
        out = {}
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if mine != theirs:
                out[f.name] = (mine, theirs)
        return out

    def describe(self) -> str:
        """One line: ``prompt_mode prompt, tool_style compact, ..., system prompt 1a2b3c4d``."""
        parts = [f"{name} {getattr(self, name)}" for name in self.CHOICES]
        if self.system_prompt is not None:
            parts.append(f"custom system prompt {self.system_prompt_sha256[:8]}")
        if self.eot_token is not None:
            parts.append(f"eot_token {self.eot_token}")
        return ", ".join(parts)


def shown_value(name: str, value: Any) -> str:
    """An option's value as a warning shows it: the system prompt by its hash, not its text."""
    if name == "system_prompt" and isinstance(value, str):
        return f"a custom prompt (sha256 {hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]})"
    if value is None:
        return "the default" if name in ("system_prompt", "eot_token") else "None"
    return repr(value)
