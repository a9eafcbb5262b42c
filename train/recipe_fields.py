"""The DiaFORGE fields of a training recipe (`DiaforgeArguments`), their allowed values, and
`RecipeError`, the one-line mistake every recipe check raises.

`DiaforgeArguments` sits beside TRL's `SFTConfig` and `ModelConfig` in a recipe (train/config.py
reads the three); its field help texts are the recipe reference that ``--help`` prints, and its
``__post_init__`` checks each value that argparse cannot (``choices`` of values read from YAML).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diaforge.errors import UserError
from diaforge.format import HISTORY_REASONING, PROMPT_MODES, TARGET_REASONING, TOOL_STYLES, PromptFormat

# The prompt-format options take their allowed values from diaforge.format (PromptFormat); these
# two decide only how the training samples are built.
OVERFLOW = ("drop", "truncate_history")
SLICING = ("naive", "prefix_shared")
LOSS_POSITIONS = ("all", "trained")  # train/loss_positions.py


class RecipeError(UserError):
    """A recipe or command-line mistake; `str(err)` is one line meant to be printed as is."""


@dataclass
class DiaforgeArguments:
    """Data, turn slicing, run management and W&B fields of a DiaFORGE training recipe.

    The LoRA, model and optimiser settings are TRL's (`ModelConfig`, `SFTConfig`); the paper's
    values (Appendix B) are set in the recipes, not here.
    """

    dataset_path: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Dialogue JSONL file(s) written by `python -m diaforge.data_gen generate` (one or a list). Required. "
            "Every line is validated; a bad line stops the run naming file, line and field."
        },
    )
    eval_dataset_path: list[str] | None = field(
        default=None,
        metadata={
            "help": "Optional held-out dialogue JSONL file(s), sliced like the training data and used when "
            "`eval_strategy` is not 'no'. Default None: no evaluation during training."
        },
    )
    max_dialogues: int | None = field(
        default=None,
        metadata={
            "help": "Use only the first N dialogues of the training files (quick runs, demos). Default None: all."
        },
    )
    dagger_dataset_path: list[str] | None = field(
        default=None,
        metadata={
            "help": "Optional visited states of a rollout run (`diaforge data rollouts`: its dialogues.jsonl), each "
            "the model's history and the teacher's move, mixed with dataset_path at dagger_share (train/dagger.py). "
            "Default None: no DAgger data."
        },
    )
    dagger_share: float = field(
        default=0.5,
        metadata={
            "help": "Share of the training samples taken from dagger_dataset_path, in [0, 1] (1: the states alone); "
            "the rest are the original corpus's. Default 0.5. Used only with dagger_dataset_path."
        },
    )
    prompt_mode: str = field(
        default=PromptFormat.prompt_mode,
        metadata={
            "help": "'prompt' (default, the paper's format): the candidate tools are listed in the system prompt "
            "and a turn is plain text, '<think>..</think>' then a reply or a JSON call list. 'native': the tools "
            "go to the chat template's `tools=` and calls are `tool_calls`; needs a template that renders tools "
            "(and `reasoning_content`, unless target_reasoning is 'drop').",
            "choices": list(PROMPT_MODES),
        },
    )
    history_reasoning: str = field(
        default=PromptFormat.history_reasoning,
        metadata={
            "help": "Thoughts of earlier assistant turns in the prompt: 'strip' (default) removes them, as at "
            "inference, where the model never sees its own past private reasoning; 'keep' shows them.",
            "choices": list(HISTORY_REASONING),
        },
    )
    target_reasoning: str = field(
        default=PromptFormat.target_reasoning,
        metadata={
            "help": "'keep' (default): the trained turn includes its thought, as in the paper. 'drop': train the "
            "reply or call alone (the paper's 'without thinking traces' ablation).",
            "choices": list(TARGET_REASONING),
        },
    )
    overflow: str = field(
        default="truncate_history",
        metadata={
            "help": "Samples longer than `max_length`: 'truncate_history' (default) removes whole earlier "
            "user/assistant exchanges, oldest first, keeping the system prompt, the last user turn and the "
            "whole target, and drops the sample if it still does not fit; 'drop' drops it. The target is never "
            "cut. Counts are reported.",
            "choices": list(OVERFLOW),
        },
    )
    eot_token: str | None = field(
        default=None,
        metadata={
            "help": "End-of-turn token trained after each target. Default None (auto): whichever of the "
            "tokenizer's eos token, <|im_end|>, <|eot_id|>, <|eom_id|>, <end_of_turn>, <|end|>, </s> comes "
            "first after the target in the rendered conversation."
        },
    )
    tool_style: str = field(
        default=PromptFormat.tool_style,
        metadata={
            "help": "How prompt mode lists the candidate tools: 'json' (default; one JSON spec per line, as "
            "diaforge.format.system_prompt) or 'compact' (one signature line per tool, about a quarter of the "
            "tokens; for small models and CPU budgets). Recorded in prompt_format.json, which evaluation reads.",
            "choices": list(TOOL_STYLES),
        },
    )
    slicing: str = field(
        default="naive",
        metadata={
            "help": "How the turn-sliced samples reach the model. 'naive' (default): one row per sample, each "
            "re-encoding its whole history (tokens grow with the square of the turns). 'prefix_shared': all the "
            "samples of a dialogue in one row that holds their common prefixes once, with an attention mask and "
            "position ids that give every sample exactly its own view (train/prefix_shared.py): same per-sample "
            "loss, fewer tokens. A dialogue that would pass max_length is split into groups of whole samples; "
            "with `packing: true` the rows of several dialogues are packed into max_length rows (our packing, "
            "not TRL's) with no attention across them. per_device_train_batch_size then counts rows, not samples, "
            "and the loss is the mean over the batch's trained tokens, as with naive rows. Needs sdpa or eager "
            "attention (set automatically; flash attention cannot take the mask).",
            "choices": list(SLICING),
        },
    )
    share_listing: bool = field(
        default=False,
        metadata={
            "help": "With slicing: prefix_shared, dialogues over the same candidate listing (same tools, same order; "
            "`diaforge data generate --dialogues-per-listing N` writes them) share one row: the listing once, each "
            "dialogue a branch under it with its own positions and view (train/prefix_shared.py): same per-sample "
            "loss, fewer tokens per dialogue; max_length still splits rows between whole samples. Default False: one "
            "dialogue per row as before, since rows of several dialogues make fewer, larger steps per epoch.",
        },
    )
    loss_positions: str = field(
        default="trained",
        metadata={
            "help": "Where the LM head and the loss run. 'trained' (default): only at the positions whose next "
            "token is trained (the model gets `logits_to_keep`; train/loss_positions.py): TRL's loss, gradients "
            "and metrics up to float rounding, without projecting the prompt tokens onto the vocabulary. 'all': "
            "TRL's own loss over every position. Models whose forward takes no tensor `logits_to_keep` fall back "
            "to 'all' with a warning.",
            "choices": list(LOSS_POSITIONS),
        },
    )
    focal_gamma: float = field(
        default=0.0,
        metadata={
            "help": "Default 0: TRL's plain token-mean loss. Above 0, each trained token's loss is multiplied by "
            "(1 - p)^focal_gamma, p the model's detached probability of it (focal loss). Needs loss_positions: "
            "trained. At 2 the demo model stopped asking first (docs/experiments.md, row 4).",
        },
    )
    system_prompt_file: str | None = field(
        default=None,
        metadata={
            "help": "Text file replacing the built-in system prompt. In prompt mode '{tools}' in it is replaced "
            "by the candidate tools in `tool_style` (appended under 'Available tools:' when absent). Default None: "
            "the reference prompt of diaforge.format. Its text is recorded in prompt_format.json, so evaluation "
            "uses the same prompt."
        },
    )
    resume: bool = field(
        default=True,
        metadata={
            "help": "Default True: when `output_dir` holds checkpoint-* folders, resume from the last one (unless "
            "`resume_from_checkpoint` names one). False: start from scratch."
        },
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Delete existing checkpoint-* folders of `output_dir` before training (implies a fresh "
            "start). Default False: nothing is deleted."
        },
    )
    wandb_project: str | None = field(
        default=None,
        metadata={"help": "W&B project (WANDB_PROJECT). Default None: wandb's own default ('huggingface')."},
    )
    wandb_entity: str | None = field(
        default=None,
        metadata={"help": "W&B entity (team or user). Default None: the logged-in user's default entity."},
    )
    wandb_tags: list[str] | None = field(
        default=None,
        metadata={"help": "W&B run tags, e.g. [diaforge, llama-3.2-3b]. Default None: no tags."},
    )

    def __post_init__(self) -> None:
        # YAML scalars arrive as strings, lists as lists: accept both for the list fields.
        if isinstance(self.dataset_path, str):
            self.dataset_path = [self.dataset_path]
        if isinstance(self.eval_dataset_path, str):
            self.eval_dataset_path = [self.eval_dataset_path]
        if isinstance(self.dagger_dataset_path, str):
            self.dagger_dataset_path = [self.dagger_dataset_path]
        try:
            share = float(self.dagger_share)
        except (TypeError, ValueError):
            share = float("nan")
        if not 0.0 <= share <= 1.0:
            raise RecipeError(f"dagger_share must be a number in [0, 1], got {self.dagger_share!r}")
        self.dagger_share = share
        if isinstance(self.wandb_tags, str):
            self.wandb_tags = [t.strip() for t in self.wandb_tags.split(",") if t.strip()]
        # argparse does not check `choices` of values that come from the YAML file: check here.
        for name, allowed in (
            ("prompt_mode", PROMPT_MODES),
            ("history_reasoning", HISTORY_REASONING),
            ("target_reasoning", TARGET_REASONING),
            ("overflow", OVERFLOW),
            ("tool_style", TOOL_STYLES),
            ("slicing", SLICING),
            ("loss_positions", LOSS_POSITIONS),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise RecipeError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if not float(self.focal_gamma) >= 0:
            raise RecipeError(f"focal_gamma must be a number >= 0, got {self.focal_gamma!r}")
        if self.focal_gamma > 0 and self.loss_positions != "trained":
            raise RecipeError("focal_gamma needs loss_positions: trained (the focal factor is applied there)")
        if self.max_dialogues is not None and int(self.max_dialogues) < 1:
            raise RecipeError(f"max_dialogues must be a positive integer, got {self.max_dialogues!r}")

    def prompt_format(self) -> PromptFormat:
        """The recipe's `PromptFormat` with its system prompt's text: that of `system_prompt_file`
        (`InputError` naming the file when it is missing or empty), else the reference prompt as a
        template, which renders the same messages; either way prompt_format.json records the text
        and its hash."""
        from diaforge.format import read_system_prompt_file, reference_prompt_template

        if self.system_prompt_file:
            system = read_system_prompt_file(self.system_prompt_file)
        else:
            system = reference_prompt_template(self.prompt_mode)
        return PromptFormat(
            prompt_mode=self.prompt_mode,
            tool_style=self.tool_style,
            history_reasoning=self.history_reasoning,
            target_reasoning=self.target_reasoning,
            system_prompt=system,
            eot_token=self.eot_token,
        )

    def slicing_config(self) -> dict[str, Any]:
        """The fields that decide what the samples are (part of the data fingerprint)."""
        return {
            "prompt_mode": self.prompt_mode,
            "history_reasoning": self.history_reasoning,
            "target_reasoning": self.target_reasoning,
            "overflow": self.overflow,
            "eot_token": self.eot_token,
            "system_prompt_file": self.system_prompt_file,
            "tool_style": self.tool_style,
            "max_dialogues": self.max_dialogues,
            "dagger_dataset_path": self.dagger_dataset_path,
            "dagger_share": self.dagger_share if self.dagger_dataset_path else None,
        }
