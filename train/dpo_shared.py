"""Shared-prompt DPO rows: a preference pair's prompt read once, with its chosen and its rejected
continuation as two branches of one row.

TRL's `DPOTrainer` reads a pair as two sequences, prompt + chosen and prompt + rejected, so a step
reads every prompt twice; with our prompts (hundreds of tokens of system prompt, tool listing and
dialogue) and short completions, most of a step is the second reading. With ``shared_prompt: true``
a pair is one row instead, laid out by train/prefix_shared.py's tree builder (`GroupBuilder`, the
pair's two sequences as its two samples):

    prompt[:-1] | prompt[-1] chosen | prompt[-1] rejected

The prompt's tokens but the last are held once; each branch repeats the last prompt token (the
position that predicts the first completion token belongs to its own branch) and continues with
its completion, every token at the position it has in its own sequence (so the rejected branch
restarts at ``len(prompt) - 1``). Under the tree mask a token attends to its own chain of parents
only: the chosen branch sees the prompt and itself, the rejected branch the prompt and itself,
neither sees the other. Each branch therefore gets exactly the hidden states of its own sequence
read alone, and the row costs ``len(prompt) + len(chosen) + len(rejected) + 1`` tokens instead of
``2 len(prompt) + len(chosen) + len(rejected)``.

What is computed from the one forward pass of a row, for the policy and for the reference alike
(TRL's sequence log-probability, its sigmoid loss and every other one):

    logp(chosen)   = sum over the chosen tokens y_t   of log p(y_t | prompt, y_<t)
    logp(rejected) = the same over the rejected tokens

The token after each completion token in the row is its own successor in the branch, so the
fused LM head TRL puts on the model (labels shifted by one) scores each completion token from the
token before it, unchanged; the row's labels are its completion tokens. The trainer
(`shared_prompt_trainer_class`) then lays the per-token results out as TRL's concatenated batch
(chosen sequences, then rejected sequences, each token at its position: `PairView`) and hands them
to TRL's own loss code, so the loss, ``ld_alpha``, WPO weights and every logged metric are TRL's.
Truncation to ``max_length`` is TRL's too (each of the two sequences on its own, then the tree of
what is left); a completion token at position 0 (``keep_end`` cutting into the completion) has no
token before it and is not scored, as in TRL. tests/train/test_dpo_shared.py checks the loss and
the gradients against TRL's own trainer on the same pairs.

The mask is a dense float ``[batch, 1, L, L]`` mask (`PrefixSharedCollator`), for SDPA or eager
attention; flash attention takes no such mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from diaforge.train.prefix_shared import GroupBuilder, PrefixSharedCollator, real_tokens
from diaforge.train.slicing import IGNORE_INDEX, SlicingError

PAIR_BRANCH = "pair_branch"
"""The batch key of a shared-prompt row's branch per token: 0 on a chosen completion token that is
scored, 1 on a rejected one, -1 elsewhere (prompt, padding)."""
CHOSEN, REJECTED = 0, 1


def truncated(prompt: Sequence[int], completion: Sequence[int], max_length: int | None, mode: str):
    """`(ids, number of prompt tokens at their start)` of prompt + completion truncated as TRL's
    `DataCollatorForPreference` truncates it (``keep_start``: the first `max_length` tokens;
    ``keep_end``: the last)."""
    ids = [*prompt, *completion]
    start = 0
    if max_length is not None and len(ids) > max_length:
        if mode == "keep_start":
            ids = ids[:max_length]
        elif mode == "keep_end":
            start = len(ids) - max_length
            ids = ids[start:]
        else:
            raise SlicingError(f"truncation_mode: {mode!r} is not keep_start or keep_end")
    return ids, min(max(len(prompt) - start, 0), len(ids))


def pair_row(
    prompt_ids: Sequence[int],
    chosen_ids: Sequence[int],
    rejected_ids: Sequence[int],
    *,
    max_length: int | None = None,
    truncation_mode: str = "keep_start",
) -> dict[str, Any]:
    """One preference pair as one tree row (see the module docstring): the `GroupBuilder` row of
    the two truncated sequences, chosen first, with ``sample_index`` 0 on the scored chosen tokens
    and 1 on the scored rejected ones. Only prompt tokens are shared (the common token prefix of
    the two sequences, at most all prompt tokens but the last)."""
    group = GroupBuilder()
    for index, completion in ((CHOSEN, chosen_ids), (REJECTED, rejected_ids)):
        ids, prompt_len = truncated(prompt_ids, completion, max_length, truncation_mode)
        labels = [IGNORE_INDEX if p < max(prompt_len, 1) else t for p, t in enumerate(ids)]
        group.add({"input_ids": ids, "labels": labels, "num_prompt_tokens": max(prompt_len, 1)}, index)
    row = group.row()
    for j, k in enumerate(row["sample_index"]):
        if k >= 0 and row["attn_parent"][j] != j - 1:  # the fused head scores token j from token j - 1
            raise SlicingError(f"pair row: scored token {j} does not follow its parent")
    return row


@dataclass
class SharedPromptCollator:
    """Batches TRL's tokenized preference examples (``prompt_ids``, ``chosen_ids``,
    ``rejected_ids``, and ``ref_chosen_logps``/``ref_rejected_logps`` once precomputed) as one
    shared-prompt row per pair: `input_ids`, `position_ids`, the float 4D `attention_mask` of
    `PrefixSharedCollator` (`dtype` must be the attention queries' dtype) and `PAIR_BRANCH`.
    `max_length`, `truncation_mode` and `pad_to_multiple_of` mean what they mean to TRL's
    `DataCollatorForPreference`."""

    pad_token_id: int
    dtype: Any = None
    max_length: int | None = None
    truncation_mode: str = "keep_start"
    pad_to_multiple_of: int | None = None

    @classmethod
    def like(cls, collator: Any, dtype: Any) -> SharedPromptCollator:
        """The shared-prompt collator with the settings of TRL's `DataCollatorForPreference`."""
        return cls(
            pad_token_id=collator.pad_token_id,
            dtype=dtype,
            max_length=collator.max_length,
            truncation_mode=collator.truncation_mode,
            pad_to_multiple_of=collator.pad_to_multiple_of,
        )

    def rows(self, examples: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            pair_row(
                e["prompt_ids"],
                e["chosen_ids"],
                e["rejected_ids"],
                max_length=self.max_length,
                truncation_mode=self.truncation_mode,
            )
            for e in examples
        ]

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        pad = PrefixSharedCollator(
            self.pad_token_id,
            dtype=self.dtype,
            pad_to_multiple_of=self.pad_to_multiple_of,
            return_sample_index=True,
        )
        batch = pad(self.rows(examples))
        out = {k: batch[k] for k in ("input_ids", "attention_mask", "position_ids")}
        out[PAIR_BRANCH] = batch["sample_index"]
        for key in ("ref_chosen_logps", "ref_rejected_logps"):
            if key in examples[0]:
                out[key] = torch.tensor([e[key] for e in examples])
        return out


class PairView:
    """The per-token results of a batch of shared-prompt rows, laid out as TRL's concatenated
    batch: ``2B`` sequences (the B chosen, then the B rejected), each token at its position in its
    own sequence, right-padded to the longest. Only the completion tokens are filled in (the
    prompt's places hold zeros): TRL's loss code reads nothing else, and its sums over a sequence
    then add the same numbers in the same places as on TRL's own batch.

    `view_inputs` is the batch TRL's loss code reads (`input_ids` and `completion_mask` of that
    layout, `attention_mask` 1 on each sequence's places, the reference log-probs when the batch
    has them); `forward(model)` is a stand-in for the model that TRL's loss code calls: it runs
    the model with its fused head on the shared rows, whatever it is called with, and returns the
    per-token fields (log-probs, entropy, ...) moved into the same layout."""

    def __init__(self, inputs: dict[str, Any]) -> None:
        import torch

        branch = inputs[PAIR_BRANCH]
        self.inputs = inputs
        b, length = branch.shape
        scored = torch.cat([branch == CHOSEN, branch == REJECTED])  # [2B, L]: chosen rows first
        seq, token = scored.nonzero(as_tuple=True)
        row = seq % b
        pos = inputs["position_ids"][row, token]
        width = max(int(pos.max()) + 1 if len(pos) else 1, 2)
        self.shape = (2 * b, width)
        # TRL's per-token tensors are [2B, width - 1], entry p - 1 scoring position p; the model's
        # are [B, L - 1], entry j - 1 scoring token j of a row.
        self.index = torch.zeros(2 * b, width - 1, dtype=torch.long, device=branch.device)
        self.valid = torch.zeros(2 * b, width - 1, dtype=torch.bool, device=branch.device)
        self.index[seq, pos - 1] = row * (length - 1) + token - 1
        self.valid[seq, pos - 1] = True
        self.ids = torch.zeros(self.shape, dtype=inputs["input_ids"].dtype, device=branch.device)
        self.ids[seq, pos] = inputs["input_ids"][row, token]
        self.lengths = torch.zeros(2 * b, dtype=torch.long, device=branch.device)
        self.lengths.scatter_reduce_(0, seq, pos + 1, reduce="amax")

    def labels(self):
        """The shared rows' labels: each scored completion token, -100 elsewhere."""
        return self.inputs["input_ids"].masked_fill(self.inputs[PAIR_BRANCH] < 0, IGNORE_INDEX)

    def gather(self, per_token):
        """A ``[B, L - 1]`` per-token tensor of the rows in TRL's ``[2B, width - 1]`` layout (0
        outside the completions)."""
        if per_token is None:
            return None
        return per_token.reshape(-1)[self.index].masked_fill(~self.valid, 0)

    def view_inputs(self) -> dict[str, Any]:
        import torch

        completion = torch.cat([torch.zeros_like(self.valid[:, :1]), self.valid], dim=1).long()
        places = torch.arange(self.shape[1], device=self.ids.device)
        view = {
            "input_ids": self.ids,
            "attention_mask": (places < self.lengths[:, None]).long(),
            "completion_mask": completion,
        }
        for key in ("ref_chosen_logps", "ref_rejected_logps"):
            if key in self.inputs:
                view[key] = self.inputs[key]
        return view

    def real_tokens(self):
        """Tokens of the shared rows, padding left out."""
        return real_tokens(self.inputs["attention_mask"])

    def forward(self, model: Any):
        """A callable that TRL's loss code can call as the model (see the class docstring)."""
        from trl.trainer.utils import FusedCausalLMOutput

        rows = {k: self.inputs[k] for k in ("input_ids", "attention_mask", "position_ids")}

        def call(*args: Any, fused_lm_head: bool = False, output_router_logits: bool = False, **_: Any):
            extra = {"output_router_logits": True} if output_router_logits else {}
            if not fused_lm_head:  # TRL's deprecated logits for `compute_metrics`: the rows' own
                return model(**rows, use_cache=False, **extra)
            out = model(**rows, labels=self.labels(), fused_lm_head=True, use_cache=False, **extra)
            fields = ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1", "label_mask")
            return FusedCausalLMOutput(
                loss=out.loss, aux_loss=out.aux_loss, **{f: self.gather(getattr(out, f)) for f in fields}
            )

        return call


def shared_prompt_trainer_class():
    """TRL's `DPOTrainer` reading each pair as one shared-prompt row (module docstring).

    Only the batching and the forward pass change: the collator is TRL's own swapped for
    `SharedPromptCollator` with its settings (before the reference log-probs are precomputed), and
    `compute_loss` and `compute_ref_log_probs` give TRL's code a `PairView` of each batch. The
    reference's log-probs, when not precomputed, are read from one shared-prompt forward pass of
    the reference too (the frozen ``ref`` adapter, the model with its adapter off, or the separate
    reference model, as TRL chooses it) and handed to TRL's loss as if precomputed. TRL's
    `num_tokens` metric counts the tokens of the shared rows."""
    import contextlib

    from trl import DPOTrainer
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    class SharedPromptDPOTrainer(DPOTrainer):
        def _use_shared_rows(self) -> None:
            if isinstance(self.data_collator, DataCollatorForPreference):
                self.data_collator = SharedPromptCollator.like(self.data_collator, self._mask_dtype())

        def _mask_dtype(self):
            import torch

            if self.args.bf16 or self.args.fp16:
                return torch.bfloat16 if self.args.bf16 else torch.float16
            return self.model.dtype

        def _precompute_ref_logps(self, dataset, name, batch_size):
            self._use_shared_rows()
            return super()._precompute_ref_logps(dataset, name, batch_size)

        def get_train_dataloader(self):
            self._use_shared_rows()
            return super().get_train_dataloader()

        def get_eval_dataloader(self, eval_dataset=None):
            self._use_shared_rows()
            return super().get_eval_dataloader(eval_dataset)

        def compute_ref_log_probs(self, model, inputs):
            if PAIR_BRANCH not in inputs:
                return super().compute_ref_log_probs(model, inputs)
            view = PairView(inputs)
            return super().compute_ref_log_probs(view.forward(model), view.view_inputs())

        @contextlib.contextmanager
        def _reference_in_batch(self):
            before = self.precompute_ref_logps
            self.precompute_ref_logps = True
            try:
                yield
            finally:
                self.precompute_ref_logps = before

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if PAIR_BRANCH not in inputs:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            view = PairView(inputs)
            batch = view.view_inputs()
            if not self.precompute_ref_logps:
                reference = self.ref_model if self.ref_model is not None else self.model
                batch["ref_chosen_logps"], batch["ref_rejected_logps"] = self.compute_ref_log_probs(
                    reference, inputs
                )
            training = self.model.training
            before = self._total_train_tokens
            with self._reference_in_batch():
                result = super().compute_loss(view.forward(model), batch, return_outputs, num_items_in_batch)
            if training:
                count = self.accelerator.gather_for_metrics(view.real_tokens()).sum().item()
                self._total_train_tokens = before + count // self._tp_size
                self._metrics["train"]["num_tokens"] = [self._total_train_tokens]
            return result

        def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
            # The loss only: TRL's logits of a concatenated batch have no shared-row counterpart.
            return super().prediction_step(model, inputs, True, ignore_keys)

    return SharedPromptDPOTrainer
