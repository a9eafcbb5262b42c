"""The rows a `diaforge.llm.prefix_cache.PrefixCachedGenerator` decodes together: one left-padded
key/value cache for all of them, its attention mask (padding, and drafted tokens a row rejected,
hidden), each row's next position and its chosen token not yet fed. Rows join (their prompt's keys
and values padded to the batch's width) and leave (their columns cut once no row sees them), and
the cache's layers grow in place instead of being concatenated at every step."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["SPARE_COLUMNS", "DecodeRows"]


class DecodeRows:
    """The rows being decoded together: their prompt indices, one left-padded cache, its attention
    mask, each row's next position and its chosen token not yet fed to the model."""

    def __init__(self, device: Any, grow_in_place: bool = True) -> None:
        self.device = device
        self.grow_in_place = grow_in_place
        self._empty()

    def _empty(self) -> None:
        self.active: list[int] = []
        self.cache: Any = None
        self.mask = torch.zeros(0, 0, dtype=torch.long, device=self.device)
        self.positions = torch.zeros(0, dtype=torch.long, device=self.device)
        self.token = torch.zeros(0, dtype=torch.long, device=self.device)

    def join(self, rows: list[tuple[int, list[tuple[torch.Tensor, torch.Tensor]], int, int]]) -> None:
        """Add rows (prompt index, the prompt's keys and values, its length, its first token): the
        cache and mask are left-padded to the widest row, old or new."""
        if not rows:
            return
        lengths = [n for _, _, n, _ in rows]
        width = max(self.mask.shape[1], *lengths)
        cache, mask = _padded_batch([kv for _, kv, _, _ in rows], lengths, self.device, width=width)
        if self.active:
            from transformers import DynamicCache

            layers = [
                (
                    torch.cat([_left_pad(old.keys, width), new.keys]),
                    torch.cat([_left_pad(old.values, width), new.values]),
                )
                for old, new in zip(self.cache.layers, cache.layers, strict=True)
            ]
            cache = DynamicCache(ddp_cache_data=layers)
            mask = torch.cat([_left_pad_mask(self.mask, width), mask])
        if self.grow_in_place:
            _grow_in_place(cache)
        self.cache, self.mask = cache, mask
        self.active += [i for i, _, _, _ in rows]
        self.positions = torch.cat(
            [self.positions, torch.tensor(lengths, dtype=torch.long, device=self.device)]
        )
        self.token = torch.cat(
            [self.token, torch.tensor([t for *_, t in rows], dtype=torch.long, device=self.device)]
        )

    def grow_mask(self, lengths: Sequence[int] | None = None) -> torch.Tensor:
        """The mask with one more visible column per row, for the token about to be fed; with
        `lengths` (the tokens each row feeds) as many columns as the longest, each row seeing its
        own first `lengths[b]`."""
        if lengths is None:
            new = torch.ones(len(self.active), 1, dtype=torch.long, device=self.device)
        else:
            new = (
                torch.arange(max(lengths), device=self.device)
                < torch.tensor(lengths, device=self.device)[:, None]
            ).long()
        self.mask = torch.cat([self.mask, new], 1)
        return self.mask

    def hide(self, row: int, n: int) -> None:
        """Hide the last `n` columns from row `row` (drafted tokens it did not accept)."""
        if n > 0:
            self.mask[row, -n:] = 0

    def select(self, keep: list[int]) -> None:
        """Keep only these batch rows; columns no remaining row sees are cut from the left."""
        if len(keep) == len(self.active):
            return
        if not keep:
            self._empty()
            return
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        self.cache.batch_select_indices(index)
        self.mask, self.positions, self.token = self.mask[index], self.positions[index], self.token[index]
        self.active = [self.active[b] for b in keep]
        unseen = int((self.mask.sum(0) == 0).long().cumprod(0).sum())
        if unseen:
            self.mask = self.mask[:, unseen:]
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, unseen:], layer.values[:, :, unseen:]


SPARE_COLUMNS = 256
"""Token columns the decoding batch's buffers hold beyond its current width when (re)made."""


@functools.cache
def _growing_layer_type() -> type:
    """`DynamicLayer` with an `update` that writes into spare room at the end of preallocated
    buffers. `DynamicLayer.update` concatenates, copying every row's whole cache at every step: at
    16 rows of 1,000 tokens that copy was 55 % of a SmolLM2 decoding step on CPU. Here a step
    writes its new token only; the buffers are remade (one copy) when they are full or when the
    batch was reshaped (`batch_select_indices`, a crop), which leaves the layer other tensors."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        _kbuf: torch.Tensor | None = None
        _vbuf: torch.Tensor | None = None

        def _owns(self) -> bool:
            k, v = self._kbuf, self._vbuf
            return (
                k is not None
                and v is not None
                and self.keys.data_ptr() == k.data_ptr()
                and self.values.data_ptr() == v.data_ptr()
                and self.keys.shape[0] == k.shape[0]
            )

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
            n, add = self.keys.shape[-2], key_states.shape[-2]
            if not self._owns() or n + add > self._kbuf.shape[-2]:
                room = n + add + SPARE_COLUMNS
                self._kbuf = self.keys.new_empty(*self.keys.shape[:2], room, self.keys.shape[-1])
                self._vbuf = self.values.new_empty(*self.values.shape[:2], room, self.values.shape[-1])
                self._kbuf[:, :, :n] = self.keys
                self._vbuf[:, :, :n] = self.values
            self._kbuf[:, :, n : n + add] = key_states
            self._vbuf[:, :, n : n + add] = value_states
            self.keys, self.values = self._kbuf[:, :, : n + add], self._vbuf[:, :, : n + add]
            return self.keys, self.values

    return GrowingLayer


def _grow_in_place(cache: Any) -> None:
    """Make the layers of a `DynamicCache` grow in place (`_growing_layer_type`)."""
    for layer in cache.layers:  # plain DynamicLayers (`supports_prefix_cache`)
        layer.__class__ = _growing_layer_type()


def _padded_batch(
    caches: list[list[tuple[torch.Tensor, torch.Tensor]]],
    lengths: list[int],
    device: Any,
    width: int | None = None,
):
    """One `DynamicCache` of the rows' keys and values, each left-padded to `width` (default: the
    longest prompt), and the attention mask that hides the padding."""
    from transformers import DynamicCache

    width = width or max(lengths)
    layers = []
    for layer in range(len(caches[0])):
        keys = torch.cat([_left_pad(c[layer][0], width) for c in caches])
        values = torch.cat([_left_pad(c[layer][1], width) for c in caches])
        layers.append((keys, values))
    mask = torch.zeros(len(lengths), width, dtype=torch.long, device=device)
    for i, n in enumerate(lengths):
        mask[i, width - n :] = 1
    return DynamicCache(ddp_cache_data=layers), mask


def _left_pad_mask(mask: torch.Tensor, width: int) -> torch.Tensor:
    """``[rows, n]`` left-padded with zeros to ``[rows, width]``."""
    missing = width - mask.shape[1]
    if missing <= 0:
        return mask
    return torch.cat([torch.zeros(mask.shape[0], missing, dtype=mask.dtype, device=mask.device), mask], dim=1)


def _left_pad(t: torch.Tensor, width: int) -> torch.Tensor:
    """``[1, heads, n, dim]`` left-padded with zeros to ``[1, heads, width, dim]``."""
    missing = width - t.shape[-2]
    if missing <= 0:
        return t
    pad = torch.zeros(*t.shape[:-2], missing, t.shape[-1], dtype=t.dtype, device=t.device)
    return torch.cat([pad, t], dim=-2)
