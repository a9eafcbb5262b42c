"""The agents of the dialogue engine: goal writer, user-proxy, assistant teacher and the two
model-judged validators (relevancy, critique), each as a `scripted` rule-based policy and as an
LLM-driven agent behind any `ChatBackend`.

The scripted policies are the embedded default: offline and deterministic for a given random
generator. They are a real policy, not a stand-in:

* the **teacher** sees the candidate tools, never the gold tool, while it selects. It keeps the
  candidates that the user's words support, and when several remain it asks a question that
  describes what separates them (what is left of their descriptions once the shared words go,
  `diaforge.data_gen.phrasing.option_descriptors`), never a tool name. Once the selection is confirmed it
  knows the gold tool's schema (not its values), reads the values the user has given out of the
  user's words, asks for the missing required ones and calls the tool when none is missing;
* the **user-proxy** knows its goal, the gold tool, the candidates and the gold values. It opens
  with a request that fits the gold tool and its neighbours (`vague_request`), reads a question by
  meaning (`offered_options`), answers from the gold tool's description in its own voice, says
  "none of those" or restates its need when the question does not offer or separate its goal, and
  gives gold values only when asked, sometimes only part of what was asked while many remain.
  Wording comes from a bank (`diaforge.data_gen.wording`), varied by the persona's tone and jargon. It
  names a tool only after the assistant did.

The package's modules: `state` (what a dialogue in progress knows), `options` (reading a question
and its options), `goals` (goal writer), `user` (user-proxy), `voting` (the voting user-proxy),
`teacher` (assistant teacher), `refusal` (the teacher in a retrieval miss, where no candidate fits,
and the rule that reads a reply as a refusal), `lookup` (the `lookup` reasoning style) and `judges`
(relevancy and critique validators); `roles` holds the Protocol of each role (`User`, `Voter`,
`Teacher`, `RelevancyJudge`, `CritiqueJudge`), which the code that drives an agent takes.

What this package exports is its interface: the user-proxy, voter and teacher that `eval`'s live
loop drives (`DialogueState` and its phases, `ScriptedUser`, `LLMUser`, `ScriptedVoter`,
`LLMVoter`, `VotingUser`, `ScriptedTeacher`, `offered_options`), what `diaforge.eval.decisions` reuses to
replay the state of a dialogue (`plausible`, `still_open`, `options_in_thought`, `miss_progress`,
`is_refusal`, and
`ScriptedTeacher.remaining` and `known_values`), the role Protocols, and the goal writers, teacher
and judges the dialogue engine drives.
"""

from diaforge.data_gen.agents.goals import llm_goal, llm_values, scripted_goal
from diaforge.data_gen.agents.judges import LLMJudge, ScriptedCritique, ScriptedRelevancy
from diaforge.data_gen.agents.options import offered_options, options_in_thought, plausible, still_open
from diaforge.data_gen.agents.refusal import is_refusal, miss_progress
from diaforge.data_gen.agents.roles import CritiqueJudge, RelevancyJudge, Teacher, User, Voter
from diaforge.data_gen.agents.state import COMPLETION, SELECTION, DialogueState
from diaforge.data_gen.agents.teacher import LLMTeacher, ScriptedTeacher
from diaforge.data_gen.agents.user import LLMUser, ScriptedUser
from diaforge.data_gen.agents.voting import LLMVoter, ScriptedVoter, VotingUser

__all__ = [
    # The user-proxy, voter and teacher of eval's live loop.
    "COMPLETION",
    "SELECTION",
    "DialogueState",
    "LLMUser",
    "LLMVoter",
    "ScriptedTeacher",
    "ScriptedUser",
    "ScriptedVoter",
    "VotingUser",
    "offered_options",
    # What eval's decision replay reuses of the teacher's reading (`diaforge.eval.decisions`).
    "is_refusal",
    "miss_progress",
    "options_in_thought",
    "plausible",
    "still_open",
    # The roles, whoever plays them.
    "CritiqueJudge",
    "RelevancyJudge",
    "Teacher",
    "User",
    "Voter",
    # What the dialogue engine drives besides.
    "LLMJudge",
    "LLMTeacher",
    "ScriptedCritique",
    "ScriptedRelevancy",
    "llm_goal",
    "llm_values",
    "scripted_goal",
]
