"""Chat backends: `openai` (any OpenAI-compatible server), `hf` (local transformers), `scripted`
(rule-based agents, no model). See `diaforge.llm.base` for the interface."""
