"""Prefix-shared turn slicing: every assistant-turn sample of a dialogue in one sequence.

Naive turn slicing (`diaforge.train.slicing`) makes one sample per assistant turn, each re-encoding the whole
dialogue before it, so a dialogue of T assistant turns costs O(T^2) tokens. The samples of one
dialogue share long token prefixes (system prompt, candidate tools, earlier turns). Here they are
laid out once, as a tree of tokens flattened into one sequence:

* the samples are added in order; the tokens of sample k that form a common token prefix with an
  earlier sample of the same group (the longest such prefix, found by comparing token ids: no
  assumption about the chat template) are **reused** where that sample has them; the rest of
  sample k is **appended**. So with ``history_reasoning: keep`` sample k reuses all of sample k-1,
  and with ``strip`` it reuses sample k-1's prompt but appends turn k-1's public reply again (sample
  k-1's copy carries the thought that sample k must not see): only the tokens that must be
  duplicated are.
* every token keeps the position id it has in its own sample;
* every token gets a parent: the token before it in its sample (``attn_parent``, -1 at the start).
  A token attends to itself and its chain of parents, and to nothing else: each sample sees
  exactly its own tokens at its own positions, as if it were alone, and an earlier turn's thought
  is invisible to the later turns that do not contain it.
* every target token keeps its label, in the sample that appended it (a sample only ever reuses
  prompt tokens: at least its last prompt token is appended, so each label still follows the
  token that predicts it, and TRL's shifted loss applies unchanged); ``sample_index`` records
  which sample a label belongs to, so the loss splits per sample.

The loss of a combined sequence therefore equals the loss of the naive samples it holds (same
tokens, same positions, same visible keys: equal up to float rounding; see
tests/train/test_prefix_shared.py). `PrefixSharedCollator` builds a float 4D attention mask
``[batch, 1, L, L]`` (0 where allowed, the dtype's minimum elsewhere) for SDPA or eager attention.

A dialogue whose sequence would pass ``max_length`` is split into runs of consecutive samples
(the split with the fewest tokens; each run starts afresh; a sample, and so a target, is never
cut), and with ``packing`` the groups of several dialogues share a row (best-fit decreasing) with
no attention across them. Select it with ``slicing: prefix_shared`` in a recipe.

Shared listings (``share_listing: true``). Dialogues over the same candidate listing (same tools
in the same order: `listing_key`; the generator writes such siblings with
``dialogues_per_listing``) render the same system prompt and listing, token for token. They are
laid out as one family, the samples of one dialogue after another in one group: the builder above
finds the common prefix across dialogues as it does across turns, so the listing is held once per
row and each dialogue hangs under it as a branch, every token at its own sample's position and
seeing only its own sample's chain. ``max_length`` splits a family as it splits a dialogue (runs
of consecutive samples, the fewest tokens; a sample is never cut), which in practice cuts between
dialogues. Without the option, or for a dialogue with no sibling, nothing changes.

Loss normalisation. TRL divides the summed per-token loss by the number of label tokens in the
batch (over every micro-batch of an accumulated step, `num_items_in_batch`): a mean over tokens,
not over samples, exactly as for naive rows. A batch of prefix-shared rows gives the same loss and
gradient as a naive batch holding the same samples; what changes is the grouping: one row holds a
whole dialogue (or several, packed), so with the same `per_device_train_batch_size` a step sees
more samples, and there are fewer steps per epoch. A mean over samples (each sample weighted
alike, whatever its target length) is what the parity tests compare per sample; training uses
TRL's token mean in both modes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from diaforge.train.slicing import IGNORE_INDEX, SlicingError

# Columns of a combined row that the collator reads.
ROW_COLUMNS = ("input_ids", "labels", "position_ids", "attn_parent", "sample_index")


@dataclass
class SharedStats:
    """What prefix sharing produced (logged by train/sft.py and reported by bench/run.py)."""

    samples: int = 0
    dialogues: int = 0
    groups: int = 0
    """Combined sequences before packing (one per dialogue unless max_length split it)."""
    split_dialogues: int = 0
    """Dialogues whose samples did not fit in one max_length sequence and were split in groups."""
    families: int = 0
    """Sets of dialogues laid out together: dialogues over one listing with ``share_listing``,
    else one per dialogue."""
    rows: int = 0
    """Training rows (groups, or packed groups)."""
    naive_tokens: int = 0
    """Tokens of the naive samples, all together."""
    shared_tokens: int = 0
    """Tokens of the combined sequences, all together (no padding)."""
    trained_tokens: int = 0
    row_lengths: list[int] = field(default_factory=list, repr=False)

    @property
    def token_ratio(self) -> float:
        return self.shared_tokens / self.naive_tokens if self.naive_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "dialogues": self.dialogues,
            "groups": self.groups,
            "split_dialogues": self.split_dialogues,
            "families": self.families,
            "rows": self.rows,
            "naive_tokens": self.naive_tokens,
            "shared_tokens": self.shared_tokens,
            "token_ratio": round(self.token_ratio, 4),
            "trained_tokens": self.trained_tokens,
            "max_row_tokens": max(self.row_lengths, default=0),
        }

    def summary(self) -> str:
        return (
            f"prefix-shared: {self.samples} samples of {self.dialogues} dialogues in {self.rows} rows "
            f"({self.groups} groups, {self.split_dialogues} dialogues split by max_length); "
            f"{self.shared_tokens} tokens instead of {self.naive_tokens} "
            f"({100 * self.token_ratio:.1f}%), {self.trained_tokens} trained"
        )


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class GroupBuilder:
    """Lays out the samples of one dialogue (in order) as one sequence; see the module docstring.

    >>> group = GroupBuilder()
    >>> for i, sample in enumerate(samples_of_one_dialogue):
    ...     group.add(sample, i)
    >>> row = group.row()
    """

    def __init__(self) -> None:
        self.input_ids: list[int] = []
        self.labels: list[int] = []
        self.position_ids: list[int] = []
        self.attn_parent: list[int] = []
        self.sample_index: list[int] = []
        self._ids: list[Sequence[int]] = []  # token ids of every sample added
        self._paths: list[list[int]] = []  # where every sample's tokens lie in the sequence
        self.dialogue_ids: list[str] = []
        self.num_samples = 0
        self.naive_tokens = 0

    def __len__(self) -> int:
        return len(self.input_ids)

    def _reuse(self, sample: dict[str, Any]) -> tuple[int | None, int]:
        """(earlier sample to branch from, number of its tokens reused). Only prompt tokens are
        reused, and never the last one: the target and the token before it are appended."""
        ids = sample["input_ids"]
        limit = int(sample["num_prompt_tokens"]) - 1
        best: tuple[int | None, int] = (None, 0)
        for i, other in enumerate(self._ids):
            n = _common_prefix(other, ids, limit)
            if n > best[1]:
                best = (i, n)
        return best

    def add(self, sample: dict[str, Any], index: int) -> int:
        """Add one sample (its dataset index goes to `sample_index`); returns the tokens appended."""
        ids, labels = sample["input_ids"], sample["labels"]
        if len(ids) != len(labels):
            raise SlicingError(f"sample {index}: input_ids and labels differ in length")
        source, shared = self._reuse(sample)
        path = self._paths[source][:shared] if source is not None else []
        for p in range(shared, len(ids)):
            j = len(self.input_ids)
            self.input_ids.append(int(ids[p]))
            self.labels.append(int(labels[p]))
            self.position_ids.append(p)
            self.attn_parent.append(path[-1] if path else -1)
            self.sample_index.append(index if labels[p] != IGNORE_INDEX else -1)
            path.append(j)
        for p in range(shared):
            if labels[p] != IGNORE_INDEX:  # never happens for slicer samples: guard custom ones
                raise SlicingError(
                    f"sample {index}: a labelled token falls in the prefix shared with sample {source}"
                )
        self._ids.append(ids)
        self._paths.append(path)
        did = str(sample.get("dialogue_id", ""))
        if not self.dialogue_ids or self.dialogue_ids[-1] != did:
            self.dialogue_ids.append(did)
        self.num_samples += 1
        self.naive_tokens += len(ids)
        return len(ids) - shared

    def row(self) -> dict[str, Any]:
        return {
            "input_ids": self.input_ids,
            "labels": self.labels,
            "position_ids": self.position_ids,
            "attn_parent": self.attn_parent,
            "sample_index": self.sample_index,
            "dialogue_ids": self.dialogue_ids,
            "num_samples": self.num_samples,
            "naive_tokens": self.naive_tokens,
        }


def concat_rows(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several combined rows in one (packing): parents are shifted, so no token sees another
    row's tokens; positions restart with each row as they were."""
    out: dict[str, Any] = {k: [] for k in (*ROW_COLUMNS, "dialogue_ids")}
    out["num_samples"] = out["naive_tokens"] = 0
    for row in rows:
        offset = len(out["input_ids"])
        out["input_ids"].extend(row["input_ids"])
        out["labels"].extend(row["labels"])
        out["position_ids"].extend(row["position_ids"])
        out["attn_parent"].extend(p + offset if p >= 0 else -1 for p in row["attn_parent"])
        out["sample_index"].extend(row["sample_index"])
        out["dialogue_ids"].extend(row["dialogue_ids"])
        out["num_samples"] += row["num_samples"]
        out["naive_tokens"] += row["naive_tokens"]
    return out


