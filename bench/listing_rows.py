"""The `listing_rows` part of bench/run.py: dialogues per training minute with shared-listing rows
(``share_listing: true``, train/prefix_shared.py) over today's rows (one dialogue per prefix-shared
row), on the same dialogues, with SmolLM2-135M on CPU.

    python -m diaforge.bench.run --only listing_rows [--dialogues 200] [--listing-dialogues 3]

The corpus is the bundled generator's with ``--dialogues-per-listing 6`` (k+1: every tool of a
listing the gold of its own dialogue) and ``--reasoning lookup``, sliced as the demo recipe
slices (SmolLM2's tokenizer). Three layouts of the same samples: ``today`` (one dialogue per
prefix-shared row, at the demo's max_length), ``shared_listing`` (``share_listing: true`` at the
same max_length) and ``shared_listing_2x`` (at twice it: a longer row holds more siblings). Two
numbers, measured in one run:

- tokens per dialogue: the tokens of all rows over the dialogues, each layout, on the whole
  corpus (at the demo's max_length, and at twice it);
- dialogues per training minute: the first ``--listing-dialogues`` dialogues (3 by default) of
  the corpus's families (siblings over one listing; a first family only warms up) trained one row
  per optimizer step as the demo trains (full fine-tuning, AdamW, fp32, SDPA with the 4D mask,
  loss at the trained positions: ``logits_to_keep``), each layout on the same dialogues, the
  order alternating family by family so that a change of load on a shared machine hits both
  alike. Dialogues per minute = dialogues / seconds x 60; the value is shared_listing over today.

The learning rate is zero (AdamW still runs its update): both layouts see the same weights, so
the loss of each sample can be compared too (``max_abs_sample_loss_diff``: the same numbers up
to float rounding, as tests/train/test_prefix_shared.py asserts on a tiny model).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

PER_LISTING = 6


def _layouts(samples, max_length: int, *, wide: bool = False) -> dict[str, tuple[list, Any]]:
    """Today's rows and shared-listing rows at `max_length` (and, with `wide`, shared-listing rows
    at twice it: a longer row holds more siblings)."""
    from diaforge.train.prefix_shared import build_prefix_shared

    out = {
        "today": build_prefix_shared(samples, max_length=max_length),
        "shared_listing": build_prefix_shared(samples, max_length=max_length, share_listing=True),
    }
    if wide:
        out["shared_listing_2x"] = build_prefix_shared(samples, max_length=2 * max_length, share_listing=True)
    return out


def token_stats(dialogues, tokenizer, settings: dict[str, Any]) -> dict[str, Any]:
    """Tokens per dialogue of each layout on `dialogues`, at the demo's max_length and twice it."""
    from diaforge.bench.inputs import slice_samples
    from diaforge.train.prefix_shared import tag_listings

    out: dict[str, Any] = {}
    today = None
    for max_length in (settings["max_length"], 2 * settings["max_length"]):
        samples, _ = slice_samples(tokenizer, dialogues, **{**settings, "max_length": max_length})
        tag_listings(samples, dialogues)
        entry: dict[str, Any] = {}
        for name, (_rows, stats) in _layouts(samples, max_length).items():
            entry[name] = {
                "rows": stats.rows,
                "tokens": stats.shared_tokens,
                "tokens_per_dialogue": round(stats.shared_tokens / stats.dialogues, 1),
                "dialogues_per_row": round(stats.dialogues / stats.rows, 3),
                "max_row_tokens": max(stats.row_lengths),
                "split_dialogues": stats.split_dialogues,
            }
        entry["tokens_per_dialogue_ratio"] = round(
            entry["shared_listing"]["tokens"] / entry["today"]["tokens"], 4
        )
        if today is None:
            today = entry["today"]["tokens"]
        else:  # against today's rows at the demo's max_length
            entry["tokens_per_dialogue_ratio_2x"] = round(entry["shared_listing"]["tokens"] / today, 4)
        out[f"max_length={max_length}"] = entry
    return out


def _families(dialogues) -> list[list]:
    """The dialogues in families over one listing, in corpus order."""
    from diaforge.train.prefix_shared import listing_key

    families: dict[str, list] = {}
    for d in dialogues:
        families.setdefault(listing_key(d), []).append(d)
    return list(families.values())


def _timed_families(dialogues, tokenizer, num_dialogues: int, settings: dict[str, Any]) -> list[tuple]:
    """(dialogues, layouts) of a warm-up family, then of the first `num_dialogues` dialogues of the
    next families (siblings over one listing, the last family cut to fit)."""
    from diaforge.bench.inputs import slice_samples
    from diaforge.train.prefix_shared import tag_listings

    families = [f for f in _families(dialogues) if len(f) > 1]
    chosen, count = families[:1], 0
    for family in families[1:]:
        chosen.append(family[: num_dialogues - count])
        count += len(chosen[-1])
        if count >= num_dialogues:
            break
    work = []
    for family in chosen:
        samples, _ = slice_samples(tokenizer, family, **settings)
        tag_listings(samples, family)
        work.append((family, _layouts(samples, settings["max_length"], wide=True)))
    return work


