"""What a dialogue in progress knows (`DialogueState`), the two phases it moves through, the
teacher's next move (and the clarifying question the scripted teachers build), and the
transcript that the model-played voter and judges read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from diaforge.llm.base import Usage
from diaforge.schema import Persona, Tool, Turn

SELECTION, COMPLETION = "tool_selection", "argument_completion"


@dataclass
class DialogueState:
    """Everything a dialogue in progress knows. Agents read the parts their role may see."""

    gold: Tool
    candidates: list[Tool]
    persona: Persona
    goal: str
    gold_args: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    phase: str = SELECTION
    no_tool: bool = False
    """A retrieval miss: `gold` is what the user needs but is not among `candidates`, so the
    teacher disambiguates and then refuses (`diaforge.data_gen.agents.refusal`) instead of calling."""

    @property
    def user_texts(self) -> list[str]:
        return [t.content for t in self.turns if t.role == "user"]

    @property
    def last_assistant(self) -> Turn | None:
        return next((t for t in reversed(self.turns) if t.role == "assistant"), None)


@dataclass
class TeacherMove:
    """The teacher's next assistant turn. In the selection phase a turn with a tool call is a
    selection: the engine checks it against the gold tool and drops it."""

    turn: Turn
    usage: Usage = field(default_factory=Usage)


def clarifying_turn(thought: str, question: str) -> Turn:
    """A question of the selection phase: an assistant turn labelled `seek_info`/`clarify`, with
    no call."""
    return Turn(
        role="assistant",
        thought=thought,
        content=question,
        phase=SELECTION,
        act="seek_info",
        action="clarify",
    )


def transcript(turns: Sequence[Turn]) -> str:
    """The turns as plain text for a model that reads the conversation (a voter or a judge), tool
    calls as JSON."""
    lines = []
    for t in turns:
        if t.role == "user":
            lines.append(f"USER: {t.content}")
        elif t.tool_calls:
            calls = [{"name": c.name, "args": c.args} for c in t.tool_calls]
            lines.append(f"ASSISTANT CALLS: {json.dumps(calls, ensure_ascii=False)}")
        else:
            lines.append(f"ASSISTANT: {t.content}")
    return "\n".join(lines)
