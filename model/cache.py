"""Per-layer key/value cache written by the causal encoder and read (never written) by the canvas decoder.

Every layer keeps all its positions, sliding layers included, so the cache can be cut back to any length
(a prompt that shrinks when the user deletes text) and reused; readers ask for the tail they may see.
"""

from __future__ import annotations

import torch


class KVCache:
    def __init__(self, num_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers

    @property
    def length(self) -> int:
        """Number of encoded positions (the same for every layer once a forward has finished)."""
        k = self.keys[0]
        return 0 if k is None else k.shape[2]

    def read(self, layer: int, keep_last: int | None = None):
        k, v = self.keys[layer], self.values[layer]
        if k is None:
            return None, None
        if keep_last is not None:
            if keep_last <= 0:
                return None, None
            k, v = k[:, :, -keep_last:], v[:, :, -keep_last:]
        return k, v

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=2)
            self.values[layer] = torch.cat([self.values[layer], v], dim=2)

    def truncate(self, length: int) -> None:
        """Forget every position at or after `length`."""
        for i, k in enumerate(self.keys):
            if k is not None and k.shape[2] > length:
                self.keys[i] = k[:, :, :length]
                self.values[i] = self.values[i][:, :, :length]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values if t is not None)
