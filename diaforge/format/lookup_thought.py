"""The fixed words of a `lookup` thought: the one template that the scripted teacher writes
(`diaforge.data_gen.agents.lookup`) and the copied-thoughts rule reads (`diaforge.llm.thought_copy`).

A selection thought lists the options as ``What each does: DESC (NAME); DESC (NAME). ...``; an
argument-completion thought may open with ``The user chose DESC (NAME).`` and holds
``The tool is SIGNATURE. Required: K, ...`` (``none`` when nothing is required). The copy spans
of these sentences are what the rule holds to the tool listing, so writer and reader must share
them: a test parses every thought the teacher writes on the bundled catalogue with the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from diaforge.format.prompt import tool_signature
from diaforge.schema import Tool

WHAT_EACH_DOES = "What each does: "
"""Opens the list of options of a selection thought."""
CHOSE = "The user chose "
"""Opens the sentence naming the option the user picked."""
TOOL_IS = "The tool is "
"""Opens the copied signature of the settled tool."""
REQUIRED = "Required: "
"""Opens the copied list of the settled tool's required keys."""


def option(description: str, name: str) -> str:
    """One option as the thought writes it: ``DESC (NAME)``."""
    return f"{description} ({name})"


def options_list(names: Sequence[str], descriptors: Mapping[str, str]) -> str:
    """``What each does: DESC (NAME); ...`` over the named options that have a descriptor."""
    return WHAT_EACH_DOES + "; ".join(option(descriptors[n], n) for n in names if n in descriptors)


def lookup_tail(tool: Tool) -> str:
    """What follows `TOOL_IS` for `tool`: ``SIGNATURE. Required: K, ....``"""
    return f"{tool_signature(tool)}. {REQUIRED}{', '.join(tool.required) or 'none'}."


def tool_sentence(tool: Tool) -> str:
    """``The tool is SIGNATURE. Required: K, ....``"""
    return TOOL_IS + lookup_tail(tool)
