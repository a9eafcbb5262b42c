"""A tiny random Llama in float64 (greedy ties between two logits cannot flip with the summation
order): the decoding tests of the generator and of the bench's replay share it."""

from __future__ import annotations

import torch


def tiny_llama(vocab: int, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).double().eval()
