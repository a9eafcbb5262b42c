"""Logits and loss only at the trained positions (recipe key ``loss_positions``).

TRL's `SFTTrainer` projects every position of a row through the LM head (on a CPU its fused head
scores them all: only Triton devices skip the untrained ones), although only the positions whose
next token carries a label feed the loss. In a turn-sliced row those are a fifth to a third of the
tokens; the rest (system prompt, tool listing, user turns, padding) cost a ``[tokens, vocab]``
projection and a full-vocabulary softmax for nothing, forward and backward.

With ``loss_positions: trained`` the trainer runs the model with ``logits_to_keep`` set to the
1-D tensor of the positions p whose next label ``labels[:, p + 1]`` is not -100 (in any row of
the batch; transformers' `slice_logits_to_keep` then projects only those hidden states) and
computes the loss itself, exactly as TRL 1.16's `SFTTrainer.compute_loss` does: the negative
log-probability of each label token (times its detached probability for ``loss_type: dft``),
summed and divided by ``num_items_in_batch`` (the label tokens of the whole accumulated step, as
the Trainer counts them) or, without it, by the batch's label tokens, clamped at 1; multiplied by
the number of processes when ``average_tokens_across_devices`` averages the gradients. The logged
``mean_token_accuracy`` (the label is the first argmax) and ``entropy`` (of the full-vocabulary
distribution at each label token) and ``num_tokens`` are TRL's. Same loss and gradients up to float
rounding (tests/train/test_loss_positions.py); the logits are upcast to float32 as TRL's kernel
does. Unlike TRL's tiles, the ``[trained positions, vocab]`` logits are held whole (with their
log-softmax and gradient: about 0.4 GB for 500 trained positions of SmolLM2's 49,152 tokens).

On a device where TRL's fused head runs its Triton kernel (CUDA, XPU) that kernel already scores
only the trained positions, in tiles, without ever holding the ``[positions, vocab]`` logits that
this path materialises: there ``trained`` leaves TRL's path in place (said once, at info level).

TRL's own path is also kept (``loss_positions: all``, and as a fallback, with one warning) where
this one would change what TRL computes: a `compute_loss_func`, label smoothing, an MoE auxiliary loss,
a ``loss_type`` other than nll or dft, sequence or context parallelism, pre-shifted labels, the
deprecated ``return_outputs`` (evaluation with `compute_metrics`), and models whose forward does
not take a tensor ``logits_to_keep`` (found on the first batch: the signature, then the shape of
the logits).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from diaforge.train.recipe_fields import LOSS_POSITIONS
from diaforge.train.slicing import IGNORE_INDEX

logger = logging.getLogger("diaforge.sft")


def trained_positions(labels: Any) -> Any:
    """The 1-D LongTensor of the positions p whose next label, ``labels[:, p + 1]``, is not -100
    in at least one row of the batch (the positions whose logits the loss reads)."""
    return (labels[:, 1:] != IGNORE_INDEX).any(dim=0).nonzero().flatten()


def takes_logits_to_keep(model: Any) -> bool:
    """Whether the forward of `model` (under its PEFT and accelerate wrappers) names a
    ``logits_to_keep`` argument; a forward that swallows unknown keyword arguments does not count."""
    inner = model
    for _ in range(4):  # DDP -> PeftModel -> the causal LM
        if hasattr(inner, "module"):
            inner = inner.module
        elif hasattr(inner, "get_base_model"):
            inner = inner.get_base_model()
        else:
            break
    try:
        return "logits_to_keep" in inspect.signature(inner.forward).parameters
    except (TypeError, ValueError):
        return False


TRL_COMPACT = "TRL's fused head scores only the trained positions on this device (Triton)"


def trl_scores_trained_only(device: Any) -> bool:
    """Whether TRL's fused LM head already projects only the trained positions on `device` (its
    Triton kernel; elsewhere it scores every position)."""
    try:
        from trl.kernels.chunked_logprob import _use_triton
    except ImportError:  # another TRL layout: assume the CPU behaviour
        return False
    return bool(_use_triton(device))


def _unsupported(trainer: Any, inputs: dict[str, Any]) -> str | None:
    """Why the trained-positions path cannot reproduce TRL's loss for this trainer, or None."""
    if "labels" not in inputs or getattr(inputs["labels"], "ndim", 0) != 2:
        return "the batch has no [batch, length] labels"
    if trl_scores_trained_only(inputs["labels"].device):
        return TRL_COMPACT
    if "shift_labels" in inputs:
        return "the batch carries pre-shifted labels (context parallelism)"
    if trainer.compute_loss_func is not None:
        return "a compute_loss_func is set"
    if trainer.label_smoother is not None:
        return "label smoothing needs the full logits"
    if getattr(trainer, "aux_loss_enabled", False):
        return "the MoE auxiliary loss is enabled"
    if getattr(trainer.args, "loss_type", "nll") not in ("nll", "dft"):
        return f"loss_type {trainer.args.loss_type!r} is not nll or dft"
    parallelism = getattr(trainer.accelerator, "parallelism_config", None)
    if parallelism is not None and (
        getattr(parallelism, "sp_enabled", False) or getattr(parallelism, "cp_enabled", False)
    ):
        return "sequence or context parallelism"
    if not takes_logits_to_keep(trainer.model):
        return f"the forward of {type(trainer.model).__name__} takes no logits_to_keep"
    return None


