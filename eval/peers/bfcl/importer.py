"""BFCL importer (`load_bfcl`): every single-turn and multi-turn category, mapped to our `Dialogue`.

This module reads a category file and maps its single-turn entries; the multi-turn ones are mapped
by `diaforge.eval.peers.bfcl.multi_turn`, and the parts both are made of (the question's messages, the
function documents as BFCL shows them, the gold calls) are read by `diaforge.eval.peers.bfcl.entries`.

`SINGLE_TURN` holds BFCL's 13 single-turn categories and `MULTI_TURN` its four multi-turn ones
(`DOCUMENTED_COUNTS`); `CATEGORIES`, the default of ``python -m diaforge.eval bfcl``, is the five of the
DiaFORGE parity check. The table shows those five; the others map the same way:

* ``simple_python``, ``simple_java``, ``simple_javascript``, ``parallel``, ``parallel_multiple``,
  ``live_simple``, ``live_parallel``, ``live_parallel_multiple``: like ``multiple`` (one gold
  assistant turn with every gold call);
* ``live_relevance``: like ``irrelevance`` (no answer file; `seed_tool` None), with the opposite
  rule: any well-formed, non-empty call passes, whatever it calls (BFCL's relevance runner checks
  only that the output decodes to a call);
* ``multi_turn_base``, ``multi_turn_long_context``: like ``multi_turn_miss_param``;
* ``multi_turn_miss_func``: its ``missed_function`` (``{turn index: [names]}``) holds functions
  back: before that turn they are not offered (``metadata["withheld"]`` on the assistant turns,
  dropped from the prompt's candidates by `diaforge.eval.peers.bfcl.runner.prompt_examples`), the ``[]``
  turn that needs one gets the refusal `MISS_FUNC_REPLY` labelled reject/response_fail, and the
  held-out turn (empty in BFCL's question) gets BFCL's user message `MISSED_FUNCTION_PROMPT` with
  the functions back in the list, as BFCL's inference loop does.

Tools are shown as BFCL shows them (`prompt_doc`, its language-specific hint): every description
ends with a note naming the language, and Java / JavaScript parameters become strings whose
description names their type ("This is Java HashMap type parameter in string representation."),
the original types kept in ``metadata["bfcl_parameters"]`` for the checker. The gold calls of
Java and JavaScript entries hold the answers' first acceptable values, not Java/JavaScript source
text, so rendered as calls they do not pass the checker.

=========================  =======  ==========================================================
category                   entries  our dialogue
=========================  =======  ==========================================================
multiple                   200      the question's messages, then one gold assistant turn with
live_multiple              1,053    the call (first acceptable value of each argument; an argument
                                    whose only acceptable value is "" is left out), labelled
                                    function_calling/call, its acceptable-value lists in
                                    ``metadata["acceptable"]``; `seed_tool` is the gold function
irrelevance                240      the question's messages only; `seed_tool` None (any valid call
live_irrelevance           884      is a failure)
multi_turn_miss_param      200      per BFCL turn: its user message(s), then a gold assistant turn:
                                    the turn's calls (call strings parsed, positional arguments
                                    named from the documentation) labelled function_calling/call,
                                    or, for a ``[]`` turn ("must not call": a required argument
                                    is missing), a question labelled seek_info/request whose text
                                    is the fixed `MISS_PARAM_REPLY` (BFCL gives no reply text) and
                                    ``metadata["bfcl_expect"] = "no_call"``; candidate tools are
                                    the docs of the involved classes minus the excluded functions
=========================  =======  ==========================================================

Counts asserted in the tests against the installed wheel: `DOCUMENTED_COUNTS` (the
multi_turn_miss_param answers hold 203 ``[]`` turns). Candidate tools come from each entry's
`function` list through `diaforge.tool_records.tool_from_record`, so BFCL types are normalised
(``dict`` -> object, ``float`` -> number, ``tuple`` -> array, ``any`` -> untyped). Function names
are kept as they are, dots included (``triangle_properties.get``): BFCL maps ``.`` to ``_`` only
for APIs that reject dots, which a prompt-mode model is not. System messages of the question go to
``provenance.bfcl["system"]`` and are appended to our system prompt when the model is queried.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import ImportReport, ImportResult, need, read_answers, read_json_lines
from diaforge.eval.peers.bfcl.categories import (
    ALL_CATEGORIES,
    CATEGORIES,
    IRRELEVANCE,
    MULTI_TURN,
    NO_ANSWER_FILE,
    bfcl_data_dir,
    category_file,
)
from diaforge.eval.peers.bfcl.entries import (
    acceptable_answers,
    answer_of,
    bfcl_dialogue,
    entry_tools,
    gold_calls,
    question_messages,
)
from diaforge.eval.peers.bfcl.multi_turn import multi_turn_dialogue
from diaforge.schema import Dialogue, Tool, Turn

__all__ = ["load_bfcl", "load_bfcl_categories"]


def load_bfcl(
    category: str,
    data_dir: str | Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> ImportResult:
    """Import one BFCL category (see the module docstring) from `data_dir` (the installed wheel's
    data by default) or from an explicit category file `path` (answers in ``possible_answer/``
    beside it). A malformed record raises `InputError` naming the file and the line."""
    if category not in ALL_CATEGORIES:
        raise InputError(f"unsupported BFCL category {category!r}; choose from {', '.join(ALL_CATEGORIES)}")
    if path is not None:
        file = Path(path)
        folder = file.parent
    else:
        folder = bfcl_data_dir(data_dir)
        file = category_file(folder, category)
    report = ImportReport(source=f"bfcl {category}", path=str(file))
    answers: dict[str, tuple[int, Any]] = {}
    answer_path = folder / "possible_answer" / file.name
    if category not in NO_ANSWER_FILE:
        answers = read_answers(answer_path)
    docs_cache: dict[str, list[Tool]] = {}
    dialogues: list[Dialogue] = []
    counts: Counter = Counter()
    for lineno, obj in read_json_lines(file):
        if limit is not None and len(dialogues) >= limit:
            break
        need(
            isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj["id"],
            "record needs a string 'id'",
            file,
            lineno,
        )
        entry_id = obj["id"]
        question = question_messages(obj.get("question"), file, lineno, entry_id)
        if category in MULTI_TURN:
            d = multi_turn_dialogue(
                obj, category, question, answers, folder, docs_cache, file, lineno, answer_path, counts
            )
        else:
            d = _single_turn(obj, category, question, answers, file, lineno, answer_path, counts)
        dialogues.append(d)
    report.loaded = len(dialogues)
    report.counts = {"entries": len(dialogues), **dict(counts)}
    return ImportResult(dialogues, report)


def _turns_of(question: list[list[dict[str, str]]]) -> tuple[list[Turn], list[str]]:
    turns, system = [], []
    for turn in question:
        for msg in turn:
            if msg["role"] == "system":
                system.append(msg["content"])
            else:
                turns.append(Turn(role=msg["role"], content=msg["content"]))
    return turns, system


def _single_turn(
    obj: dict[str, Any],
    category: str,
    question: list,
    answers: dict[str, tuple[int, Any]],
    file: Path,
    lineno: int,
    answer_path: Path,
    counts: Counter,
) -> Dialogue:
    entry_id = obj["id"]
    # Four live_irrelevance entries offer no function at all.
    tools = entry_tools(
        obj.get("function"), file, lineno, entry_id, allow_empty=category in IRRELEVANCE, category=category
    )
    turns, system = _turns_of(question)
    need(any(t.role == "user" for t in turns), f"{entry_id}: the question has no user message", file, lineno)
    counts["functions"] += len(tools)
    counts["system_messages"] += len(system)
    extra: dict[str, Any] = {"id": entry_id, "system": system}
    if category in NO_ANSWER_FILE:  # irrelevance: no call is right; relevance: any call is
        return bfcl_dialogue(
            entry_id=entry_id, category=category, tools=tools, turns=turns, seed=None, args={},
            extra=extra, path=file, lineno=lineno,
        )  # fmt: skip
    answer_line, ground_truth = answer_of(answers, entry_id, answer_path, file, lineno)
    ground_truth = acceptable_answers(ground_truth, answer_path, answer_line, entry_id)
    calls, missing = gold_calls(ground_truth, tools)
    need(
        not missing,
        f"{entry_id}: gold function {missing[0] if missing else ''!r} is not among its functions",
        file,
        lineno,
    )
    counts["gold_calls"] += len(calls)
    gold = Turn(
        role="assistant",
        tool_calls=calls,
        act="function_calling",
        action="call",
        metadata={"acceptable": ground_truth},
    )
    return bfcl_dialogue(
        entry_id=entry_id, category=category, tools=tools, turns=[*turns, gold], seed=calls[0].name,
        args=dict(calls[0].args), extra=extra, path=file, lineno=lineno,
    )  # fmt: skip


def load_bfcl_categories(
    categories: Iterable[str] = CATEGORIES, data_dir: str | Path | None = None, *, limit: int | None = None
) -> dict[str, ImportResult]:
    """`load_bfcl` for several categories."""
    return {c: load_bfcl(c, data_dir, limit=limit) for c in categories}
