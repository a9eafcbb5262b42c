"""The goal writer: the goal a user-proxy pursues (`scripted_goal`, or `llm_goal` from a model)
and, from a model, the gold values it will give (`llm_values`)."""

from __future__ import annotations

import json
import random
from typing import Any

from diaforge.data_gen.phrasing import with_article
from diaforge.data_gen.phrasing.render import action, param_noun
from diaforge.data_gen.values import render_value
from diaforge.llm.base import ChatBackend, Usage
from diaforge.schema import Persona, Tool


def scripted_goal(gold: Tool, persona: Persona, gold_args: dict[str, Any]) -> str:
    """A concrete goal the user-proxy pursues, consistent with the persona and the gold values."""
    who = persona.role or "an employee"
    what = action(gold, tools=[gold])
    details = ", ".join(
        f"{param_noun(k, gold.properties.get(k))} {render_value(v)}" for k, v in gold_args.items()
    )
    goal = f"As {with_article(who) if persona.role else who}, I need to {what}."
    return f"{goal} Details: {details}." if details else goal


GOAL_SYSTEM = (
    "Write the goal of an enterprise employee who needs the tool below, in one sentence, first person, "
    "consistent with who they are and with the given values. Output only the sentence."
)


async def llm_goal(
    backend: ChatBackend, gold: Tool, persona: Persona, gold_args: dict, rng: random.Random
) -> tuple[str, Usage]:
    messages = [
        {"role": "system", "content": GOAL_SYSTEM},
        {
            "role": "user",
            "content": f"Person: {persona.description}\nTool: {gold.name}: {gold.description}\n"
            f"Values: {json.dumps(gold_args, ensure_ascii=False)}",
        },
    ]
    result = await backend.chat(messages, temperature=0.7, max_tokens=120, seed=rng.randrange(2**31))
    text = result.text.strip()
    return (text or scripted_goal(gold, persona, gold_args)), result.usage


VALUES_SYSTEM = (
    "Invent realistic values for the required arguments of the tool below, fitting the person who will "
    "use it. Follow each parameter's type, enum, pattern and format exactly. Reply with only a JSON object "
    "mapping each required argument to its value."
)


async def llm_values(
    backend: ChatBackend, gold: Tool, persona: Persona, rng: random.Random
) -> tuple[dict | None, Usage]:
    """Gold values from a model, or None when its answer does not fit the schema (the caller
    falls back to the typed generator)."""
    from diaforge.data_gen.values import check_arguments

    props = {k: gold.properties[k] for k in gold.required}
    messages = [
        {"role": "system", "content": VALUES_SYSTEM},
        {
            "role": "user",
            "content": f"Person: {persona.description}\nTool: {gold.name}: {gold.description}\n"
            f"Required parameters: {json.dumps(props, ensure_ascii=False)}",
        },
    ]
    result = await backend.chat(messages, temperature=0.9, max_tokens=300, seed=rng.randrange(2**31))
    text = result.text
    start, end = text.find("{"), text.rfind("}")
    try:
        obj = json.loads(text[start : end + 1]) if start >= 0 else None
    except (json.JSONDecodeError, RecursionError):
        obj = None
    if not isinstance(obj, dict) or check_arguments(gold, obj):
        return None, result.usage
    return obj, result.usage
