"""The rule-based part of the validator cascade (DiaFORGE A.2), in its fixed order:
format -> tool call -> tool arguments -> naturalness. Each returns a `Verdict`; the engine stops at
the first failure, then runs the relevancy validator and the LLM critique concurrently. A
retrieval miss (`Dialogue.withheld_tool`) runs format -> no_tool -> naturalness instead:
`no_tool_validator` checks that nothing is called, that nobody asks for arguments, and that the
refusal ends the dialogue only after the user has said enough to rule out every candidate.

The naturalness step is ours: it rejects what makes a corpus teach the wrong behaviour or a
benchmark leak its answer. Its reasons start with a kind (`tool_name_in_reply`,
`tool_name_from_user`, `template_artefact`, `determiner_before_verb`, `contradicting_intent`,
`foreign_jargon`, `unsettled_choice`, and the kinds of broken phrase of
`diaforge.data_gen.phrasing.broken`: `verb_read_as_noun`, `preposition_as_noun`, `verb_agreement`,
`cut_phrase`, `lost_object`, `run_on`, `mass_noun_article`, `tool_talk`, `lowercased_name`), which
`stats.json` counts (`reject_reasons`; `broken_phrases` counts the accepted dialogues holding each
kind, and `naturalness.share_broken_phrases` their share)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from diaforge.data_gen.agents.options import narrow, offered_options, options_in_thought
from diaforge.data_gen.agents.refusal import is_refusal, set_apart
from diaforge.data_gen.agents.state import COMPLETION, SELECTION
from diaforge.data_gen.phrasing import (
    artefacts,
    contradicting_verbs,
    determiner_before_verb,
    foreign_trade_words,
    names_read_out,
)
from diaforge.data_gen.phrasing.broken import KINDS, broken_phrases
from diaforge.data_gen.phrasing.summary import summary
from diaforge.data_gen.values import check_arguments, render_value
from diaforge.format import parse_assistant, render_assistant
from diaforge.schema import ACT_OF_ACTION, CALL_ACTIONS, Dialogue, Tool, Verdict
from diaforge.text import content_stems, line_of_business_key, name_tokens, stem, tool_stems


def _fail(name: str, reason: str) -> Verdict:
    return Verdict(validator=name, passed=False, reason=reason)


def format_validator(d: Dialogue) -> Verdict:
    """Turns alternate user/assistant starting with the user and ending with the assistant; every
    assistant turn has a reasoning trace and either a reply or tool calls; rendering it in the
    paper's text format parses back to the same turn; dialogue-act labels agree with the turn."""
    name = "format"
    if not d.turns:
        return _fail(name, "no turns")
    for i, t in enumerate(d.turns):
        expected = "user" if i % 2 == 0 else "assistant"
        if t.role != expected:
            return _fail(
                name, f"turn {i} is {t.role}, expected {expected} (turns must alternate, user first)"
            )
        if t.role == "user":
            if not t.content.strip():
                return _fail(name, f"turn {i}: empty user message")
            continue
        if not (t.thought or "").strip():
            return _fail(name, f"turn {i}: assistant turn without a reasoning trace")
        if bool(t.tool_calls) == bool(t.content.strip()):
            return _fail(name, f"turn {i}: an assistant turn needs exactly one of a reply or tool calls")
        parsed = parse_assistant(render_assistant(t))
        if parsed.kind == "malformed":
            return _fail(name, f"turn {i}: renders to malformed text ({parsed.reason})")
        if (parsed.kind == "tool_calls") != bool(t.tool_calls):
            return _fail(name, f"turn {i}: reply would be read back as a tool call")
        if t.action is not None and t.act is not None and ACT_OF_ACTION.get(t.action) != t.act:
            return _fail(name, f"turn {i}: action {t.action!r} is inconsistent with act {t.act!r}")
        if t.tool_calls and (
            t.act not in (None, "function_calling") or t.action not in (None, *CALL_ACTIONS)
        ):
            return _fail(name, f"turn {i}: a turn with tool calls must be labelled function_calling/call")
        if not t.tool_calls and t.action in CALL_ACTIONS:
            return _fail(name, f"turn {i}: labelled {t.action} but carries no tool call")
    if d.turns[-1].role != "assistant":
        return _fail(name, "the dialogue must end with an assistant turn")
    return Verdict(validator=name, passed=True)


