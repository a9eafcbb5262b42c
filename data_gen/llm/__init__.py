"""Chat backends: `openai` (any OpenAI-compatible server), `hf` (local transformers), `scripted`
(rule-based agents, no model). See `data_gen.llm.base` for the interface."""