def token_log_probs(logits: Any, targets: Any) -> tuple[Any, Any, Any]:
    """(log-probability of each target, the log-softmax, the target mask) for logits ``[..., V]``
    and targets ``[...]`` (-100 where untrained: log-probability 0 there). Computed in float32 at
    least, as TRL's fused head does."""
    import torch

    logp = torch.log_softmax(logits if logits.dtype == torch.float64 else logits.float(), dim=-1)
    mask = targets != IGNORE_INDEX
    picked = logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return picked.masked_fill(~mask, 0.0), logp, mask


def focal_weights(log_probs: Any, gamma: float) -> Any:
    """The focal factor ``(1 - p) ** gamma`` of each label token (p its probability), detached: a
    token the model already predicts well weighs almost nothing, a token it gets wrong about 1.

    Why: in a tool-calling turn most trained tokens are template (the thought's fixed phrases, JSON
    punctuation, copied signatures) that the model predicts with p near 1 after a few dozen steps,
    while the decisions (ask or call on the first turn, which tool, which value) are a few tokens
    each. Under the plain token mean those few tokens carry a few percent of the gradient; the focal
    factor (Lin et al., 2017) hands it to the tokens still wrong. With Adam the overall scale of the
    loss matters little, so the factor redistributes the update rather than shrinking it.
    """
    return (1.0 - log_probs.detach().exp()).clamp(min=0.0).pow(gamma)