def pack_rows(rows: Sequence[dict[str, Any]], max_length: int) -> list[dict[str, Any]]:
    """Best-fit decreasing: every row goes, longest first, into the fullest bin it still fits in."""
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i]["input_ids"]))
    bins: list[list[int]] = []
    space: list[int] = []
    for i in order:
        n = len(rows[i]["input_ids"])
        fits = [b for b in range(len(bins)) if space[b] >= n]
        if fits:
            b = min(fits, key=lambda b: space[b])
            bins[b].append(i)
            space[b] -= n
        else:
            bins.append([i])
            space.append(max_length - n)
    return [concat_rows([rows[i] for i in sorted(members)]) for members in bins]


def split_dialogue(items: Sequence[tuple[int, dict[str, Any]]], max_length: int | None) -> list[GroupBuilder]:
    """The groups of one dialogue's samples (`(index, sample)` pairs, in turn order; with
    ``share_listing``, those of a family of dialogues, one dialogue after another): one group
    when it fits in `max_length`, else the split into runs of consecutive samples, each run within
    `max_length`, with the fewest tokens in total (then the fewest groups). A run starts afresh:
    it holds its first sample whole. A sample longer than `max_length` on its own is a group of
    its own (the slicer never makes one)."""
    whole = GroupBuilder()
    for index, sample in items:
        whole.add(sample, index)
    if max_length is None or len(whole) <= max_length:
        return [whole]
    n = len(items)
    inf = float("inf")
    best: list[tuple[float, int]] = [(0, 0)] + [(inf, 0)] * n  # (tokens, groups) of items[:j]
    start_of = [0] * (n + 1)
    for i in range(n):
        run = GroupBuilder()
        for j in range(i, n):
            run.add(items[j][1], items[j][0])
            if j > i and len(run) > max_length:
                break  # runs only grow
            cand = (best[i][0] + len(run), best[i][1] + 1)
            if cand < best[j + 1]:
                best[j + 1], start_of[j + 1] = cand, i
    bounds = []
    j = n
    while j > 0:
        bounds.append((start_of[j], j))
        j = start_of[j]
    groups = []
    for i, j in reversed(bounds):
        group = GroupBuilder()
        for index, sample in items[i:j]:
            group.add(sample, index)
        groups.append(group)
    return groups


