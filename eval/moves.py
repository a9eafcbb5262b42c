"""Reading one assistant turn as the user-proxy reads it: which move it makes (`model_move`: ask
which tool, ask for a value, call, refuse, another reply, malformed or truncated output), which
required parameters it names, and whether it asks for a value the user has not given
(`asks_missing_value`, the rule by which the dynamic loop moves the user-proxy to giving values).
The classes are defined in `diaforge.eval.decisions`, which judges each move against the state of the
dialogue; `diaforge.eval.runner` uses `asks_missing_value`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from diaforge.data_gen.agents import ScriptedTeacher, is_refusal, offered_options
from diaforge.data_gen.phrasing.render import names_param, param_spellings
from diaforge.eval.anatomy import asks
from diaforge.schema import Tool
from diaforge.text import humanise_param

if TYPE_CHECKING:  # numpy and the encoders load only when a run reads by meaning
    from diaforge.similarity import Encoder

__all__ = ["MODEL_MOVES", "asks_missing_value", "model_move", "named_parameters"]

MODEL_MOVES = ("ask_tool", "ask_value", "call", "refuse", "other", "malformed", "truncated")
"""What a model's turn does (the columns of the when-to-call matrix)."""


def _spellings(key: str, tool: Tool) -> list[str]:
    """The ways a reply may name the argument `key` of `tool` (`param_spellings`)."""
    return param_spellings(key, tool.properties.get(key))


def named_parameters(text: str, tool: Tool) -> list[str]:
    """The required parameters of `tool` that `text` names (any of its `_spellings`, case folded,
    hyphens read as spaces)."""
    return [k for k in tool.required if names_param(text, k, tool.properties.get(k))]


def asks_missing_value(
    text: str, tool: Tool, said: str, candidates: Sequence[Tool], encoder: Encoder | None = None
) -> bool:
    """Whether `text` asks for a value of `tool` that the user has not given: it asks for a value
    (`_asks_for`) of a required parameter of `tool` whose value `said` (the user's words) does not
    give, values read as the scripted teacher reads them (`ScriptedTeacher.known_values`). The rule
    by which the dynamic loop moves the user-proxy to giving values (`diaforge.eval.runner.asks_for_arguments`)."""
    named = named_parameters(text, tool)
    if not named:
        return False
    known = ScriptedTeacher.known_values(tool, said)
    missing = [k for k in named if k not in known]
    if not missing:
        return False
    every = {k for t in [*candidates, tool] for k in named_parameters(text, t)}
    return _asks_for(missing, every, text, candidates, encoder)


def _asks_for(
    asked: Iterable[str], named: Iterable[str], text: str, candidates: Sequence[Tool], encoder: Encoder | None
) -> bool:
    """Whether naming the parameters `asked` in `text` asks for their values. The options the rest
    of the reply offers are read with every named parameter's name blanked out (`named`), so that
    "the city" offers no tool that has a city: it asks when that rest offers fewer than two tools,
    or when an asked parameter's name is no part of the description of one it offers ("look up a
    city in the home country or a foreign city?" offers two tools and asks for no city)."""
    asked = list(asked)
    if not asked:
        return False
    rest = text
    names = {n for k in named for t in candidates if k in t.properties for n in _spellings(k, t)}
    for name in sorted(names | {n for k in named for n in (humanise_param(k), k)}, key=len, reverse=True):
        pattern = r"[\s\-]+".join(re.escape(w) for w in re.split(r"[\s\-]+", name) if w)
        rest = re.sub(pattern, " ", rest, flags=re.IGNORECASE)
    offered = offered_options(rest, list(candidates), encoder)
    return len(offered) < 2 or any(not _in_description(k, offered) for k in asked)


def _in_description(key: str, tools: Sequence[Tool]) -> bool:
    names = (humanise_param(key).lower(), key.lower())
    return any(n in t.description.lower() for t in tools for n in names)


def model_move(
    kind: str | None,
    content: str,
    candidates: Sequence[Tool],
    target: Tool | None = None,
    encoder: Encoder | None = None,
) -> tuple[str, list[Tool]]:
    """The move of one assistant turn (`diaforge.eval.decisions`) and the candidates it offers (Q_k; empty
    unless it asks which tool). `target` is ν on the no-tool split (its parameters count as named
    too), `encoder` the sentence encoder that reads options by meaning (None: by words only)."""
    if kind == "tool_calls":
        return "call", []
    if kind in ("malformed", "truncated"):
        return str(kind), []
    if is_refusal(content):
        return "refuse", []
    if not asks(content):
        return "other", []
    tools = [*candidates, *([target] if target is not None and target not in candidates else [])]
    named = {k for t in tools for k in named_parameters(content, t)}
    if _asks_for(named, named, content, candidates, encoder):
        return "ask_value", []
    return "ask_tool", offered_options(content, list(candidates), encoder)