def toolcall_validator(d: Dialogue) -> Verdict:
    """Exactly one tool-bearing turn, the last one, holding one call, to the gold tool."""
    name = "toolcall"
    bearing = [i for i, t in enumerate(d.turns) if t.tool_calls]
    if not bearing:
        return _fail(name, "the dialogue never calls a tool")
    if bearing != [len(d.turns) - 1]:
        return _fail(name, f"tool calls at turns {bearing}; only the last turn may call")
    calls = d.turns[-1].tool_calls or []
    if len(calls) != 1:
        return _fail(name, f"the final turn holds {len(calls)} calls, expected 1")
    if calls[0].name != d.seed_tool:
        return _fail(name, f"calls {calls[0].name}, gold tool is {d.seed_tool}")
    return Verdict(validator=name, passed=True)


def toolargs_validator(d: Dialogue) -> Verdict:
    """The call's arguments equal the gold map exactly and conform to the tool's schema."""
    name = "toolargs"
    gold = d.gold_tool
    args = (d.turns[-1].tool_calls or [])[0].args
    missing = sorted(set(d.gold_args) - set(args))
    extra = sorted(set(args) - set(d.gold_args))
    if missing or extra:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"extra {', '.join(extra)}"] if extra else []
        )
        return _fail(name, "; ".join(parts))
    wrong = [k for k in args if args[k] != d.gold_args[k] or type(args[k]) is not type(d.gold_args[k])]
    if wrong:
        return _fail(
            name, "wrong values for " + ", ".join(f"{k}={args[k]!r} (gold {d.gold_args[k]!r})" for k in wrong)
        )
    if gold is not None:
        problems = check_arguments(gold, args)
        if problems:
            return _fail(name, "schema: " + "; ".join(problems))
    return Verdict(validator=name, passed=True)


