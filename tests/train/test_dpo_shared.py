"""Shared-prompt DPO rows (train/dpo_shared.py) against TRL's own `DPOTrainer`.

The layout, by hand: a pair's row, its positions, parents and branches, with and without TRL's
truncation; the tree mask (each branch sees the prompt and itself); the view that lays the
per-token results out as TRL's concatenated batch. The numbers: on two tiny random Llamas (the
policy and a reference with other weights, SDPA) and the first pairs of the fixture rendered in
the default prompt format, the loss of one batch, its gradients and TRL's logged metrics from the
shared rows equal those of TRL's own trainer on the same pairs: in float64, the loss within
1e-10, the metrics within 1e-9, the gradients within 1e-6 relative (TRL's fused head computes in
fp32 even for a float64 model: its gradient rounds at about 1e-8); in fp32, the loss and the
metrics within 1e-5, the gradients within 1e-4 (measured: 0 to 5e-7, and 6e-6). Four cases: the reference's log-probs
computed in the step, precomputed before training, a LoRA adapter trained further against TRL's
frozen copy of it (as from an SFT adapter), and a new adapter against the model with it off.
The evaluation loss on held-out pairs is TRL's as well.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from _repo import FIXTURES

from diaforge.train.dpo_shared import (
    PAIR_BRANCH,
    PairView,
    SharedPromptCollator,
    pair_row,
    shared_prompt_trainer_class,
)
from diaforge.train.prefix_shared import allowed_matrix
from diaforge.train.slicing import SlicingError

TOLERANCES = {torch.float64: (1e-10, 1e-9, 1e-6), torch.float32: (1e-5, 1e-5, 1e-4)}
"""(loss, metrics, gradients relative to their largest entry) by dtype of the models."""
PROMPT, CHOSEN, REJECTED = [10, 11, 12, 13], [20, 21], [30, 31, 32]


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ------------------------------------------------------------------------------------------
# Layout
# ------------------------------------------------------------------------------------------


def test_a_pair_is_the_prompt_once_and_two_branches():
    row = pair_row(PROMPT, CHOSEN, REJECTED)
    # prompt[:-1] | prompt[-1] chosen | prompt[-1] rejected
    assert row["input_ids"] == [10, 11, 12, 13, 20, 21, 13, 30, 31, 32]
    assert row["position_ids"] == [0, 1, 2, 3, 4, 5, 3, 4, 5, 6]
    assert row["attn_parent"] == [-1, 0, 1, 2, 3, 4, 2, 6, 7, 8]
    assert row["sample_index"] == [-1, -1, -1, -1, 0, 0, -1, 1, 1, 1]
    assert row["labels"] == [-100, -100, -100, -100, 20, 21, -100, 30, 31, 32]
    assert row["naive_tokens"] == 13 and len(row["input_ids"]) == 10


def test_truncation_is_trls():
    # keep_start at 5: each sequence's first 5 tokens, then the tree of what is left.
    row = pair_row(PROMPT, CHOSEN, REJECTED, max_length=5)
    assert row["input_ids"] == [10, 11, 12, 13, 20, 13, 30]
    assert row["sample_index"] == [-1, -1, -1, -1, 0, -1, 1]
    # keep_end at 5: the last 5 tokens; the two prompts now start at different tokens, nothing is shared.
    row = pair_row(PROMPT, CHOSEN, REJECTED, max_length=5, truncation_mode="keep_end")
    assert row["input_ids"] == [11, 12, 13, 20, 21, 12, 13, 30, 31, 32]
    assert row["position_ids"] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    assert row["attn_parent"] == [-1, 0, 1, 2, 3, -1, 5, 6, 7, 8]
    assert row["sample_index"] == [-1, -1, -1, 0, 0, -1, -1, 1, 1, 1]
    # A completion token cut to position 0 has no token before it: not scored (TRL's shifted mask).
    row = pair_row([10, 11], [20, 21, 22, 23, 24, 25], [30], max_length=5, truncation_mode="keep_end")
    assert row["input_ids"][:5] == [21, 22, 23, 24, 25] and row["sample_index"][:5] == [-1, 0, 0, 0, 0]
    with pytest.raises(SlicingError, match="truncation_mode"):
        pair_row(PROMPT, CHOSEN, REJECTED, max_length=5, truncation_mode="middle")


def test_each_branch_sees_the_prompt_and_itself():
    allowed = allowed_matrix(pair_row(PROMPT, CHOSEN, REJECTED)["attn_parent"])
    seen = {i: [j for j in range(10) if allowed[i, j]] for i in range(10)}
    assert seen[5] == [0, 1, 2, 3, 4, 5]  # last chosen token: the prompt and the chosen branch
    assert seen[6] == [0, 1, 2, 6]  # the rejected branch's copy of the last prompt token
    assert seen[9] == [0, 1, 2, 6, 7, 8, 9]  # last rejected token: never the chosen branch


def test_the_collator_and_the_view_of_trls_batch():
    examples = [
        {"prompt_ids": PROMPT, "chosen_ids": CHOSEN, "rejected_ids": REJECTED, "ref_chosen_logps": -1.5},
        {"prompt_ids": [40, 41], "chosen_ids": [50], "rejected_ids": [60, 61], "ref_chosen_logps": -2.5},
    ]
    for e in examples:
        e["ref_rejected_logps"] = -3.0
    batch = SharedPromptCollator(pad_token_id=0)(examples)
    assert batch["input_ids"].tolist() == [
        [10, 11, 12, 13, 20, 21, 13, 30, 31, 32],
        [40, 41, 50, 41, 60, 61] + [0] * 4,
    ]
    assert batch["position_ids"][1].tolist() == [0, 1, 2, 1, 2, 3, 0, 0, 0, 0]
    assert batch[PAIR_BRANCH][1].tolist() == [-1, -1, 0, -1, 1, 1, -1, -1, -1, -1]
    assert batch["attention_mask"].shape == (2, 1, 10, 10)
    assert batch["ref_chosen_logps"].tolist() == [-1.5, -2.5]

    view = PairView(batch)
    # TRL's own batch: chosen of pair 0, chosen of pair 1, rejected of pair 0, rejected of pair 1,
    # each token at its position in its sequence (prompt places left 0: TRL's loss never reads them).
    inputs = view.view_inputs()
    assert inputs["input_ids"].tolist() == [
        [0, 0, 0, 0, 20, 21, 0],
        [0, 0, 50, 0, 0, 0, 0],
        [0, 0, 0, 0, 30, 31, 32],
        [0, 0, 60, 61, 0, 0, 0],
    ]
    assert inputs["completion_mask"].tolist() == (inputs["input_ids"] > 0).long().tolist()
    assert inputs["attention_mask"].sum(dim=1).tolist() == [6, 3, 7, 4]  # 4 + 2, 2 + 1, 4 + 3, 2 + 2
    # A per-token result of the rows ([B, L - 1], entry j - 1 scores token j) in TRL's layout
    # ([2B, 6], entry p - 1 scores position p).
    per_token = torch.arange(9.0).repeat(2, 1) + torch.tensor([[0.0], [100.0]])
    assert view.gather(per_token).tolist() == [
        [0, 0, 0, 3, 4, 0],  # pair 0's chosen tokens 4, 5 (positions 4, 5)
        [0, 101, 0, 0, 0, 0],  # pair 1's chosen token 2 (position 2)
        [0, 0, 0, 6, 7, 8],  # pair 0's rejected tokens 7, 8, 9 (positions 4, 5, 6)
        [0, 103, 104, 0, 0, 0],  # pair 1's rejected tokens 4, 5 (positions 2, 3)
    ]
    assert view.labels()[1].tolist() == [-100, -100, 50, -100, 60, 61, -100, -100, -100, -100]
    assert int(view.real_tokens()) == 10 + 6


# ------------------------------------------------------------------------------------------
# Parity with TRL's DPOTrainer
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(policy path, reference path, tokenizer, preference rows): two tiny random Llamas with one
    tokenizer (seeds 0 and 1), and the first 6 pairs of the fixture in the default prompt format."""
    from transformers import AutoTokenizer

    from diaforge.format import PromptFormat, load_pair_records, preference_rows
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_model
    from diaforge.train.slicing import dialogue_texts

    texts = dialogue_texts(load_dialogues(FIXTURES / "dialogues_small.jsonl"))
    root = tmp_path_factory.mktemp("dpo-shared")
    policy = build_tiny_model(root / "policy", texts=texts, seed=0)
    reference = build_tiny_model(root / "reference", texts=texts, seed=1)
    records = load_pair_records(FIXTURES / "pairs_small.jsonl")[:6]
    rows = [
        {k: r[k] for k in ("prompt", "chosen", "rejected")} for r in preference_rows(records, PromptFormat())
    ]
    return policy, reference, AutoTokenizer.from_pretrained(policy), rows


