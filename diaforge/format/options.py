"""The allowed values of every option of `PromptFormat`, defined here and nowhere else: recipes
(train/recipe_fields.py), slicing, evaluation, export and the benchmarks import them."""

from __future__ import annotations

from typing import Any

PROMPT_MODES = ("prompt", "native")
TOOL_STYLES = ("json", "compact")
HISTORY_REASONING = ("strip", "keep")
TARGET_REASONING = ("keep", "drop")
ARGUMENTS_AS = ("dict", "json")


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    """`ValueError` naming the option and its allowed values unless `value` is one of them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