#: The sample key that `tag_listings` sets and `build_prefix_shared(share_listing=True)` groups by.
LISTING = "listing"


def listing_key(dialogue: Any) -> str:
    """What decides a dialogue's rendered system prompt and tool listing for a given prompt
    format: its candidate tools, in order (a hash of their specs). Equal keys, equal tokens."""
    import hashlib
    import json

    specs = [t.model_dump(mode="json") for t in dialogue.candidate_tools]
    return hashlib.sha256(json.dumps(specs, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def tag_listings(samples: Sequence[dict[str, Any]], dialogues: Sequence[Any]) -> None:
    """Sets `LISTING` of every sample to its dialogue's `listing_key` (by `dialogue_id`)."""
    keys = {d.id: listing_key(d) for d in dialogues}
    for sample in samples:
        sample[LISTING] = keys[sample["dialogue_id"]]


def build_prefix_shared(
    samples: Sequence[dict[str, Any]],
    *,
    max_length: int | None = None,
    packing: bool = False,
    share_listing: bool = False,
    progress: bool | None = False,
) -> tuple[list[dict[str, Any]], SharedStats]:
    """The combined rows of turn-sliced `samples` (as `TurnSlicer.slice_all` returns them: the
    samples of a dialogue consecutive, in turn order) and their statistics.

    A dialogue whose combined sequence would pass `max_length` is split into groups of consecutive
    samples (`split_dialogue`). With `share_listing`, the dialogues whose samples carry the same
    `LISTING` value (`tag_listings`) are laid out as one family, one dialogue after another, and
    split the same way (see the module docstring); samples without the key stay one family per
    dialogue. With `packing`, groups are packed into rows of at most `max_length` tokens.
    `sample_index` in the rows indexes `samples`. With `progress`, a bar over the families on
    stderr (`None`: on a terminal only).
    """
    from diaforge.console import progress as progress_bar

    if packing and not max_length:
        raise SlicingError("packing prefix-shared rows needs max_length (the row length to pack to)")
    stats = SharedStats(samples=len(samples))
    dialogues: list[list[tuple[int, dict[str, Any]]]] = []
    for index, sample in enumerate(samples):
        if not dialogues or sample.get("dialogue_id") != dialogues[-1][-1][1].get("dialogue_id"):
            dialogues.append([])
        dialogues[-1].append((index, sample))
        stats.naive_tokens += len(sample["input_ids"])
        stats.trained_tokens += sum(1 for x in sample["labels"] if x != IGNORE_INDEX)
    families: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
    for n, items in enumerate(dialogues):
        key = items[0][1].get(LISTING) if share_listing else None
        families.setdefault(("listing", key) if key is not None else ("dialogue", n), []).extend(items)
    groups: list[dict[str, Any]] = []
    split: set[Any] = set()
    for items in progress_bar(
        list(families.values()), desc="prefix sharing", unit="family", enabled=progress
    ):
        parts = split_dialogue(items, max_length)
        if len(parts) > 1:
            seen: dict[Any, int] = {}
            for part in parts:
                for did in set(part.dialogue_ids):
                    seen[did] = seen.get(did, 0) + 1
            split.update(did for did, count in seen.items() if count > 1)
        groups.extend(g.row() for g in parts)
    stats.split_dialogues = len(split)
    stats.families = len(families)
    stats.dialogues = len(dialogues)
    stats.groups = len(groups)
    rows = pack_rows(groups, int(max_length)) if packing else groups
    stats.rows = len(rows)
    stats.row_lengths = [len(r["input_ids"]) for r in rows]
    stats.shared_tokens = sum(stats.row_lengths)
    return rows, stats


# --------------------------------------------------------------------------------------------
# Attention masks
# --------------------------------------------------------------------------------------------


def allowed_matrix(attn_parent: Sequence[int], size: int | None = None):
    """Boolean ``[size, size]`` tensor: entry (i, j) is True when token i may attend to token j,
    i.e. j is i or one of i's ancestors through `attn_parent`. Rows and columns past the row's
    length (padding) are all False.

    Built segment by segment: a run of tokens whose parent is the token just before is one causal
    block below the row of the run's first parent."""
    import torch

    n = len(attn_parent)
    size = n if size is None else size
    allowed = torch.zeros(size, size, dtype=torch.bool)
    if n == 0:
        return allowed
    parent = torch.as_tensor(attn_parent, dtype=torch.long)
    if bool((parent >= torch.arange(n)).any()):
        raise SlicingError("attn_parent must point to an earlier token (or be -1)")
    starts = torch.nonzero(parent != torch.arange(n) - 1).flatten().tolist()
    bounds = [*starts, n]
    if bounds[0] != 0:  # token 0 always has parent -1 == 0 - 1: it continues "nothing"
        bounds.insert(0, 0)
    for start, end in zip(bounds, bounds[1:], strict=False):
        p = int(parent[start])
        if p >= 0:
            allowed[start:end] = allowed[p]
        allowed[start:end, start:end] |= torch.ones(end - start, end - start, dtype=torch.bool).tril()
    return allowed


@dataclass
class PrefixSharedCollator:
    """Pads combined rows to a batch: `input_ids`, `labels` (-100 on padding), `position_ids` (0
    on padding) and `attention_mask`, a float ``[batch, 1, L, L]`` mask (0 where a token may
    attend, the dtype's minimum elsewhere). Padding tokens attend to nothing (their rows are all
    the minimum, which softmax turns into a finite uniform row, never NaN) and nothing attends to
    them.

    `dtype` must be the dtype of the attention's queries (float32 on CPU, bfloat16 for a bf16
    model): SDPA rejects a float mask of another dtype. `return_sample_index` adds the
    `sample_index` tensor (-1 on unlabelled tokens and padding), for per-sample losses; do not
    pass it to the model.
    """

    pad_token_id: int
    dtype: Any = None
    pad_to_multiple_of: int | None = None
    return_sample_index: bool = False

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        dtype = self.dtype or torch.float32
        length = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            m = self.pad_to_multiple_of
            length = (length + m - 1) // m * m
        b = len(features)
        input_ids = torch.full((b, length), int(self.pad_token_id), dtype=torch.long)
        labels = torch.full((b, length), IGNORE_INDEX, dtype=torch.long)
        position_ids = torch.zeros((b, length), dtype=torch.long)
        sample_index = torch.full((b, length), -1, dtype=torch.long)
        mask = torch.full((b, 1, length, length), torch.finfo(dtype).min, dtype=dtype)
        for i, f in enumerate(features):
            n = len(f["input_ids"])
            input_ids[i, :n] = torch.as_tensor(f["input_ids"])
            labels[i, :n] = torch.as_tensor(f["labels"])
            position_ids[i, :n] = torch.as_tensor(f["position_ids"])
            if "sample_index" in f:
                sample_index[i, :n] = torch.as_tensor(f["sample_index"])
            mask[i, 0].masked_fill_(allowed_matrix(f["attn_parent"], length), 0.0)
        out = {"input_ids": input_ids, "labels": labels, "position_ids": position_ids, "attention_mask": mask}
        if self.return_sample_index:
            out["sample_index"] = sample_index
        return out


def real_tokens(attention_mask) -> Any:
    """Tokens that are not padding in a batch from `PrefixSharedCollator` (a token attends at
    least to itself)."""
    return (attention_mask[:, 0].diagonal(dim1=-2, dim2=-1) == 0).sum()


def block_mask_from_dense(attention_mask):
    """A flex-attention `BlockMask` equal to a `PrefixSharedCollator` float mask, for
    ``attn_implementation="flex_attention"``. UNTESTED ON GPU (no GPU was available when it was
    written): `tests/train/test_prefix_shared.py` checks on CPU that a forward pass with it gives
    the logits of SDPA with the dense mask; training cannot be checked on CPU (flex attention has
    no CPU backward). Fully masked blocks (later tokens, other dialogues, hidden thoughts) are
    skipped by the kernel, which is where the GPU saving lies; SDPA with the dense mask computes
    them all."""
    from torch.nn.attention.flex_attention import create_block_mask

    allowed = attention_mask[:, 0] == 0
    b, length = allowed.shape[0], allowed.shape[-1]

    def mask_mod(batch, head, q_idx, kv_idx):
        return allowed[batch, q_idx, kv_idx]

    return create_block_mask(mask_mod, b, None, length, length, device=attention_mask.device)


def prefix_shared_trainer_class(loss_positions: str = "all", focal_gamma: float = 0.0):
    """`trl.SFTTrainer` for prefix-shared rows. The loss is TRL's own (per-token NLL summed over
    the label tokens and divided by their number in the batch, or in the whole accumulated step),
    computed by TRL over every position (``loss_positions="all"``) or from the logits of the trained
    positions only (``"trained"``, train/loss_positions.py); the `num_tokens` metric is corrected,
    since TRL counts tokens as ``attention_mask.sum()``, which is meaningless for a 4D float mask.
    With ``attn_implementation: flex_attention`` the model gets a `BlockMask` made from the dense
    mask (untested on GPU; CPU has no flex backward)."""
    from diaforge.train.loss_positions import positions_trainer_class

    class PrefixSharedSFTTrainer(positions_trainer_class(loss_positions, focal_gamma=focal_gamma)):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            mask = inputs.get("attention_mask")
            if mask is None or mask.ndim != 4:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            training = self.model.training
            before = getattr(self, "_total_train_tokens", None)
            count = real_tokens(mask)
            forward = model
            if getattr(getattr(model, "config", None), "_attn_implementation", None) == "flex_attention":
                # The model gets the BlockMask; TRL's metrics keep seeing the dense mask.
                block = block_mask_from_dense(mask)

                def forward(*args, **kwargs):
                    return model(*args, **{**kwargs, "attention_mask": block})

            result = super().compute_loss(forward, inputs, return_outputs, num_items_in_batch)
            if training and before is not None and hasattr(self, "_metrics"):
                count = self.accelerator.gather_for_metrics(count).sum().item()
                self._total_train_tokens = before + count // getattr(self, "_tp_size", 1)
                self._metrics["train"]["num_tokens"] = [self._total_train_tokens]
            return result

    return PrefixSharedSFTTrainer