def _load(path, dtype):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa")


def _lora_config():
    from peft import LoraConfig

    return LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear")


def _move_adapter(model) -> None:
    """Sets the trained adapter's B (not the frozen ``ref`` copy TRL made of it) to seeded random
    values, so that the policy differs from its reference."""
    gen = torch.Generator().manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B.default" in name:
            p.data.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.05)


def _step(trainer_class, model, ref_model, peft_config, rows, tokenizer, out, **config):
    """Loss, gradients and logged metrics of the first batch (3 pairs) of a fresh trainer
    (the trained adapter moved first when there is no reference model)."""
    import datasets
    from trl import DPOConfig

    args = DPOConfig(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        report_to="none",
        per_device_train_batch_size=3,
        max_length=2048,
        disable_dropout=True,
        seed=0,
        **config,
    )
    trainer = trainer_class(
        model=model,
        ref_model=ref_model,
        args=args,
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    if ref_model is None:
        _move_adapter(trainer.model)
    batch = next(iter(trainer.get_train_dataloader()))
    trainer.model.train()
    loss = trainer.compute_loss(trainer.model, batch)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    metrics = {k: v[0] for k, v in trainer._metrics["train"].items()}
    return loss.item(), grads, metrics, batch


CASES = {
    "reference in the step": ({"precompute_ref_log_probs": False}, "reference"),
    "reference precomputed": ({"precompute_ref_log_probs": True}, "reference"),
    # An adapter trained further (as from an SFT adapter): the reference is TRL's frozen copy of it.
    "LoRA, frozen copy as reference": ({"precompute_ref_log_probs": False}, "adapter"),
    # A new adapter on a full model: the reference is the model with the adapter off.
    "new LoRA, adapter off as reference": ({"precompute_ref_log_probs": False}, "new adapter"),
}


PARITY = [(case, torch.float64) for case in CASES] + [
    ("reference in the step", torch.float32),
    ("LoRA, frozen copy as reference", torch.float32),
]


@pytest.mark.parametrize(("case", "dtype"), PARITY, ids=[f"{c}, {str(d)[6:]}" for c, d in PARITY])
def test_loss_and_gradients_equal_trls(tiny, tmp_path, case, dtype):
    from trl import DPOTrainer

    policy, reference, tokenizer, rows = tiny
    config, kind = CASES[case]
    model, ref, peft_config = _load(policy, dtype), None, None
    if kind == "reference":
        ref = _load(reference, dtype)
    elif kind == "adapter":
        from peft import get_peft_model

        model = get_peft_model(model, _lora_config())
    else:
        peft_config = _lora_config()
    got = {}
    for name, cls in (("trl", DPOTrainer), ("shared", shared_prompt_trainer_class())):
        got[name] = _step(
            cls,
            copy.deepcopy(model),
            copy.deepcopy(ref),
            peft_config,
            rows,
            tokenizer,
            tmp_path / name,
            **config,
        )
    (loss, grads, metrics, batch), (s_loss, s_grads, s_metrics, s_batch) = got["trl"], got["shared"]
    assert PAIR_BRANCH in s_batch and PAIR_BRANCH not in batch
    # A real loss: the reference is not the policy, so it is not ln 2.
    assert abs(loss - math.log(2)) > 0.01
    loss_tol, metric_tol, grad_tol = TOLERANCES[dtype]
    assert s_loss == pytest.approx(loss, abs=loss_tol)
    assert grads.keys() == s_grads.keys() and grads
    if kind != "reference":
        assert all("lora_" in n and ".default." in n for n in grads)
    for name, g in grads.items():
        assert float((s_grads[name] - g).abs().max()) <= grad_tol * float(g.abs().max()), name
    for key in ("logps/chosen", "logps/rejected", "rewards/chosen", "rewards/rejected", "rewards/margins"):
        assert s_metrics[key] == pytest.approx(metrics[key], rel=metric_tol, abs=metric_tol), key
    for key in ("entropy", "logits/chosen", "logits/rejected", "mean_token_accuracy", "rewards/accuracies"):
        assert s_metrics[key] == pytest.approx(metrics[key], rel=metric_tol, abs=metric_tol), key
    if config["precompute_ref_log_probs"]:
        assert s_batch["ref_chosen_logps"] == pytest.approx(batch["ref_chosen_logps"], rel=metric_tol)
        assert s_batch["ref_rejected_logps"] == pytest.approx(batch["ref_rejected_logps"], rel=metric_tol)
    # The tokens read: every pair's prompt once (plus one token per pair) instead of twice.
    trl_tokens = int(batch["attention_mask"].sum())
    assert metrics["num_tokens"] == trl_tokens
    prompts = trl_tokens - int(batch["completion_mask"].sum())  # both copies of the 3 prompts
    assert s_metrics["num_tokens"] == trl_tokens - prompts // 2 + 3


def test_evaluation_loss_equals_trls(tiny, tmp_path):
    """`evaluate()` on held-out pairs (reference log-probs precomputed for them too): TRL's loss."""
    import datasets
    from trl import DPOConfig, DPOTrainer

    policy, reference, tokenizer, rows = tiny
    losses = {}
    for name, cls in (("trl", DPOTrainer), ("shared", shared_prompt_trainer_class())):
        args = DPOConfig(
            output_dir=str(tmp_path / name),
            use_cpu=True,
            bf16=False,
            report_to="none",
            per_device_eval_batch_size=2,
            max_length=2048,
            precompute_ref_log_probs=True,
        )
        trainer = cls(
            model=_load(policy, torch.float64),
            ref_model=_load(reference, torch.float64),
            args=args,
            train_dataset=datasets.Dataset.from_list(rows[:2]),
            eval_dataset=datasets.Dataset.from_list(rows[2:]),
            processing_class=tokenizer,
        )
        losses[name] = trainer.evaluate()
    assert losses["shared"]["eval_loss"] == pytest.approx(losses["trl"]["eval_loss"], abs=1e-9)
    assert abs(losses["trl"]["eval_loss"] - math.log(2)) > 0.01
    for key in ("eval_rewards/margins", "eval_logps/chosen", "eval_logps/rejected"):
        assert losses["shared"][key] == pytest.approx(losses["trl"][key], rel=1e-9, abs=1e-9), key