def _full_ft_step(model_path: Path, tokenizer):
    """One optimizer step on one row as the demo trains (full fine-tuning, AdamW at lr 0, fp32,
    SDPA with the 4D mask, loss at the trained positions); it records each sample's mean loss."""
    import torch
    from transformers import AutoModelForCausalLM

    from diaforge.train.loss_positions import trained_positions
    from diaforge.train.prefix_shared import PrefixSharedCollator

    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="sdpa")
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)
    collate = PrefixSharedCollator(tokenizer.pad_token_id, dtype=torch.float32, return_sample_index=True)

    def step(row, losses: dict[int, float]) -> None:
        batch = collate([row])
        index = batch.pop("sample_index")
        labels = batch.pop("labels")
        keep = trained_positions(labels)
        logits = model(**batch, logits_to_keep=keep).logits[0].float()
        nll = torch.nn.functional.cross_entropy(logits, labels[0, keep + 1], reduction="none")
        nll.mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        owner = index[0, keep + 1]
        for k in owner.unique().tolist():
            losses[k] = nll[owner == k].mean().item()

    return step


def _time_layouts(work: list[tuple], step) -> dict[str, Any]:
    """Seconds, steps and row tokens of each layout over the timed families (after one short
    warm-up step), the order alternating family by family; and each sample's loss difference
    between a shared layout and today's."""

    def timed(rows, losses) -> float:
        start = time.perf_counter()
        for row in rows:
            step(row, losses)
        return time.perf_counter() - start

    names = list(work[0][1])
    timed([min(work[0][1]["today"][0], key=lambda r: len(r["input_ids"]))], {})
    out: dict[str, Any] = {
        "seconds": dict.fromkeys(names, 0.0),
        "steps": dict.fromkeys(names, 0),
        "row_tokens": dict.fromkeys(names, 0),
        "diffs": [],
        "dialogues": 0,
    }
    for i, (family, layouts) in enumerate(work[1:]):
        losses: dict[str, dict[int, float]] = {}
        for name in names if i % 2 == 0 else names[::-1]:
            rows = layouts[name][0]
            losses[name] = {}
            out["seconds"][name] += timed(rows, losses[name])
            out["steps"][name] += len(rows)
            out["row_tokens"][name] += sum(len(r["input_ids"]) for r in rows)
        for name in names[1:]:
            out["diffs"] += [abs(losses["today"][k] - v) for k, v in losses[name].items()]
        out["dialogues"] += len(family)
    return out


def bench_listing_rows(
    dialogues, model_path: Path, tokenizer, num_dialogues: int, settings: dict[str, Any]
) -> dict[str, Any]:
    import torch

    max_length = settings["max_length"]
    tokens = token_stats(dialogues, tokenizer, settings)
    work = _timed_families(dialogues, tokenizer, num_dialogues, settings)
    t = _time_layouts(work, _full_ft_step(model_path, tokenizer))
    seconds, steps, row_tokens, diffs, n_dialogues = (
        t["seconds"],
        t["steps"],
        t["row_tokens"],
        t["diffs"],
        t["dialogues"],
    )
    per_minute = {k: n_dialogues / v * 60 for k, v in seconds.items()}
    layouts_out = {
        name: {
            "steps": steps[name],
            "row_tokens": row_tokens[name],
            "tokens_per_dialogue": round(row_tokens[name] / n_dialogues, 1),
            "seconds": round(seconds[name], 2),
            "steps_per_s": round(steps[name] / seconds[name], 4),
            "tokens_per_s": round(row_tokens[name] / seconds[name], 1),
            "dialogues_per_minute": round(per_minute[name], 2),
        }
        for name in seconds
    }
    corpus_ratio = tokens[f"max_length={max_length}"]["tokens_per_dialogue_ratio"]
    return {
        "value": round(per_minute["shared_listing"] / per_minute["today"], 3),
        "tokens_per_dialogue_ratio": round(row_tokens["shared_listing"] / row_tokens["today"], 4),
        "corpus_tokens_per_dialogue_ratio": corpus_ratio,
        "dialogues_per_minute_ratio_2x": round(per_minute["shared_listing_2x"] / per_minute["today"], 3),
        "tokens_per_dialogue_ratio_2x": round(row_tokens["shared_listing_2x"] / row_tokens["today"], 4),
        "corpus_tokens_per_dialogue_ratio_2x": tokens[f"max_length={2 * max_length}"][
            "tokens_per_dialogue_ratio_2x"
        ],
        "timed_dialogues": n_dialogues,
        "families": len(work) - 1,
        "layouts": layouts_out,
        "max_abs_sample_loss_diff": max(diffs) if diffs else None,
        "median_abs_sample_loss_diff": statistics.median(diffs) if diffs else None,
        "corpus": {"dialogues": len(dialogues), "dialogues_per_listing": PER_LISTING, **tokens},
        "setup": (
            "SmolLM2-135M-Instruct fp32, full fine-tuning, AdamW (lr 0: same weights for both), sdpa with the 4D "
            "mask, loss at the trained positions (logits_to_keep), one row per optimizer step; today: one "
            "dialogue per prefix-shared row; shared_listing: share_listing (the dialogues over one listing in "
            f"one row); slicing as the demo recipe, max_length {max_length}; torch threads "
            f"{torch.get_num_threads()}"
        ),
    }
