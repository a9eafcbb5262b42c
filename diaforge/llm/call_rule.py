"""The call list as a decoding rule: `CallRule` holds a reply's call list to the grammar of its
candidate tools (`diaforge.llm.constrain`), parsed incrementally (`diaforge.llm.call_parse`)."""

from __future__ import annotations

from diaforge.llm.call_parse import CallParse, begin
from diaforge.llm.constrain import CallGrammar, Grounding, body_is_not_a_call, call_start
from diaforge.llm.rules import BaseRule, Choice, Mask, Row, RuleContext

__all__ = ["CallRule"]


class CallRule(BaseRule):
    """Greedy decoding restricted to `grammar` once a reply opens its call list (`diaforge.llm.constrain`),
    as a decoding rule (`diaforge.llm.rules`): its mask allows the tokens whose text keeps the call
    viable (any of the vocabulary: the chain scans past the best tokens when it must), and only the
    end of turn once the list is complete. Text before the call list is never masked; once the
    reply's body has begun with something else the rule stays silent for good.

    The call is parsed incrementally (`diaforge.llm.call_parse`): each step feeds what the last
    token added, and a candidate token is tested by feeding its text alone to that state. Where
    the thought has settled a tool (``row.notes["tool"]``, `diaforge.llm.thought_copy.ThoughtRule`)
    and it is a candidate, the call's tool is held to it.

    Counters: ``constrained_tokens`` (tokens chosen under the rule), ``deep_scans`` (tokens for
    which none of the best tokens kept the call valid, so the rest of the vocabulary was scanned),
    ``fallbacks`` (tokens for which none did: the model's own choice stood, and the parser judges
    the result)."""

    name = "call"

    def __init__(self, grammar: CallGrammar) -> None:
        super().__init__()
        self.grammar = grammar
        self.counters = {"constrained_tokens": 0, "deep_scans": 0, "fallbacks": 0}
        self.free = False
        """The reply's body has begun with something other than a call list: it never will be one."""
        self._start: int | None = None
        self._fed = ""
        self._parse: CallParse | None = None

    @classmethod
    def build(cls, context: RuleContext) -> CallRule | None:
        """The call rule of a row whose candidates are `context.candidates` (None without any),
        its values grounded in `context.said` when ``decoding.ground_values`` is on."""
        if not context.candidates:
            return None
        grounding = Grounding.of(context.said) if context.decoding.ground_values else None
        return cls(CallGrammar({t.name: t.parameters for t in context.candidates}, grounding))

    def mask(self, row: Row) -> Mask | None:
        if self.free:
            return None
        text = row.text
        if self._start is None:
            start = call_start(text)
            if start is None:
                self.free = body_is_not_a_call(text)
                return None
            self._start = start
            tool = row.notes.get("tool")
            if tool in self.grammar.tools and len(self.grammar.tools) > 1:
                self.grammar = CallGrammar({tool: self.grammar.tools[tool]}, self.grammar.grounding)
        parse = self._advance(text[self._start :])
        if parse is None:  # the model's own token stood where none fitted: nothing fits any more
            self.count("constrained_tokens")
            self.count("deep_scans")
            self.count("fallbacks")
            return None
        if parse.complete:
            return Mask(_always, tokens=row.vocab.eos[:1])
        texts, eos = row.vocab.texts, row.vocab.eos

        def allows(token: int) -> bool:
            piece = texts[token]
            return bool(piece) and token not in eos and parse.feed(piece) is not None

        return Mask(allows)

    def _advance(self, call: str) -> CallParse | None:
        """The parse of the call text so far, fed only what was added since the last step; from
        the start again when the decoded text changed behind it (a character completed from bytes
        split across tokens) or the last parse had failed (a text the grammar refused may become
        viable again as it grows, e.g. a grounded value before its combining accent)."""
        if self._parse is not None and call.startswith(self._fed):
            parse = self._parse.feed(call[len(self._fed) :])
        else:
            parse = begin(self.grammar).feed(call)
        self._fed, self._parse = call, parse
        return parse

    def chosen(self, row: Row, choice: Choice) -> None:
        self.count("constrained_tokens")
        self.count("deep_scans", int(choice.deep))
        self.count("fallbacks", int(choice.fallback))


def _always(token: int) -> bool:
    return True