def no_tool_validator(d: Dialogue) -> Verdict:
    """A retrieval miss: no assistant turn calls a tool (`call_without_fit`); nobody asks for
    arguments (`asked_arguments`: an argument-completion or request turn, or a user turn after the
    opening that gives one of the need's values, as if asked); the dialogue ends at its first
    refusal (`diaforge.data_gen.agents.refusal.is_refusal`; `no_refusal`); and before it the user has ruled
    out every candidate (`early_refusal`: a refusal to a vague opening is as wrong as a guess). A
    candidate is ruled out when the user's answers (not the opening) set it apart from the need
    (`diaforge.data_gen.agents.refusal.set_apart`) or when an assistant question offered it
    (`offered_options`, read by words) and the user's answer turned it down (`narrow`); a
    near-duplicate of the need (`near_duplicates`) must also be told apart in the user's answers,
    as the naturalness validator asks of a call (`unsettled_choice`)."""
    name = "no_tool"
    need = d.withheld_tool
    if need is None or d.seed_tool is not None:
        return _fail(name, "not a retrieval miss: no provenance.withheld_tool, or a gold tool is set")
    values = [render_value(v).strip('"') for v in d.gold_args.values() if not isinstance(v, bool)]
    said, down, offered = [], set(), []
    for i, t in enumerate(d.turns):
        if t.role == "user":
            given = [v for v in values if v and re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", t.content)]
            if i > 0 and given:
                return _fail(
                    name, f"asked_arguments: turn {i}: the user gives {given[0]}, as if asked for it"
                )
            down |= (
                {o.name for o in offered} - {o.name for o in narrow(offered, t.content)} if offered else set()
            )
            said.append(t.content)
            offered = []
            continue
        if t.tool_calls:
            return _fail(name, f"call_without_fit: turn {i} calls {t.tool_calls[0].name}; no candidate fits")
        if t.phase == COMPLETION or t.action == "request":
            return _fail(name, f"asked_arguments: turn {i} asks for arguments no candidate will use")
        if is_refusal(t.content) and i != len(d.turns) - 1:
            return _fail(name, f"no_refusal: turn {i} refuses, yet the dialogue goes on")
        offered = offered_options(t.content, d.candidate_tools) if "?" in t.content else []
    if not d.turns or not is_refusal(d.turns[-1].content):
        return _fail(name, "no_refusal: the dialogue does not end with a plain refusal")
    answers = " ".join(said[1:])
    for c in d.candidate_tools:
        if c.name not in down and not set_apart(need, c, answers):
            return _fail(name, f"early_refusal: the user never ruled out {c.name} (the need is {need.name})")
    for c in near_duplicates(need, d.candidate_tools):
        if not (tool_stems(need) - tool_stems(c)) & content_stems(answers):
            return _fail(name, f"early_refusal: the user never said what separates {need.name} from {c.name}")
    return Verdict(validator=name, passed=True)


def near_duplicates(gold: Tool, candidates: Sequence[Tool]) -> list[Tool]:
    """Candidates a user could mean instead of `gold`: the same name family (half of the name
    words shared) or half of the description's content words shared."""
    own_name = {stem(w) for w in name_tokens(gold)}
    own_desc = content_stems(gold.description)
    out = []
    for c in candidates:
        if c.name == gold.name:
            continue
        name = {stem(w) for w in name_tokens(c)}
        desc = content_stems(c.description)
        union = own_desc | desc
        if len(own_name & name) * 2 >= len(own_name) or (union and len(own_desc & desc) * 2 >= len(union)):
            out.append(c)
    return out


def naturalness_validator(d: Dialogue) -> Verdict:
    """No assistant reply reads out a tool name; no user turn names a tool the assistant did not
    name first; no message carries template debris or a determiner before a verb phrase ("the
    cancel an order"); the opening asks for no action the gold tool does not do ("look up the
    order" for a re-order); no user turn talks the jargon of another line of business; and the
    call comes only after the user said something that tells the gold tool apart from each of
    its near-duplicates among the candidates; and no question offers again the options an
    earlier one offered (`repeated_question`)."""
    name = "naturalness"
    said_by_assistant: set[str] = set()
    for i, t in enumerate(d.turns):
        text = t.content or ""
        if t.role == "assistant":
            named = names_read_out(text, d.candidate_tools)
            if named:
                return _fail(name, f"tool_name_in_reply: turn {i} reads out {named[0]}")
            said_by_assistant |= set(named)
        else:
            unprompted = [n for n in names_read_out(text, d.candidate_tools) if n not in said_by_assistant]
            if unprompted:
                return _fail(name, f"tool_name_from_user: turn {i} names {unprompted[0]} unprompted")
        debris = artefacts(text)
        if debris:
            return _fail(name, f"template_artefact: turn {i}: {debris[0]}")
        pasted = [p for p in determiner_before_verb(text, d.candidate_tools) if not _judged_noun(d, p)]
        if pasted:
            return _fail(name, f"determiner_before_verb: turn {i}: '{pasted[0]}'")
        broken = [(k, e) for k, e in broken_phrases(text, d.candidate_tools) if not _waived(d, k, e)]
        if broken:
            kind, evidence = broken[0]
            return _fail(name, f"{kind}: turn {i}: '{evidence}'")
        judged = fluency_flags(d, text)
        if judged:
            kind, phrase = judged[0]
            return _fail(name, f"fluency_{kind}: turn {i}: '{phrase}'")
    again = repeated_question(d)
    if again:
        return _fail(name, f"repeated_question: {again}")
    gold = d.gold_tool or d.withheld_tool  # what the user needs
    if gold is not None and d.turns and d.turns[0].role == "user":
        kept = ((d.provenance.model_extra or {}).get("fluency") or {}).get("kept", [])
        wrong = [
            w
            for w in contradicting_verbs(d.turns[0].content, gold, d.candidate_tools)
            if not any(p.startswith(f"{w} ") for _, p in kept)  # the judge kept that reading
        ]
        if wrong:
            return _fail(name, f"contradicting_intent: the opening asks to {wrong[0]}, {gold.name} does not")
        foreign = foreign_jargon(d)
        if foreign:
            i, term = foreign[0]
            lob = gold.metadata.get("line_of_business") or "no line of business"
            return _fail(name, f"foreign_jargon: turn {i}: '{term}' is not talk of {lob}")
    gold = d.gold_tool
    if gold is not None:
        user_stems: set[str] = set()
        for t in d.turns:
            if t.role == "user":
                user_stems |= content_stems(t.content)
        for other in near_duplicates(gold, d.candidate_tools):
            if not (_said_stems(gold) - _said_stems(other)) & user_stems:
                return _fail(
                    name,
                    f"unsettled_choice: the user never said what separates {gold.name} from {other.name}",
                )
    return Verdict(validator=name, passed=True)


def repeated_question(d: Dialogue) -> str:
    """Where the assistant offers again the very options an earlier question of its own offered
    (as its thoughts list them, `options_in_thought`), after the user answered it: the answer was
    not understood, and the dialogue teaches asking in circles. Empty when it never does."""
    asked: dict[frozenset[str], int] = {}
    for i, t in enumerate(d.turns):
        if t.role != "assistant" or t.tool_calls or t.phase != SELECTION:
            continue
        offered = options_in_thought(t.thought, d.candidate_tools)
        if offered is None or len(offered) < 2:
            continue
        key = frozenset(o.name for o in offered)
        if key in asked:
            return f"turn {i} offers the options of turn {asked[key]} again"
        asked[key] = i
    return ""


def _said_stems(tool: Tool) -> set[str]:
    """The stems of a tool's name and of what its description says it does (`phrasing.summary`),
    not of its usage notes: "Do not use to move an appointment" does not make "move" a word of
    the booking tool."""
    return {stem(w) for w in name_tokens(tool)} | content_stems(summary(tool.description or ""))


def _judged_noun(d: Dialogue, evidence: str) -> bool:
    """Whether `evidence` ("the damage report") lies in a noun reading the fluency judge kept
    over the verb reading (`provenance.fluency.kept`): the judge, not the rule, settled it."""
    kept = ((d.provenance.model_extra or {}).get("fluency") or {}).get("kept", [])
    low = evidence.lower()
    return any(low in p.lower() for _, p in kept)


def _waived(d: Dialogue, kind: str, evidence: str) -> bool:
    return kind == "verb_read_as_noun" and _judged_noun(d, evidence)


def fluency_flags(d: Dialogue, text: str) -> list[tuple[str, str]]:
    """`(kind, phrase)` for each phrase the fluency judge flagged while this dialogue was rendered
    (`provenance.fluency`, written by the generator when the judge is on) that `text` holds and
    that the judge did not keep elsewhere in the dialogue."""
    logged = (d.provenance.model_extra or {}).get("fluency") or {}
    kept = {p for _, p in logged.get("kept", [])}  # dropped in one sentence, chosen in another: kept
    low = text.lower()
    return [(k, p) for k, p in logged.get("flagged", []) if p and p not in kept and p.lower() in low]


def foreign_jargon(d: Dialogue) -> list[tuple[int, str]]:
    """`(turn, term)` for each user turn that talks the jargon of a line of business other than
    the gold tool's (`diaforge.data_gen.phrasing.foreign_trade_words`; a retrieval miss: the withheld
    tool's); the values the user gives and its own role and department are left out, they are
    data, not shop talk."""
    gold = d.gold_tool or d.withheld_tool
    if gold is None:
        return []
    given = [render_value(v) for v in d.gold_args.values()]
    given += [x for x in (d.persona.role, d.persona.department) if x]  # who the user is, not shop talk
    out = []
    for i, t in enumerate(d.turns):
        if t.role != "user":
            continue
        text = t.content
        for v in sorted(given, key=len, reverse=True):
            text = re.sub(re.escape(v), " ", text, flags=re.IGNORECASE)
        foreign = foreign_trade_words(text, gold, d.candidate_tools, _persona_terms(d))
        if foreign:
            out.append((i, foreign[0]))
    return out


def _persona_terms(d: Dialogue) -> dict[str, frozenset[str]]:
    """The dialogue persona's jargon, as the shop talk of its line of business."""
    p = d.persona
    if p is None or not p.jargon:
        return {}
    return {t: frozenset({line_of_business_key(p.line_of_business)}) for t in p.jargon}


RULE_VALIDATORS = (format_validator, toolcall_validator, toolargs_validator, naturalness_validator)
NO_TOOL_VALIDATORS = (format_validator, no_tool_validator, naturalness_validator)
"""The rule validators of a retrieval miss."""


def run_rule_validators(d: Dialogue) -> list[Verdict]:
    """Runs the rule validators in order (those of a retrieval miss for a record with a withheld
    tool) and stops at the first failure."""
    verdicts = []
    for v in NO_TOOL_VALIDATORS if d.withheld_tool is not None else RULE_VALIDATORS:
        verdict = v(d)
        verdicts.append(verdict)
        if not verdict.passed:
            break
    return verdicts


BROKEN_KINDS = ("template_artefact", "determiner_before_verb", *KINDS)
"""The kinds a broken phrase is counted by: the earlier two and those of `diaforge.data_gen.phrasing.broken`."""


def phrase_findings(d: Dialogue) -> dict[str, str]:
    """Each kind of broken phrase in any turn of a dialogue (`BROKEN_KINDS`), with the first
    evidence of it: template debris (quoted values and JSON left out), a determiner before a verb
    phrase, and the kinds of `diaforge.data_gen.phrasing.broken`."""
    from diaforge.data_gen.phrasing.broken import _plain

    found: dict[str, str] = {}
    for t in d.turns:
        text = t.content or ""
        debris = artefacts(_plain(text))
        if debris:
            found.setdefault("template_artefact", debris[0])
        pasted = [p for p in determiner_before_verb(text, d.candidate_tools) if not _judged_noun(d, p)]
        if pasted:
            found.setdefault("determiner_before_verb", pasted[0])
        for kind, evidence in broken_phrases(text, d.candidate_tools):
            if not _waived(d, kind, evidence):
                found.setdefault(kind, evidence)
    return found


def broken_phrase_counts(dialogues: Sequence[Dialogue]) -> dict[str, int]:
    """How many dialogues hold each kind of broken phrase (`phrase_findings`), every kind listed;
    `any` counts the dialogues holding at least one (`stats.json` -> `broken_phrases`)."""
    counts = dict.fromkeys(("any", *BROKEN_KINDS), 0)
    for d in dialogues:
        found = phrase_findings(d)
        counts["any"] += bool(found)
        for kind in found:
            counts[kind] += 1
    return counts


def naturalness_shares(dialogues: Sequence[Dialogue]) -> dict[str, float]:
    """Shares of dialogues with an assistant question that reads out a tool name, with a user turn
    naming the gold tool before the assistant did, with template debris in the opening, with a
    determiner before a verb phrase in any turn ("the cancel an order"), with an opening whose
    verb contradicts the gold tool, and with a broken phrase of any kind in any turn
    (`phrase_findings`): the measures the scripted generator is held to (`stats.json` ->
    `naturalness`)."""
    n = len(dialogues) or 1
    names_in_questions = user_names_gold = opening_debris = pasted = contradicting = broken = 0
    for d in dialogues:
        pasted += any(determiner_before_verb(t.content or "", d.candidate_tools) for t in d.turns)
        broken += bool(phrase_findings(d))
        gold = d.gold_tool
        if gold is not None and d.turns and d.turns[0].role == "user":
            contradicting += bool(contradicting_verbs(d.turns[0].content, gold, d.candidate_tools))
        said: set[str] = set()
        asked_names = named_gold = False
        for t in d.turns:
            if t.role == "assistant":
                found = names_read_out(t.content or "", d.candidate_tools)
                asked_names |= bool(found)
                said |= set(found)
            elif d.seed_tool in names_read_out(t.content, d.candidate_tools) and d.seed_tool not in said:
                named_gold = True
        names_in_questions += asked_names
        user_names_gold += named_gold
        opening_debris += bool(d.turns and artefacts(d.turns[0].content))
    return {
        "share_questions_naming_tools": names_in_questions / n,
        "share_user_naming_gold_unprompted": user_names_gold / n,
        "share_openings_with_artefacts": opening_debris / n,
        "share_determiner_before_verb": pasted / n,
        "share_openings_contradicting_verb": contradicting / n,
        "share_broken_phrases": broken / n,
    }
