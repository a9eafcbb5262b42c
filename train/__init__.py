"""Turn-sliced LoRA/QLoRA supervised fine-tuning of tool-calling models."""
