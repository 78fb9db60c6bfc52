"""A key/value cache of fixed capacity written in place: the shapes and addresses a CUDA graph needs.

Slot p holds position p. A causal pass writes its keys and values at its positions (index_copy_ along the
sequence axis); every pass attends over the whole buffer with a mask that lets it see only what it may: written
positions not after the query (and within the sliding window), or for the canvas decoder the positions before
`length` plus the whole canvas. Nothing depends on a host-side length inside a pass, so a pass captured once
replays for any prompt of that capacity: the prompt's length lives on the device (`filled`).

Reads cost the capacity, not the length: capacities come in buckets (`capacity_for`), so at most twice the keys
of the longest prompt of a bucket, which at the real model's sizes is small beside its weights.
"""

from __future__ import annotations

import torch

from .cache import KVCache, causal_mask
from .config import DiffusionGemmaConfig

MIN_CAPACITY = 256


def capacity_for(tokens: int) -> int:
    """The bucket that holds `tokens` positions (prompt and canvas): powers of two from MIN_CAPACITY."""
    capacity = MIN_CAPACITY
    while capacity < tokens:
        capacity *= 2
    return capacity


class StaticKVCache:
    """Keys and values [B, kv, capacity, D] per layer; `length` (host) and `filled` (device) positions written."""

    def __init__(
        self,
        config: DiffusionGemmaConfig,
        capacity: int,
        device: torch.device | str,
        dtype: torch.dtype,
        batch: int = 1,
    ):
        self.capacity = capacity
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        for i in range(config.num_hidden_layers):
            shape = config.layer_shape(i)
            size = (batch, shape.num_kv_heads, capacity, shape.head_dim)
            self.keys.append(torch.zeros(size, device=device, dtype=dtype))
            self.values.append(torch.zeros(size, device=device, dtype=dtype))
        self.slots = torch.arange(capacity, device=device)
        self.filled = torch.zeros((), dtype=torch.long, device=device)
        self._length = 0
        self._positions = self.slots[:0]
        self._masks: dict[int | None, torch.Tensor] = {}

    @property
    def length(self) -> int:
        return self._length

    def truncate(self, length: int) -> None:
        """Forget every position at or after `length` (the slots stay; the masks stop showing them)."""
        self._length = min(self._length, length)
        self.filled.fill_(self._length)

    def reset(self) -> None:
        self.truncate(0)

    def expanded(self, n: int) -> KVCache:
        """As KVCache.expanded: the written positions only, as a growing cache (batches of rows are not graphed)."""
        rows = KVCache(len(self.keys))
        rows.keys = [x[:, :, : self._length].expand(n, -1, -1, -1) for x in self.keys]
        rows.values = [x[:, :, : self._length].expand(n, -1, -1, -1) for x in self.values]
        return rows

    def adopt(self, rows: KVCache, length: int) -> None:
        """As KVCache.adopt, written into the buffers."""
        if length > self.capacity:
            raise ValueError(f"{length} positions do not fit a cache of {self.capacity}")
        for layer, (k, v) in enumerate(zip(rows.keys, rows.values, strict=True)):
            self.keys[layer][:, :, :length].copy_(k[:1, :, :length])
            self.values[layer][:, :, :length].copy_(v[:1, :, :length])
        self._length = length
        self.filled.fill_(length)

    def extend(self, kept: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """As KVCache.extend, written into the buffers after the positions held."""
        t = kept[0][0].shape[2]
        if self._length + t > self.capacity:
            raise ValueError(f"{self._length + t} positions do not fit a cache of {self.capacity}")
        for layer, (k, v) in enumerate(kept):
            self.keys[layer][:, :, self._length : self._length + t].copy_(k)
            self.values[layer][:, :, self._length : self._length + t].copy_(v)
        self._length += t
        self.filled.fill_(self._length)

    def snapshot(self) -> KVCache:
        """The written positions, copied out as a growing cache (a document's keys/values while another's are in)."""
        shot = KVCache(len(self.keys))
        shot.keys = [x[:, :, : self._length].clone() for x in self.keys]
        shot.values = [x[:, :, : self._length].clone() for x in self.values]
        return shot

    def load(self, shot: KVCache) -> None:
        """A snapshot (or any batch-1 growing cache) copied in: this cache then holds exactly its positions."""
        if shot.length:
            self.adopt(shot, shot.length)
        else:
            self.reset()

    def count(self, t: int) -> None:
        """`t` positions were written by a replayed graph (which moves `filled`, not the host's count)."""
        self._length += t

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    def begin(self, positions: torch.Tensor, causal: bool) -> None:
        """A pass over `positions` [1, T] (on the device) starts: one mask per window size for all its layers.
        A causal pass must continue the cache (positions length .. length + T - 1)."""
        self._positions = positions[0]
        self._causal = causal
        self._masks = {}
        t = positions.shape[-1]
        if causal:
            if self._length + t > self.capacity:
                raise ValueError(f"{self._length + t} positions do not fit a cache of {self.capacity}")
            self._length += t

    def _mask(self, window: int | None, t: int) -> torch.Tensor:
        if window not in self._masks:
            if self._causal:
                mask = causal_mask(self._positions, self.slots, window)
            else:  # the canvas sees the positions before it (the last window-1 of them) and all of itself
                seen = self.slots < self.filled
                if window is not None:
                    seen = seen & (self.slots >= self.filled - (window - 1))
                mask = torch.cat([seen[None, :].expand(t, -1), seen.new_ones(t, t)], dim=1)
            self._masks[window] = mask
        return self._masks[window]

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None):
        """As KVCache.attend, over the whole buffer with a mask."""
        t = k.shape[2]
        mask = self._mask(window, t)
        if causal:
            self.keys[layer].index_copy_(2, self._positions, k)
            self.values[layer].index_copy_(2, self._positions, v)
            if layer == len(self.keys) - 1:
                self.filled.copy_(self._positions[-1] + 1)  # on the device: a replayed pass moves it too
            return self.keys[layer], self.values[layer], mask
        return torch.cat([self.keys[layer], k], dim=2), torch.cat([self.values[layer], v], dim=2), mask
