"""How the turn-sliced samples become training rows: the recipe's `slicing` choice as one object.

`train/sft.py` picks the layout once (`row_layout(args.slicing)`) and asks it, at each step that
differs, for what that step needs; the script itself holds no `if slicing == ...` branch.

* `PaddedLayout` (``slicing: naive``): one row per sample, re-encoding its whole history; TRL's
  own collator pads (or, with ``packing: true``, packs) them, and the trainer is TRL's `SFTTrainer`.
* `PrefixSharedLayout` (``slicing: prefix_shared``): each dialogue's samples in one row that holds
  their common prefixes once (train/prefix_shared.py), batched by `PrefixSharedCollator` (which
  builds the 4D attention mask) and trained by `prefix_shared_trainer_class()`.

A layout has four steps: `configure_model` (before the model is loaded), `datasets` (the rows
from the samples), `record` (what to add to the data fingerprint and the run summary: how the
samples are laid out, not what they are) and `trainer` (the trainer class and the extra keyword
arguments it takes, after adjusting the training arguments that depend on the layout).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from diaforge.train.slicing import to_dataset

logger = logging.getLogger("diaforge.sft")


class RowLayout(Protocol):
    """What `train/sft.py` asks of a slicing choice."""

    def configure_model(self, model_args: Any) -> None: ...

    def datasets(
        self, samples: list[dict[str, Any]], eval_samples: list[dict[str, Any]], training_args: Any
    ) -> tuple[Any, Any]: ...

    def record(self) -> dict[str, Any]: ...

    def trainer(self, training_args: Any, tokenizer: Any, model: Any) -> tuple[type, dict[str, Any]]: ...


@dataclass
class PaddedLayout:
    """One row per sample; TRL pads or packs them and trains with its own `SFTTrainer` (with the
    loss at the trained positions only, for ``loss_positions: trained``)."""

    loss_positions: str = "all"
    focal_gamma: float = 0.0

    def configure_model(self, model_args: Any) -> None:
        """Nothing to set: any attention implementation takes padded rows."""

    def datasets(
        self, samples: list[dict[str, Any]], eval_samples: list[dict[str, Any]], training_args: Any
    ) -> tuple[Any, Any]:
        return to_dataset(samples), (to_dataset(eval_samples) if eval_samples else None)

    def record(self) -> dict[str, Any]:
        return {}

    def trainer(self, training_args: Any, tokenizer: Any, model: Any) -> tuple[type, dict[str, Any]]:
        from diaforge.train.loss_positions import positions_trainer_class

        return positions_trainer_class(self.loss_positions, focal_gamma=self.focal_gamma), {}


@dataclass
class PrefixSharedLayout:
    """Each dialogue's samples in one row with a 4D attention mask (train/prefix_shared.py)."""

    loss_positions: str = "all"
    focal_gamma: float = 0.0
    #: Dialogues over the same listing in one row (``share_listing: true``; the samples carry
    #: `diaforge.train.prefix_shared.LISTING`, set by `train/sft.py`).
    share_listing: bool = False

    #: Statistics of the training rows, set by `datasets`.
    stats: Any = field(default=None, init=False)

    def configure_model(self, model_args: Any) -> None:
        """Its rows carry a 4D attention mask: SDPA unless the recipe chose an attention that takes
        one (`check_recipe` refuses the others)."""
        if not model_args.attn_implementation:
            model_args.attn_implementation = "sdpa"

    def datasets(
        self, samples: list[dict[str, Any]], eval_samples: list[dict[str, Any]], training_args: Any
    ) -> tuple[Any, Any]:
        """The same samples, each dialogue's in one row that holds their common prefixes once
        (several dialogues' rows packed together with ``packing: true``)."""
        from diaforge.train.prefix_shared import build_prefix_shared

        options = {
            "max_length": training_args.max_length,
            "packing": training_args.packing,
            "share_listing": self.share_listing,
            "progress": training_args.process_index == 0 and not training_args.disable_tqdm,
        }
        rows, self.stats = build_prefix_shared(samples, **options)
        logger.info("training rows: %s", self.stats.summary())
        eval_dataset = None
        if eval_samples:
            eval_rows, _ = build_prefix_shared(eval_samples, **options)
            eval_dataset = to_dataset(eval_rows)
        return to_dataset(rows), eval_dataset

    def record(self) -> dict[str, Any]:
        return {"prefix_shared": {**self.stats.as_dict(), "share_listing": self.share_listing}}

    def trainer(self, training_args: Any, tokenizer: Any, model: Any) -> tuple[type, dict[str, Any]]:
        """The rows are packed already (or not) and batched by their own collator: TRL must neither
        pack them nor drop their extra columns. The mask takes the dtype of the attention's queries."""
        import torch

        from diaforge.train.prefix_shared import PrefixSharedCollator, prefix_shared_trainer_class

        if training_args.bf16 or training_args.fp16:
            mask_dtype = torch.bfloat16 if training_args.bf16 else torch.float16
        else:
            mask_dtype = model.dtype
        collator = PrefixSharedCollator(
            pad_token_id=tokenizer.pad_token_id,
            dtype=mask_dtype,
            pad_to_multiple_of=training_args.pad_to_multiple_of,
        )
        training_args.packing = False
        training_args.padding_free = False
        training_args.remove_unused_columns = False
        trainer = prefix_shared_trainer_class(self.loss_positions, self.focal_gamma)
        return trainer, {"data_collator": collator}


LAYOUTS: dict[str, type] = {"naive": PaddedLayout, "prefix_shared": PrefixSharedLayout}


def row_layout(
    slicing: str, loss_positions: str = "all", focal_gamma: float = 0.0, *, share_listing: bool = False
) -> RowLayout:
    """The layout of a recipe's `slicing` value (already checked against `diaforge.train.recipe_fields.SLICING`),
    its trainer computing the loss at `loss_positions` with the focal factor `focal_gamma`
    (train/loss_positions.py); `share_listing` (prefix-shared only, `check_recipe` refuses it
    otherwise) puts dialogues over one listing in one row."""
    layout = LAYOUTS[slicing]()
    layout.loss_positions = loss_positions
    layout.focal_gamma = focal_gamma
    if share_listing:
        layout.share_listing = True
    return layout
