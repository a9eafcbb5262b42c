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
        cache and mask are left-padded to the widest row, old or new. Growing in place, rows that
        fit the batch's width go into the places rows that ended left in its buffers, and nothing
        else is copied; otherwise the joined cache is written once into new buffers with room to
        grow (the old rows copied across, the old buffers then freed), so a join holds at most the
        old and the new batch. Copying the whole batch at every join took 60 of the 709 seconds of
        the demo model's evaluation on 80 held-out dialogues (about 300 joins of 16 rows)."""
        if not rows:
            return
        lengths = [n for _, _, n, _ in rows]
        width = max(self.mask.shape[1], *lengths)
        prompts = [kv for _, kv, _, _ in rows]
        if self.grow_in_place and self._has_room(len(rows), width):
            cache = _written_in(self.cache, prompts, lengths, len(self.active), width)
            mask = _padded_mask(lengths, width, self.device)
        elif self.grow_in_place:
            cache = _joined(self.cache if self.active else None, prompts, lengths, width)
            mask = _padded_mask(lengths, width, self.device)
        else:
            cache, mask = _padded_batch(prompts, lengths, self.device, width=width)
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
        if self.active:
            mask = torch.cat([_left_pad_mask(self.mask, width), mask])
        self.cache, self.mask = cache, mask
        self.active += [i for i, _, _, _ in rows]
        self.positions = torch.cat(
            [self.positions, torch.tensor(lengths, dtype=torch.long, device=self.device)]
        )
        self.token = torch.cat(
            [self.token, torch.tensor([t for *_, t in rows], dtype=torch.long, device=self.device)]
        )

    def _has_room(self, joining: int, width: int) -> bool:
        """Whether `joining` rows fit into the free rows of the buffers that grow in place, padded
        to the batch's width as it is (`width`: no row is wider), so that a join writes only them."""
        if not self.active or width != self.mask.shape[1]:
            return False
        grows = _growing_layer_type()
        return all(
            isinstance(layer, grows) and layer.owns() and layer.free_rows() >= joining
            for layer in self.cache.layers
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
        self.mask, self.positions, self.token = self.mask[index], self.positions[index], self.token[index]
        self.active = [self.active[b] for b in keep]
        unseen = int((self.mask.sum(0) == 0).long().cumprod(0).sum())
        self.mask = self.mask[:, unseen:]
        layers = self.cache.layers
        if all(isinstance(layer, _growing_layer_type()) and layer.owns() for layer in layers):
            for layer in layers:
                layer.compact(keep, unseen)
            return
        self.cache.batch_select_indices(index)
        if unseen:
            for layer in layers:
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

        def owns(self) -> bool:
            """Whether keys and values are the first rows and columns of this layer's buffers."""
            k, v = self._kbuf, self._vbuf
            return (
                k is not None
                and v is not None
                and self.keys.data_ptr() == k.data_ptr()
                and self.values.data_ptr() == v.data_ptr()
                and self.keys.shape[0] <= k.shape[0]
                and self.keys.stride() == k.stride()
            )

        def free_rows(self) -> int:
            """Rows of the buffers past the batch's (left by rows that ended)."""
            return self._kbuf.shape[0] - self.keys.shape[0]

        def adopt(self, kbuf: torch.Tensor, vbuf: torch.Tensor, rows: int, width: int) -> None:
            """Take these buffers, of which the first `rows` rows and `width` columns are the cache."""
            self.dtype, self.device, self.is_initialized = kbuf.dtype, kbuf.device, True
            self._kbuf, self._vbuf = kbuf, vbuf
            self.keys, self.values = kbuf[:rows, :, :width], vbuf[:rows, :, :width]

        def compact(self, keep: list[int], unseen: int) -> None:
            """Keep rows `keep` (ascending) and cut the first `unseen` columns, moving them to the
            front of the same buffers: nothing is allocated but one row at a time."""
            n = self.keys.shape[-2]
            for buf in (self._kbuf, self._vbuf):
                for j, b in enumerate(keep):
                    if j == b and not unseen:
                        continue
                    row = buf[b, :, unseen:n]
                    buf[j, :, : n - unseen] = row.clone() if j == b else row
            self.keys, self.values = (
                self._kbuf[: len(keep), :, : n - unseen],
                self._vbuf[: len(keep), :, : n - unseen],
            )

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
            rows, n, add = self.keys.shape[0], self.keys.shape[-2], key_states.shape[-2]
            if not self.owns() or n + add > self._kbuf.shape[-2]:
                room = n + add + SPARE_COLUMNS
                # As many rows as before: rows that end leave places for the next to join into.
                places = max(rows, self._kbuf.shape[0] if self.owns() else 0)
                kbuf = self.keys.new_empty(places, self.keys.shape[1], room, self.keys.shape[-1])
                vbuf = self.values.new_empty(places, self.values.shape[1], room, self.values.shape[-1])
                kbuf[:rows, :, :n] = self.keys
                vbuf[:rows, :, :n] = self.values
                self._kbuf = self._vbuf = None  # the old buffers may go before the next are filled
                self.adopt(kbuf, vbuf, rows, n)
            self._kbuf[:rows, :, n : n + add] = key_states
            self._vbuf[:rows, :, n : n + add] = value_states
            self.keys, self.values = self._kbuf[:rows, :, : n + add], self._vbuf[:rows, :, : n + add]
            return self.keys, self.values

    return GrowingLayer


def _joined(
    old: Any, prompts: list[list[tuple[torch.Tensor, torch.Tensor]]], lengths: list[int], width: int
) -> Any:
    """One `DynamicCache` of growing layers: the old batch's rows (`old`, or None) then each
    prompt's keys and values, all left-padded to `width`, written into buffers allocated once with
    `SPARE_COLUMNS` of room (the padding zeroed: masked, but never NaN)."""
    from transformers import DynamicCache

    n_layers = len(prompts[0])
    cache = DynamicCache(ddp_cache_data=[(None, None)] * n_layers)
    grows = _growing_layer_type()
    old_rows = 0 if old is None else old.layers[0].keys.shape[0]
    for index, layer in enumerate(cache.layers):
        layer.__class__ = grows
        sample = prompts[0][index][0]
        shape = (old_rows + len(prompts), sample.shape[1], width + SPARE_COLUMNS, sample.shape[-1])
        bufs = [sample.new_empty(shape), sample.new_empty(shape)]
        for which, buf in enumerate(bufs):
            if old is not None:
                had = old.layers[index].keys if which == 0 else old.layers[index].values
                buf[:old_rows, :, : width - had.shape[-2]] = 0
                buf[:old_rows, :, width - had.shape[-2] : width] = had
            for j, (kv, n) in enumerate(zip(prompts, lengths, strict=True)):
                buf[old_rows + j, :, : width - n] = 0
                buf[old_rows + j, :, width - n : width] = kv[index][which][0]
        layer.adopt(bufs[0], bufs[1], old_rows + len(prompts), width)
    return cache


def _written_in(
    cache: Any,
    prompts: list[list[tuple[torch.Tensor, torch.Tensor]]],
    lengths: list[int],
    rows: int,
    width: int,
) -> Any:
    """`cache` with each prompt's keys and values written, left-padded to `width`, into the free
    rows after its first `rows` (`DecodeRows._has_room`): the rows already there are not copied."""
    for index, layer in enumerate(cache.layers):
        for which, buf in enumerate((layer._kbuf, layer._vbuf)):
            for j, (kv, n) in enumerate(zip(prompts, lengths, strict=True)):
                buf[rows + j, :, : width - n] = 0
                buf[rows + j, :, width - n : width] = kv[index][which][0]
        layer.adopt(layer._kbuf, layer._vbuf, rows + len(prompts), width)
    return cache


def _padded_mask(lengths: list[int], width: int, device: Any) -> torch.Tensor:
    """The attention mask of rows of these lengths left-padded to `width`."""
    mask = torch.zeros(len(lengths), width, dtype=torch.long, device=device)
    for i, n in enumerate(lengths):
        mask[i, width - n :] = 1
    return mask


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
    return DynamicCache(ddp_cache_data=layers), _padded_mask(lengths, width, device)


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