class TrainedPositionsLoss:
    """Mixin for `trl.SFTTrainer` (put it first among the bases): ``loss_positions`` (a class
    attribute, "all" or "trained") picks TRL's loss over every position or the one computed from
    the trained positions' logits alone; see the module docstring."""

    loss_positions: str = "all"
    focal_gamma: float = 0.0  # > 0: each token's loss times (1 - p)^gamma (recipe key focal_gamma)
    _positions_checked: bool = False  # the first batch on the trained path checks the model once
    _positions_refused: str | None = None  # why TRL's path is used instead, once warned

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.loss_positions == "trained" and self._positions_refused is None and not return_outputs:
            reason = _unsupported(self, inputs)
            if reason is None:
                loss = self._trained_positions_loss(model, inputs, num_items_in_batch)
                if loss is not None:
                    return loss
            else:
                self._refuse_positions(reason)
        if self.focal_gamma > 0:
            raise RuntimeError(
                f"focal_gamma {self.focal_gamma} needs the trained-positions loss, which is not used here "
                f"({self._positions_refused or 'return_outputs or loss_positions: all'}): set focal_gamma: 0"
            )
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    def _refuse_positions(self, reason: str) -> None:
        self._positions_refused = reason
        if reason == TRL_COMPACT:
            logger.info("loss_positions: trained: %s", reason)
            return
        logger.warning(
            "loss_positions: trained is not used (%s): TRL's loss over all positions instead", reason
        )

    def _trained_positions_loss(self, model: Any, inputs: dict[str, Any], num_items_in_batch: Any) -> Any:
        """TRL's `SFTTrainer.compute_loss` (nll or dft, no extras), from the logits of the trained
        positions only. None when the first batch shows that the model ignored `logits_to_keep`."""
        import torch

        mode = "train" if self.model.training else "eval"
        inputs["use_cache"] = False
        labels = inputs["labels"]
        keep = trained_positions(labels)
        model_inputs = {k: v for k, v in inputs.items() if k != "labels"}
        try:
            logits = model(**model_inputs, logits_to_keep=keep).logits
        except (TypeError, IndexError, RuntimeError) as exc:
            if self._positions_checked:
                raise
            self._refuse_positions(f"the model rejects a tensor logits_to_keep: {exc}")
            return None
        if not self._positions_checked:
            if tuple(logits.shape[:2]) != (labels.shape[0], keep.numel()):
                self._refuse_positions(f"the model returned logits of shape {tuple(logits.shape)}")
                return None
            self._positions_checked = True
        targets = labels[:, keep + 1]
        log_probs, logp, mask = token_log_probs(logits, targets)
        per_token_loss = -log_probs
        if self.args.loss_type == "dft":
            per_token_loss = per_token_loss * log_probs.exp().detach()
        if self.focal_gamma > 0:
            per_token_loss = per_token_loss * focal_weights(log_probs, self.focal_gamma)
        num_tokens = mask.sum() if num_items_in_batch is None else num_items_in_batch
        loss = per_token_loss.sum() / torch.as_tensor(num_tokens).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())
        with torch.no_grad():
            entropy = -(logp.exp() * logp).sum(-1).masked_fill(~mask, 0.0)
            is_top1 = (logits.argmax(-1) == targets) & mask
            self._log_positions_metrics(mode, inputs, mask, entropy, is_top1)
        return loss

    def _log_positions_metrics(self, mode: str, inputs: dict[str, Any], mask, entropy, is_top1) -> None:
        """TRL's entropy, mean_token_accuracy and num_tokens metrics, computed as TRL does."""
        import torch

        gather = self.accelerator.gather_for_metrics
        num_valid = gather(mask.sum()).sum()
        entropy_sum = gather(entropy.sum()).sum()
        num_correct = gather(is_top1.sum()).sum()
        self._metrics[mode]["entropy"].append((entropy_sum / num_valid).item() if num_valid > 0 else 0.0)
        self._metrics[mode]["mean_token_accuracy"].append(
            (num_correct / num_valid).item() if num_valid > 0 else 0.0
        )
        if mode == "train":
            if "attention_mask" in inputs:
                count = gather(inputs["attention_mask"].sum()).sum().item()
            else:
                position_ids = inputs["position_ids"]
                count = gather(torch.tensor(position_ids.size(1), device=position_ids.device)).sum().item()
            self._total_train_tokens += count // self._tp_size
        self._metrics[mode]["num_tokens"] = [self._total_train_tokens]


def positions_trainer_class(loss_positions: str, base: type | None = None, focal_gamma: float = 0.0) -> type:
    """`base` (TRL's `SFTTrainer` by default) with `TrainedPositionsLoss` set to `loss_positions`
    (and the focal factor `focal_gamma`, 0 for TRL's plain loss)."""
    if loss_positions not in LOSS_POSITIONS:
        raise ValueError(f"loss_positions must be one of {', '.join(LOSS_POSITIONS)}, got {loss_positions!r}")
    if base is None:
        from trl import SFTTrainer

        base = SFTTrainer
    if focal_gamma < 0:
        raise ValueError(f"focal_gamma must be >= 0, got {focal_gamma}")
    attributes = {"loss_positions": loss_positions, "focal_gamma": float(focal_gamma)}
    return type(f"{base.__name__}Positions", (TrainedPositionsLoss, base), attributes)
